"""The raw-root sensor: a new month folder, or new or changed files in one, starts ingest.

Thin over ``arena_assets.ingest.watch`` (the cursor of per-month fingerprints). It
requests ``raw_logs`` (with ``raw_rejects``) for exactly the changed months; the
automation conditions on the later stages carry each new month down to the leaderboards.
"""

from __future__ import annotations

import dagster as dg

from arena_assets.defs.partitions import monthly_partitions
from arena_assets.defs.resources import ArenaStorage
from arena_assets.ingest.watch import changed_months, dumps_cursor, list_raw_root


def plan_ticks(
    previous_cursor: str | None, listing: dict, valid: set[str], already_ingested: set[str]
) -> tuple[list[str], dict, list[str], list[str]]:
    """(months to request, the new cursor, months without files, months adopted).

    Months outside the partition range never enter the cursor, so widening
    ARENA_PARTITIONS_END later still triggers them. On the very first tick (no cursor),
    months already ingested in this instance are adopted as they are, not re-run: turning
    the sensor on after `make demo` must not redo the demo.
    """
    changed, cursor, empty = changed_months(previous_cursor, listing)
    cursor["months"] = {m: fp for m, fp in cursor["months"].items() if m in valid}
    in_range = [m for m in changed if m in valid]
    adopted = sorted(set(in_range) & already_ingested) if not previous_cursor else []
    return [m for m in in_range if m not in adopted], cursor, empty, adopted


@dg.sensor(
    name="raw_root_sensor",
    target=dg.AssetSelection.assets("raw_logs", "raw_rejects"),
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Ingests a month when its folder under ARENA_RAW_ROOT appears or its files "
    "change (names, sizes, modification times or ETags).",
)
def raw_root_sensor(context: dg.SensorEvaluationContext, storage: ArenaStorage):
    listing = list_raw_root(storage.raw_root, storage.raw_storage_options())
    valid = set(monthly_partitions.get_partition_keys())
    ingested = (
        set(context.instance.get_materialized_partitions(dg.AssetKey("raw_logs")))
        if not context.cursor
        else set()
    )
    months, cursor, empty, adopted = plan_ticks(context.cursor, listing, valid, ingested)
    outside = sorted(m for m in listing if listing[m] and m not in valid)
    why = []
    if empty:
        why.append(f"no raw files in {', '.join(empty)}")
    if outside:
        why.append(f"outside the partition range: {', '.join(outside)}")
    if adopted:
        why.append(f"already ingested before the sensor's first tick: {', '.join(adopted)}")
    if not months:
        why.append("no new or changed raw files")
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(partition_key=m, run_key=f"{m}:{cursor['months'][m]}") for m in months
        ],
        skip_reason=None if months else "; ".join(why),
        cursor=dumps_cursor(cursor),
    )
