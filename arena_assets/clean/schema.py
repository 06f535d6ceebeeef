"""Tables of the cleaning stage: ``conversations`` and the latest-snapshot frame it is
built from."""

from __future__ import annotations

import polars as pl

from arena_assets.contracts import MESSAGE_TYPE, PII_TYPES

# conversations: one row per conversation id, its latest snapshot, cleaned.
CONVERSATIONS_SCHEMA = {
    "month": pl.String,
    "conv_id": pl.String,
    "model": pl.String,
    "tstamp": pl.Datetime("us", "UTC"),  # time of the latest snapshot
    "first_tstamp": pl.Datetime("us", "UTC"),
    "user_hash": pl.String,
    "anony": pl.Boolean,
    "snapshots": pl.Int32,  # how many events logged this conversation
    "turns": pl.Int32,  # user messages
    "messages": pl.List(MESSAGE_TYPE),  # PII replaced by <EMAIL>, <PHONE>, …
    "first_prompt": pl.String,  # redacted text of the first user message
    "n_images": pl.Int32,
    "prompt_tokens": pl.Int64,
    "response_tokens": pl.Int64,
    "language": pl.String,  # ISO 639-1 of the user text, "und" when undecidable
    "language_score": pl.Float32,
    **{f"pii_{t}": pl.Int32 for t in PII_TYPES},
    "moderation_flagged": pl.Boolean,  # null when no moderation endpoint is configured
    "moderation_categories": pl.String,  # JSON of flagged categories, null as above
    "dedup_key": pl.String,  # hash of the normalised first prompt
}

# what the latest-snapshot SQL (sql/latest_snapshots.sql) hands to the cleaning
SNAPSHOT_SCHEMA = {
    **{
        c: CONVERSATIONS_SCHEMA[c]
        for c in (
            "month",
            "conv_id",
            "model",
            "tstamp",
            "first_tstamp",
            "user_hash",
            "anony",
            "snapshots",
        )
    },
    "messages": pl.List(MESSAGE_TYPE),
}

# never null in a conversation row (checked by the `required_columns_present` check)
REQUIRED_CONVERSATION_COLUMNS = (
    "conv_id",
    "model",
    "tstamp",
    "user_hash",
    "messages",
    "language",
    "dedup_key",
)
