"""Contracts shared by the simulator, the ingest parser, the cleaner and the assets.

No Dagster here: this module is the single place that says what a raw event looks like,
what a typed row of each table holds, and which reasons a rejected line can carry.

Native event format (one JSON object per line, JSONL or JSONL.gz, or one row per event in
Parquet with the same field names; nested fields as JSON strings or structs):

    chat event
      {"event_id": "e-…", "type": "chat", "tstamp": 1714567890.25,
       "ip": "203.0.113.7"            # or "user_id": "u-…"; one of the two is required
       "anony": true,                 # optional, default false
       "state": STATE}

    vote event (type one of leftvote / rightvote / tievote / bothbad_vote)
      {"event_id": "e-…", "type": "leftvote", "tstamp": …, "ip": …,
       "anony": true,
       "models": ["model-x", "model-y"],   # names as shown to the voter ("" when anonymous)
       "states": [STATE_A, STATE_B]}       # left = model_a, right = model_b

    STATE
      {"conv_id": "c-…", "model_name": "model-x", "offset": 0,
       "messages": [MESSAGE, …]}         # the whole conversation so far; re-logged as it grows

    MESSAGE (OpenAI style; FastChat's ["user", "text"] pairs are accepted too)
      {"role": "user" | "assistant" | "system", "content": "text",
       "images": ["<64 hex sha256>", …]}    # optional, user turns only

A model registry may sit beside the month folders at `<raw_root>/models.json`
(`[{"name": …, "vision": bool, "organization": …}, …]`); when present, a state whose
model is not listed is rejected as `unknown_model`.
"""

from __future__ import annotations

import polars as pl

EVENT_TYPES = ("chat", "leftvote", "rightvote", "tievote", "bothbad_vote")
VOTE_TYPES = EVENT_TYPES[1:]
# vote type -> battle winner, FastChat's vocabulary
WINNER_OF_VOTE = {
    "leftvote": "model_a",
    "rightvote": "model_b",
    "tievote": "tie",
    "bothbad_vote": "tie (bothbad)",
}
ROLES = ("system", "user", "assistant")

# Limits that make a line "absurd" rather than merely long.
MAX_LINE_BYTES = 1_000_000
MAX_MESSAGE_CHARS = 100_000
MAX_MESSAGES = 200
# Raw text kept in raw_rejects (characters).
REJECT_RAW_CHARS = 2_000

# Every reason a raw line can be rejected with. Tests assert each planted kind maps here.
REJECT_REASONS = {
    "empty_line": "blank line",
    "invalid_utf8": "line is not valid UTF-8",
    "line_too_long": f"line longer than {MAX_LINE_BYTES} bytes",
    "invalid_json": "line is not parseable JSON",
    "not_an_object": "JSON value is not an object",
    "missing_type": "no 'type' field",
    "unknown_type": "'type' is not one of " + ", ".join(EVENT_TYPES),
    "missing_tstamp": "no 'tstamp' field",
    "bad_tstamp": "'tstamp' is not a finite number / ISO time, or is out of range",
    "tstamp_outside_month": "'tstamp' falls outside the partition's month",
    "missing_event_id": "no 'event_id' field",
    "duplicate_event_id": "an earlier line of the month has the same event_id",
    "missing_user": "neither 'ip' nor 'user_id' present",
    "wrong_type": "a field has the wrong JSON type (detail names it)",
    "missing_state": "chat event without 'state' / vote without two 'states'",
    "missing_conv_id": "a state without 'conv_id'",
    "missing_model": "a state without 'model_name'",
    "unknown_model": "model not in the registry (models.json)",
    "same_model_battle": "both sides of a vote are the same model",
    "empty_messages": "a state with no messages",
    "bad_message": "a message is not {role, content} (detail says why)",
    "bad_role": "a message role outside system/user/assistant",
    "empty_content": "a user message with empty text and no image",
    "absurd_length": f"a message over {MAX_MESSAGE_CHARS} chars or over {MAX_MESSAGES} messages",
    "bad_image_ref": "an image reference that is not a 64-hex sha256",
    "unparseable_record": "an adapter record (clean_battle / conversation dump) missing required fields",
}

MESSAGE_TYPE = pl.Struct(
    {"role": pl.String, "content": pl.String, "images": pl.List(pl.String)}
)

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
    "conv_id_a": pl.String,
    "model_a": pl.String,
    "messages_a": pl.List(MESSAGE_TYPE),
    "conv_id_b": pl.String,
    "model_b": pl.String,
    "messages_b": pl.List(MESSAGE_TYPE),
    "source_format": pl.String,  # native | clean_battle | conversation_dump
}

RAW_REJECTS_SCHEMA = {
    "month": pl.String,
    "source_file": pl.String,
    "line_no": pl.Int64,
    "reason": pl.String,  # a key of REJECT_REASONS
    "detail": pl.String,  # human-readable specifics (field name, offending value)
    "raw": pl.String,  # the line, decoded with replacement, truncated to REJECT_RAW_CHARS
}

# types redacted from message text (arena_assets.clean.pii); each has a pii_<type> count column
PII_TYPES = ("email", "phone", "ip_address", "card_number", "iban", "national_id",
             "street_address", "secret")

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

PII_PLACEHOLDERS = {t: f"<{t.upper()}>" for t in PII_TYPES}
