"""Previews safe to show in Dagster metadata (the UI, the event log, run storage).

Metadata is copied into the run and event storage, where no retention or forgetting
reaches it, so a preview must never carry message text or a raw identity. A safe preview
keeps the scalar columns only (messages are nested lists, dropped whole), never a raw
identity column, redacts every free-text cell with the cleaning stage's patterns and cuts
it short; ids, hashes and codes are left as they are.
"""

from __future__ import annotations

import polars as pl

from arena_assets.clean.pii import redact_expr

# columns that would hold a raw identity if a table ever carried one
IDENTITY_COLUMNS = frozenset({"ip", "user_id", "judge", "user", "ip_address"})
MAX_CELL_CHARS = 120
# string columns that are identifiers or codes, not free text (left unredacted: a hash or
# a model name is not personal data, and redaction patterns could mangle a hex hash)
_CODE_SUFFIXES = ("_hash", "_id", "_key")
_CODE_COLUMNS = frozenset(
    {
        "month",
        "type",
        "model",
        "model_a",
        "model_b",
        "winner",
        "reason",
        "source_file",
        "source_format",
        "language",
        "board",
    }
)


def _is_code(column: str) -> bool:
    return column in _CODE_COLUMNS or column.endswith(_CODE_SUFFIXES)


def safe_preview(frame: pl.DataFrame, rows: int = 5) -> pl.DataFrame:
    """The first ``rows`` rows, reduced to what metadata may show (see module doc)."""
    head = frame.head(rows)
    keep = [
        c
        for c, t in head.schema.items()
        if not isinstance(t, pl.List | pl.Struct | pl.Array | pl.Object)
        and c.lower() not in IDENTITY_COLUMNS
    ]
    head = head.select(keep)
    texts = [c for c, t in head.schema.items() if t == pl.String and not _is_code(c)]
    return head.with_columns(
        redact_expr(pl.col(c)).str.slice(0, MAX_CELL_CHARS).alias(c) for c in texts
    )
