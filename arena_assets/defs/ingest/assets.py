"""Stage 1, ingest: the month's raw platform logs, parsed into typed events, and the rejects."""


from collections import Counter

import dagster as dg
import polars as pl

from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage, IngestSettings
from arena_assets.ingest import iter_parsed_files, load_model_registry
from arena_assets.report import counts_table
from arena_assets.schema import RAW_LOGS_SCHEMA, RAW_REJECTS_SCHEMA

RAW_LOGS_ARROW = pl.DataFrame(schema=RAW_LOGS_SCHEMA).to_arrow().schema


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
        )
    ],
    partitions_def=monthly_partitions,
    pool="ingest",
)
def raw_logs(
    context: dg.AssetExecutionContext, storage: ArenaStorage, ingest_settings: IngestSettings
):
    """Parse the month's files (JSONL, JSONL.gz, Parquet, FastChat/LMSYS releases)."""
    (month,) = months_in_window(context)
    lake = storage.lake()
    known_models = load_model_registry(storage.raw_root, storage.raw_storage_options())
    lines_read = 0
    files: set[str] = set()
    preview = pl.DataFrame(schema=RAW_LOGS_SCHEMA)
    reject_frames: list[pl.DataFrame] = []
    formats: Counter[str] = Counter()

    def accepted_batches():
        # Files are parsed one at a time and streamed into the Parquet writer, so a month of
        # a million conversations never sits in memory at once.
        nonlocal lines_read, preview
        for part in iter_parsed_files(
            storage.raw_root,
            month,
            salt=ingest_settings.user_salt,
            known_models=known_models,
            storage_options=storage.raw_storage_options(),
            workers=ingest_settings.workers,
        ):
            files.add(part.source_file)
            if preview.height == 0:
                preview = part.raw_logs.head(5)
            lines_read += part.lines_read
            reject_frames.append(part.rejects)
            formats.update(part.raw_logs["source_format"].to_list())
            yield part.raw_logs

    accepted = lake.write_batches("raw_logs", month, RAW_LOGS_ARROW, accepted_batches())
    rejects = (
        pl.concat(reject_frames) if reject_frames else pl.DataFrame(schema=RAW_REJECTS_SCHEMA)
    )
    lake.write("raw_rejects", month, rejects)
    storage.publish("raw_logs")
    storage.publish("raw_rejects")

    by_reason = dict(Counter(rejects["reason"].to_list()))
    if not files:
        context.log.warning(f"no raw files for {month} under {storage.raw_root}: empty partition")
    yield dg.MaterializeResult(
        asset_key="raw_logs",
        metadata={
            **table_metadata(preview, lake.url("raw_logs", month), accepted),
            "month": month,
            "source_files": len(files),
            "lines_read": lines_read,
            "lines_rejected": rejects.height,
            "events_by_format": dg.MetadataValue.json(dict(formats)),
        },
    )
    yield dg.MaterializeResult(
        asset_key="raw_rejects",
        metadata={
            **table_metadata(rejects, lake.url("raw_rejects", month)),
            "month": month,
            "rejects_by_reason": dg.MetadataValue.md(counts_table(by_reason)),
        },
    )
    yield dg.AssetCheckResult(
        check_name="lines_conserved",
        asset_key="raw_logs",
        passed=lines_read == accepted + rejects.height,
        metadata={"lines_read": lines_read, "accepted": accepted, "rejected": rejects.height},
    )
