"""Tables of the completions stage: ``completion_battles``, ``completion_rejects`` and the
``copilot_leaderboard``."""

from __future__ import annotations

import polars as pl

from arena_assets.contracts import FORGOTTEN_USER

# completion_battles: one row per pair of completions shown side by side. Side a is the
# completion shown on top (pairIndex 0), b below; Tab accepts the top one, Shift-Tab the
# bottom one.
COMPLETION_BATTLES_SCHEMA = {
    "month": pl.String,
    # the top completion's completionId (Copilot Arena pairs its records by it); release
    # rows: "cr-" + a digest of the row
    "pair_id": pl.String,
    "tstamp": pl.Datetime("us", "UTC"),
    "user_hash": pl.String,  # salted hash of Copilot Arena's userId (never the id itself)
    "model_a": pl.String,  # the top completion's model
    "model_b": pl.String,
    # model_a / model_b: the top / bottom completion was accepted; "tie (bothbad)": the
    # pair was shown and neither was accepted (Copilot Arena's own convention)
    "winner": pl.String,
    "accepted": pl.Boolean,
    "file_type": pl.String,  # the editor's language id of the file (python, typescript, ...)
    "latency_a": pl.Float64,  # seconds the model took to answer
    "latency_b": pl.Float64,
    "prefix_length": pl.Int64,  # characters of code before / after the cursor sent to the models
    "suffix_length": pl.Int64,
    "prefix_lines": pl.Int32,  # lines before the cursor: where in the file the completion is
    "mid_span": pl.Boolean,  # the cursor sat inside a line (null when not logged)
    "completion_length_a": pl.Int64,
    "completion_length_b": pl.Int64,
    "privacy": pl.String,  # Research | Debug | Private (the user's setting)
    # code text: kept only where the release keeps it (privacy Research), secrets and PII
    # redacted; null otherwise
    "prefix": pl.String,
    "suffix": pl.String,
    "completion_a": pl.String,
    "completion_b": pl.String,
    "redactions": pl.Int32,  # PII / secret spans replaced in the kept text
    "secrets_redacted": pl.Int32,
    "records": pl.Int32,  # raw records merged into this pair (its two completions, its outcome)
    "source_file": pl.String,
    "source_format": pl.String,  # copilot_log | copilot_release
}

COMPLETION_REJECTS_SCHEMA = {
    "month": pl.String,
    "source_file": pl.String,
    "line_no": pl.Int64,
    "reason": pl.String,  # a key of COMPLETION_REJECT_REASONS
    "detail": pl.String,
    "raw": pl.String,  # the record, user ids blanked, PII and secrets redacted, cut to 2,000 chars
    "user_hash": pl.String,
}

COMPLETION_REJECT_REASONS = {
    "empty_line": "blank line",
    "invalid_utf8": "line is not valid UTF-8",
    "invalid_json": "line is not parseable JSON",
    "not_an_object": "JSON value is not an object",
    "unknown_layout": "a record that is neither a Copilot Arena record nor a release row",
    "missing_pair_id": "a completion without completionId or pairCompletionId (it cannot be paired)",
    "missing_accepted_index": "completionItems without acceptedIndex (a /create_pair response, not persisted)",
    "bad_items": "completionItems is not two completion objects, or a pair's records disagree (detail says why)",
    "unpaired_completion": "a completion whose partner completion is not in the month's files",
    "missing_model": "a completion without a model",
    "same_model_battle": "both completions come from the same model",
    "missing_user": "no userId",
    "missing_tstamp": "no timestamp on the completions",
    "bad_tstamp": "a timestamp that is not a time",
    "tstamp_outside_month": "the pair's time falls outside the partition's month",
    "bad_accepted_index": "acceptedIndex is not 0, 1 (or -1 / null: neither)",
    "wrong_type": "a field has the wrong type (detail names it)",
    "unknown_model": "a model that is not in models.json",
    "duplicate_pair": "an earlier record of the month is the same completion or outcome of the same pair",
    FORGOTTEN_USER: "a record of a user on the forget list (no text kept: only file, line and user hash)",
}

COPILOT_BOARD_SCHEMA = {
    "month": pl.String,
    "board": pl.String,  # overall | latency_controlled | file_type:<language>
    "model": pl.String,
    "rating": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
    "rank": pl.Int64,
    "rank_ub": pl.Int64,
    "battles": pl.Int64,
    # of the model's shown completions, the share accepted: server records only (the
    # release holds accepted pairs alone; its rows would push every rate towards 1)
    "acceptance_rate": pl.Float64,
    "median_latency": pl.Float64,  # the model's own seconds to answer
    # what users waited when the model was shown: both completions appear together, once
    # the slower one has arrived (the pair's maximum)
    "median_pair_latency": pl.Float64,
    "rating_unadjusted": pl.Float64,  # latency_controlled: the overall rating beside it
}

# copilot_user_boards: each user's board as Copilot Arena's get_scores computes it (its
# extension shows a user their own): every user's accepted pairs mixed with this user's
COPILOT_USER_BOARD_SCHEMA = {
    "month": pl.String,
    "user_hash": pl.String,  # salted hash of Copilot Arena's userId
    "model": pl.String,
    "rating": pl.Float64,
    "rank": pl.Int64,
    "votes": pl.Int64,  # the user's accepted pairs the model took part in
    "lam": pl.Float64,  # weight of every user's pairs; 1 - lam: this user's (chosen per user)
    "user_battles": pl.Int64,  # the user's accepted pairs of the rated models
}
