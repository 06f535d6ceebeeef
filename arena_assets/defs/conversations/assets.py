"""Stage 2, conversations: one cleaned row per conversation of the month."""


from collections import Counter

import dagster as dg
import polars as pl

from arena_assets.clean import FastTextLid, clean_conversations, contains_pii
from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage, Moderation
from arena_assets.report import counts_table
from arena_assets.schema import CONVERSATIONS_SCHEMA, PII_TYPES
from arena_assets.snapshots import iter_latest_snapshots

CONVERSATIONS_ARROW = pl.DataFrame(schema=CONVERSATIONS_SCHEMA).to_arrow().schema
REQUIRED = ("conv_id", "model", "tstamp", "user_hash", "messages", "language", "dedup_key")


@dg.asset(
    partitions_def=monthly_partitions,
    deps=["raw_logs"],
    group_name="clean",
    kinds={"parquet", "duckdb", "polars"},
    pool="clean",
    check_specs=[
        dg.AssetCheckSpec("snapshots_conserved", asset="conversations", blocking=True,
                          description="Every conversation state in raw_logs is folded into "
                                      "exactly one conversation row."),
        dg.AssetCheckSpec("no_raw_pii", asset="conversations", blocking=True,
                          description="No e-mail, phone, IP, card or street-address pattern "
                                      "is left in any message."),
        dg.AssetCheckSpec("required_columns_present", asset="conversations", blocking=True,
                          description="Identity, model, time, user hash, messages, language "
                                      "and dedup key are never null."),
    ],
)
def conversations(
    context: dg.AssetExecutionContext, storage: ArenaStorage, moderation: Moderation
):
    """Every chat of the month as its latest snapshot: OpenAI-style messages with image
    hashes, PII replaced by typed placeholders (<EMAIL>, <PHONE>, ...), language, token
    counts, moderation flags (when an endpoint is configured), a salted user hash and a
    dedup key of the first prompt. The VisionArena-Chat / LMSYS-Chat-1M style release."""
    (month,) = months_in_window(context)
    lake = storage.lake()
    moderator = moderation.client()
    detector = FastTextLid()
    stats: Counter[str] = Counter()
    languages: Counter[str] = Counter()
    preview: list[pl.DataFrame] = []

    def cleaned_batches():
        for snapshots in iter_latest_snapshots(
            lake, month, memory_limit=storage.duckdb_memory_limit
        ):
            frame = clean_conversations(snapshots, language_detector=detector, moderation=moderator)
            stats["snapshots"] += int(frame["snapshots"].sum())
            stats["null_required"] += sum(frame[c].null_count() for c in REQUIRED)
            stats["pii_left"] += frame.select(
                contains_pii(pl.col("messages").list.eval(pl.element().struct.field("content"))
                             .list.join("\n")).sum()).item()
            for pii in PII_TYPES:
                stats[f"pii_{pii}"] += int(frame[f"pii_{pii}"].sum())
            stats["flagged"] += int(frame["moderation_flagged"].sum() or 0)
            languages.update(frame["language"].to_list())
            if not preview:
                preview.append(frame.head(5))
            yield frame

    rows = lake.write_batches("conversations", month, CONVERSATIONS_ARROW, cleaned_batches())
    storage.publish("conversations")
    states_in = lake.read("raw_logs", month, columns=["conv_id_b"]).select(
        pl.len() + pl.col("conv_id_b").count()).item()

    yield dg.MaterializeResult(
        metadata={
            **table_metadata(preview[0] if preview else pl.DataFrame(schema=CONVERSATIONS_SCHEMA),
                             lake.url("conversations", month), rows),
            "month": month,
            "pii_redacted": dg.MetadataValue.md(
                counts_table({p: stats[f"pii_{p}"] for p in PII_TYPES}, "pii_type", "replaced")),
            "languages": dg.MetadataValue.md(
                counts_table(dict(languages.most_common(15)), "language", "conversations")),
            "moderation": "not configured" if moderator is None else f"{stats['flagged']} flagged",
        }
    )
    yield dg.AssetCheckResult(
        check_name="snapshots_conserved", passed=stats["snapshots"] == states_in,
        metadata={"states_in_raw_logs": states_in, "states_folded": stats["snapshots"],
                  "conversations": rows})
    yield dg.AssetCheckResult(
        check_name="no_raw_pii", passed=stats["pii_left"] == 0,
        metadata={"conversations_with_pii_left": stats["pii_left"]})
    yield dg.AssetCheckResult(
        check_name="required_columns_present", passed=stats["null_required"] == 0,
        metadata={"null_cells": stats["null_required"], "columns": ", ".join(REQUIRED)})
