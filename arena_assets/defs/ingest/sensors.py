"""The raw-root sensor: a new month folder, or new or changed files in one, starts ingest.

Thin over ``arena_assets.ingest.watch`` (the plan of a tick) and the manifests of what each
month was built from (``arena_assets.ingest.manifest``). It requests ``raw_logs`` (with
``raw_rejects``) for exactly the months whose files differ from what they were built from;
the automation conditions on the later stages carry each month down to the leaderboards.
"""

from __future__ import annotations

import dagster as dg

from arena_assets.defs.partitions import monthly_partitions
from arena_assets.defs.resources import ArenaStorage
from arena_assets.ingest.manifest import built_fingerprints
from arena_assets.ingest.watch import dumps_cursor, list_raw_root, plan_ticks


@dg.sensor(
    name="raw_root_sensor",
    target=dg.AssetSelection.assets("raw_logs", "raw_rejects"),
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Ingests a month when its folder under ARENA_RAW_ROOT appears or its files "
    "differ from those it was built from (names, sizes, modification times or ETags).",
)
def raw_root_sensor(context: dg.SensorEvaluationContext, storage: ArenaStorage):
    listing = list_raw_root(storage.raw_root, storage.raw_storage_options())
    valid = set(monthly_partitions.get_partition_keys())
    built, unreadable = built_fingerprints(
        storage.lake(), sorted(m for m, files in listing.items() if files and m in valid)
    )
    ingested = (
        set(context.instance.get_materialized_partitions(dg.AssetKey("raw_logs")))
        if not context.cursor
        else set()
    )
    plan = plan_ticks(context.cursor, listing, valid, ingested, built)
    outside = sorted(m for m in listing if listing[m] and m not in valid)
    why = []
    if plan.empty:
        why.append(f"no raw files in {', '.join(plan.empty)}")
    if outside:
        why.append(f"outside the partition range: {', '.join(outside)}")
    if plan.adopted:
        why.append(
            "already ingested before the sensor's first tick (no manifest to compare "
            f"with): {', '.join(plan.adopted)}"
        )
    if plan.pending:
        why.append(
            "files differ from what the month was built from, requested on an earlier tick "
            f"(see that run): {', '.join(plan.pending)}"
        )
    for line in unreadable:
        context.log.warning(f"{line}; compared with the sensor's cursor instead")
    if not plan.requested:
        why.append("no new or changed raw files")
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(partition_key=m, run_key=f"{m}:{plan.cursor['months'][m]}")
            for m in plan.requested
        ],
        skip_reason=None if plan.requested else "; ".join(why),
        cursor=dumps_cursor(plan.cursor),
    )
