"""The platform's event format, shared by the simulator, ingest, cleaning and battles.

No Dagster here. This module says what a raw event looks like (event types, the vote ->
winner vocabulary, the message struct), which reasons a rejected line can carry and which
PII types redaction knows. Table schemas live with their stage (`<stage>/schema.py`).

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

    served event (optional; type "served"): a battle shown to the user that ended without a
    vote, the platform's impression log (real logs may not have it; nothing needs it)
      {"event_id": "e-…", "type": "served", "tstamp": …, "ip": …, "anony": true,
       "models": ["model-x", "model-y"]}  # the two models on screen, left then right

    Identity fields, optional on every event: "device_id" (a device or browser id where the
    platform sends one) and "ip" next to "user_id" (the address the account came from).
    Ingest keeps only salted hashes of them (raw_logs ip_hash, net_hash = the /24 or /48
    network, device_hash), which the battle filter uses to link accounts.

    STATE
      {"conv_id": "c-…", "model_name": "model-x", "offset": 0,
       "messages": [MESSAGE, …]}         # the whole conversation so far; re-logged as it grows

    MESSAGE (OpenAI style; FastChat's ["user", "text"] pairs are accepted too)
      {"role": "user" | "assistant" | "system", "content": "text",
       "images": ["<64 hex sha256>", …]}    # optional, user turns only

A model registry may sit beside the month folders at `<raw_root>/models.json`
(`[{"name": …, "vision": bool, "organization": …}, …]`); when present, a state whose
model is not listed is rejected as `unknown_model`. The leaderboard site also shows an
entry's optional `license`, `knowledge_cutoff`, `link` and `deprecated` (bool).
"""

from __future__ import annotations

import polars as pl

EVENT_TYPES = ("chat", "leftvote", "rightvote", "tievote", "bothbad_vote", "served")
VOTE_TYPES = ("leftvote", "rightvote", "tievote", "bothbad_vote")
SERVED_TYPE = "served"  # a battle served without a vote (optional in real logs)
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
# the reject reason of a line whose user was forgotten (``ingest/forgotten.py``): no text
# of it is kept, in raw_rejects as in completion_rejects
FORGOTTEN_USER = "forgotten_user"
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
    "missing_state": "chat event without 'state' / vote without two 'states' / served event without two 'models'",
    "missing_conv_id": "a state without 'conv_id'",
    "missing_model": "a state without 'model_name'",
    "unknown_model": "model not in the registry (models.json)",
    "same_model_battle": "both sides of a vote are the same model",
    "empty_messages": "a state with no messages",
    "bad_message": "a message is not {role, content} (detail says why)",
    "bad_role": "a message role outside system/user/assistant",
    "empty_content": "a user message with no visible text (empty, blank or zero-width characters only) and no image",
    "no_user_turn": "a conversation state without any user turn",
    "absurd_length": f"a message over {MAX_MESSAGE_CHARS} chars or over {MAX_MESSAGES} messages",
    "bad_image_ref": "an image reference that is not a 64-hex sha256",
    "unparseable_record": "an adapter record (clean_battle / conversation dump) missing required fields",
    "models_mismatch": "a vote's 'models' names disagree with its states' model names",
    "shared_conv_id": "both sides of a vote carry the same conv_id",
    "duplicate_key": "a JSON object repeats a key with different values",
    "truncated_file": "the rest of a file after a broken compressed stream (detail: byte offset)",
    FORGOTTEN_USER: "a line of a user on the forget list (no text kept: only file, line and user hash)",
}

MESSAGE_TYPE = pl.Struct({"role": pl.String, "content": pl.String, "images": pl.List(pl.String)})

# types redacted from message text (arena_assets.clean.pii); each has a pii_<type> count column
PII_TYPES = (
    "email",
    "phone",
    "ip_address",
    "card_number",
    "iban",
    "national_id",
    "street_address",
    "secret",
)

PII_PLACEHOLDERS = {t: f"<{t.upper()}>" for t in PII_TYPES}
