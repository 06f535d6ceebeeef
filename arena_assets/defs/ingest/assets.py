"""Stage 1, ingest: the month's raw platform logs, parsed into typed events, and the rejects."""

import dagster as dg

from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.ingest.resources import IngestSettings
from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage
from arena_assets.ingest import load_model_registry
from arena_assets.ingest.forgotten import ForgetListSaltError
from arena_assets.ingest.shrink import ShrinkError
from arena_assets.pipeline.ingest import IngestStats, ingest_month
from arena_assets.privacy.retention import apply_retention, current_month
from arena_assets.report import counts_table


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "raw_logs",
            description=(
                "Every well-formed platform event of the month (chats and votes), typed: "
                "timestamp, event type, hashed user, and the one or two conversation states "
                "with their messages. One Parquet file per month; read by every later stage."
            ),
            group_name="ingest",
            kinds={"parquet", "duckdb", "polars"},
        ),
        dg.AssetSpec(
            "raw_rejects",
            description=(
                "Every raw line or record that could not be accepted, with its source file, "
                "line number, a reason code, details and the raw text (truncated). "
                "raw_logs + raw_rejects account for every line read."
            ),
            group_name="ingest",
            kinds={"parquet", "duckdb"},
        ),
    ],
    check_specs=[
        dg.AssetCheckSpec(
            "lines_conserved",
            asset="raw_logs",
            blocking=True,
            description="Lines read = events accepted + lines rejected: nothing vanished.",
        ),
        dg.AssetCheckSpec(
            "no_partial_files",
            asset="raw_logs",
            blocking=True,
            description="No compressed file broke mid-stream (a truncated gzip keeps its lines "
            "before the break); passes anyway when ARENA_ALLOW_PARTIAL_FILES=true.",
        ),
    ],
    partitions_def=monthly_partitions,
    pool="ingest",
    # both tables come from one pass over the files, so they are always written together;
    # subsetting is allowed only to answer a selection of one of them with a line naming
    # the other (Dagster's own error is a multi-asset traceback)
    can_subset=True,
)
@one_line_failures
def raw_logs(
    context: dg.AssetExecutionContext, storage: ArenaStorage, ingest_settings: IngestSettings
):
    """Parse the month's files (JSONL, JSONL.gz, Parquet, FastChat/LMSYS releases).

    A build smaller than the month in the lake (a raw file it was built from gone or cut
    short, or more than ARENA_SHRINK_MAX_FRACTION fewer accepted lines) fails before
    anything is written, unless ARENA_ALLOW_SHRINK=true or the run tag
    arena/allow_shrink=true allows it."""
    both = {dg.AssetKey("raw_logs"), dg.AssetKey("raw_rejects")}
    missing = both - set(context.selected_asset_keys)
    if missing:
        raise dg.Failure(
            description=(
                "raw_logs and raw_rejects are written together by one pass over the raw files: "
                f"add {', '.join(k.to_user_string() for k in sorted(missing))} to the selection"
            )
        )
    (month,) = months_in_window(context)
    lake = storage.lake()
    try:
        rule = ingest_settings.shrink_rule(context.run.tags)
    except ValueError as exc:
        raise dg.Failure(description=str(exc)) from None
    try:
        stats = ingest_month(
            lake,
            storage.raw_root,
            month,
            salt=ingest_settings.user_salt,
            known_models=load_model_registry(storage.raw_root, storage.raw_storage_options()),
            storage_options=storage.raw_storage_options(),
            workers=ingest_settings.workers,
            shrink=rule,
        )
    except ShrinkError as exc:  # nothing was written: the month and downstream stay
        raise dg.Failure(
            description=str(exc),
            metadata={"previous_build": dg.MetadataValue.json(exc.comparison.as_metadata())},
        ) from None
    except ForgetListSaltError as exc:  # one line, not a traceback: nothing was written
        raise dg.Failure(description=str(exc)) from exc
    storage.publish("raw_logs", context.log)
    storage.publish("raw_rejects", context.log)
    listing = stats.listing
    if not stats.files:
        context.log.warning(f"no raw files for {month}: {listing.describe()}; empty partition")
    elif listing.skipped:
        context.log.warning(f"{month}: {listing.describe()}")
    for message in stats.partial_files:
        context.log.warning(f"partial file: {message}")
    if stats.shrink_allowed_by:
        context.log.warning(
            f"raw_logs {month} replaced by a smaller build, allowed by "
            f"{stats.shrink_allowed_by}: {stats.comparison.losses(rule.max_fraction)}"
        )
    retention = apply_retention(
        lake, ingest_settings.raw_logs_retention_months, current_month(), protect=month
    )
    if retention.deleted.get("raw_logs"):
        context.log.info(
            f"retention ({retention.keep_months} months): deleted raw_logs of "
            + ", ".join(retention.deleted["raw_logs"])
        )
    yield dg.MaterializeResult(
        asset_key="raw_logs",
        metadata={
            **table_metadata(stats.preview, lake.url("raw_logs", month), stats.accepted),
            "month": month,
            "source_files": len(stats.files),
            "lines_read": stats.lines_read,
            "lines_rejected": stats.rejected,
            # lines of users on the forget list: rejected, no text kept
            "forgotten_lines": stats.forgotten_lines,
            "events_by_format": dg.MetadataValue.json(dict(stats.formats)),
            "raw_root_read": dg.MetadataValue.path(listing.root),
            "raw_month_folder": listing.describe(),
            "skipped_files": dg.MetadataValue.json(
                [{"file": name, "why": why} for name, why in listing.skipped]
            ),
            "retention_deleted_months": dg.MetadataValue.json(
                retention.deleted.get("raw_logs", [])
            ),
            **source_metadata(stats),
        },
    )
    yield dg.MaterializeResult(
        asset_key="raw_rejects",
        metadata={
            **table_metadata(stats.rejects, lake.url("raw_rejects", month)),
            "month": month,
            "rejects_by_reason": dg.MetadataValue.md(counts_table(stats.rejects_by_reason)),
        },
    )
    yield dg.AssetCheckResult(
        check_name="lines_conserved",
        asset_key="raw_logs",
        passed=stats.conserved,
        metadata={
            "lines_read": stats.lines_read,
            "accepted": stats.accepted,
            "rejected": stats.rejected,
            "forgotten_lines": stats.forgotten_lines,
        },
    )
    yield dg.AssetCheckResult(
        check_name="no_partial_files",
        asset_key="raw_logs",
        passed=not stats.partial_files or ingest_settings.partial_files_allowed,
        metadata={
            "partial_files": dg.MetadataValue.json(stats.partial_files),
            "allowed": ingest_settings.partial_files_allowed,
        },
    )


FILES_IN_METADATA = 100  # the manifest lists them all


def source_metadata(stats: IngestStats) -> dict:
    """What the month was built from (its manifest) and how it compares with the build the
    lake held before."""
    manifest, comparison = stats.manifest, stats.comparison
    return {
        "source_bytes": manifest.bytes,
        "source_manifest": dg.MetadataValue.path(stats.manifest_url),
        "source_file_list": dg.MetadataValue.json(
            [
                {"file": f.name, "bytes": f.size, "lines": f.lines, "sha256": f.sha256}
                for f in manifest.files[:FILES_IN_METADATA]
            ]
        ),
        "previous_build": dg.MetadataValue.json(comparison.as_metadata()),
        "compared_with_previous": comparison.compared,
        "shrink_allowed_by": stats.shrink_allowed_by or "-",
    }
