"""Tables of the ingest stage: ``raw_logs`` (accepted events) and ``raw_rejects``."""

from __future__ import annotations

import polars as pl

from arena_assets.contracts import MESSAGE_TYPE

# raw_logs: one row per accepted event. Side b is null for chat events.
RAW_LOGS_SCHEMA = {
    "month": pl.String,  # "YYYY-MM", the partition
    "event_id": pl.String,
    "source_file": pl.String,  # path relative to the raw root
    "line_no": pl.Int64,  # 1-based line (or row) number in source_file
    "tstamp": pl.Datetime("us", "UTC"),
    "type": pl.String,  # one of EVENT_TYPES
    "anony": pl.Boolean,
    "user_hash": pl.String,  # salted hash of ip / user_id; the raw value is never stored
    # salted hashes of the optional identity fields (null when absent): the event's ip (also
    # when user_id names the user), its /24 (IPv4) or /48 (IPv6) network, its device_id;
    # the battle filter links accounts with them (battles/linking.py)
    "ip_hash": pl.String,
    "net_hash": pl.String,
    "device_hash": pl.String,
    "conv_id_a": pl.String,
    "model_a": pl.String,
    "messages_a": pl.List(MESSAGE_TYPE),
    "conv_id_b": pl.String,
    "model_b": pl.String,
    "messages_b": pl.List(MESSAGE_TYPE),
    "source_format": pl.String,  # native | clean_battle | conversation_dump | a release (releases.py)
    # a release's own per-battle fields, as published (JSON; null for native events):
    # LMArena's category_tag, and language / is_code / evaluation_order / conv_metadata ...
    "category_tag": pl.String,
    "release_tags": pl.String,
}

RAW_REJECTS_SCHEMA = {
    "month": pl.String,
    "source_file": pl.String,
    "line_no": pl.Int64,
    "reason": pl.String,  # a key of REJECT_REASONS
    "detail": pl.String,  # human-readable specifics (field name, offending value)
    "raw": pl.String,  # the line, decoded with replacement, scrubbed, then cut to REJECT_RAW_CHARS
    # salted hash of the line's user when an identity field could be read from its text
    # (null otherwise): what lets "forget a user" reach their rejected lines
    "user_hash": pl.String,
}
