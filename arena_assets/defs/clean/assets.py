"""Stage 2, clean: one cleaned row per conversation of the month (the `conversations` asset)."""

import dagster as dg

from arena_assets.clean.schema import REQUIRED_CONVERSATION_COLUMNS
from arena_assets.defs import checks
from arena_assets.defs.automation import follow_upstream
from arena_assets.defs.clean.resources import Moderation
from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage
from arena_assets.pipeline.clean import clean_month
from arena_assets.report import counts_table


@dg.asset(
    partitions_def=monthly_partitions,
    deps=["raw_logs"],
    group_name="clean",
    kinds={"parquet", "duckdb", "polars"},
    pool="clean",
    automation_condition=follow_upstream,
    check_specs=[
        dg.AssetCheckSpec(
            "snapshots_conserved",
            asset="conversations",
            blocking=True,
            description="Every conversation state in raw_logs is folded into "
            "exactly one conversation row.",
        ),
        dg.AssetCheckSpec(
            "no_raw_pii",
            asset="conversations",
            blocking=True,
            description="No e-mail, phone, IP, card or street-address pattern "
            "is left in any message.",
        ),
        dg.AssetCheckSpec(
            "required_columns_present",
            asset="conversations",
            blocking=True,
            description="Identity, model, time, user hash, messages, language "
            "and dedup key are never null.",
        ),
        checks.drift_spec("conversations"),
    ],
)
@one_line_failures
def conversations(context: dg.AssetExecutionContext, storage: ArenaStorage, moderation: Moderation):
    """Every chat of the month as its latest snapshot: OpenAI-style messages with image
    hashes, PII replaced by typed placeholders (`<EMAIL>`, `<PHONE>`, ...), language, token
    counts, moderation flags (when an endpoint is configured), a salted user hash and a
    dedup key of the first prompt. The VisionArena-Chat / LMSYS-Chat-1M style release."""
    (month,) = months_in_window(context)
    lake = storage.lake()
    moderator = moderation.client()
    stats = clean_month(lake, month, moderation=moderator, memory_limit=storage.duckdb_memory_limit)
    storage.publish("conversations", context.log)
    yield dg.MaterializeResult(
        metadata={
            **table_metadata(stats.preview, lake.url("conversations", month), stats.conversations),
            "month": month,
            "pii_replaced": dg.MetadataValue.md(
                counts_table(dict(stats.pii_replaced), "pii_type", "replaced")
            ),
            "languages": dg.MetadataValue.md(
                counts_table(dict(stats.languages.most_common(15)), "language", "conversations")
            ),
            "moderation": (
                "not configured" if moderator is None else f"{stats.moderation_flagged} flagged"
            ),
        }
    )
    yield checks.drift_result(
        "conversations", lake, month, stats.conversations, dict(stats.languages)
    )
    yield dg.AssetCheckResult(
        check_name="snapshots_conserved",
        passed=stats.snapshots_conserved,
        metadata={
            "states_in_raw_logs": stats.states_in,
            "states_folded": stats.states_folded,
            "conversations": stats.conversations,
        },
    )
    yield dg.AssetCheckResult(
        check_name="no_raw_pii",
        passed=stats.pii_left == 0,
        metadata={"conversations_with_pii_left": stats.pii_left},
    )
    yield dg.AssetCheckResult(
        check_name="required_columns_present",
        passed=stats.null_required == 0,
        metadata={
            "null_cells": stats.null_required,
            "columns": ", ".join(REQUIRED_CONVERSATION_COLUMNS),
        },
    )
