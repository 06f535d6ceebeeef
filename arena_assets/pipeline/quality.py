"""Data-quality figures for the asset checks (pure: polars in, numbers out).

Each function measures one thing a reader of a table relies on; the Dagster checks
(``arena_assets.defs.checks``) turn the figures into pass/fail with a severity.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

# The battle columns later stages rely on (the leaderboards, the release), with their types.
BATTLE_CONTRACT = {
    "battle_id": pl.String,
    "month": pl.String,
    "model_a": pl.String,
    "model_b": pl.String,
    "winner": pl.String,
    "language": pl.String,
    "voter_hash": pl.String,
    "removed_reason": pl.String,
    "keep": pl.Boolean,
    "weight": pl.Float64,
    "weight_reason": pl.String,
    **{
        f"{f}_{s}": pl.Int64
        for f in (
            "sum_assistant_tokens",
            "header_count",
            "ordered_list_count",
            "unordered_list_count",
            "list_count",
            "bold_count",
        )
        for s in "ab"
    },
}

# Interval sanity on the Elo scale: a 95 % interval wider than this says the board is built
# on too few battles to be read (real boards are tens of points wide).
MAX_INTERVAL_WIDTH = 400.0
# Month-over-month drift that deserves a look (WARN, never blocking): volume more than
# halved or more than doubled, or language shares moving by more than a quarter in total.
VOLUME_RATIO_BOUNDS = (0.5, 2.0)
MAX_LANGUAGE_SHIFT = 0.25


def schema_mismatches(frame: pl.DataFrame, expected: Mapping[str, pl.DataType]) -> list[str]:
    """Columns missing, or with another type than the table's contract says."""
    out = []
    for name, dtype in expected.items():
        if name not in frame.columns:
            out.append(f"{name}: missing")
        elif frame.schema[name] != dtype:
            out.append(f"{name}: {frame.schema[name]} (expected {dtype})")
    return out


def null_counts(frame: pl.DataFrame, columns: list[str]) -> dict[str, int]:
    """Nulls per column among ``columns`` (only columns that have some)."""
    present = [c for c in columns if c in frame.columns]
    counts = frame.select(pl.col(present).null_count()).row(0, named=True) if present else {}
    return {c: int(n) for c, n in counts.items() if n}


def duplicate_keys(frame: pl.DataFrame, keys: list[str]) -> int:
    """Rows beyond the first for each key (0 = the key is unique)."""
    if frame.height == 0:
        return 0
    return frame.height - frame.select(keys).unique().height


WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")


def battle_range_problems(battles: pl.DataFrame) -> dict[str, int]:
    """Rows with a winner outside the vocabulary, a negative style count, a model
    battling itself while kept, or a weight outside [0, 1] (or below 1 without a reason)."""
    counts = [
        c for c in battles.columns if c.endswith(("_a", "_b")) and battles.schema[c].is_integer()
    ]
    figures = battles.select(
        unknown_winner=(pl.col("winner").is_not_null() & ~pl.col("winner").is_in(WINNERS)).sum(),
        negative_style_count=pl.any_horizontal([pl.col(c) < 0 for c in counts]).sum()
        if counts
        else pl.lit(0),
        kept_self_battle=(pl.col("keep") & (pl.col("model_a") == pl.col("model_b"))).sum(),
        weight_out_of_range=(~pl.col("weight").is_between(0.0, 1.0)).sum()
        if "weight" in battles.columns
        else pl.lit(0),
        weight_without_reason=((pl.col("weight") < 1.0) & pl.col("weight_reason").is_null()).sum()
        if "weight_reason" in battles.columns
        else pl.lit(0),
    )
    return {k: int(v or 0) for k, v in figures.row(0, named=True).items()}


def board_range_problems(boards: pl.DataFrame) -> dict[str, int]:
    """Rows with a rank or rank bound below 1, or a model without battles on its board."""
    figures = boards.select(
        rank_below_1=((pl.col("rank") < 1) | (pl.col("rank_ub") < 1)).sum(),
        no_battles=(pl.col("battles") < 1).sum(),
    )
    return {k: int(v or 0) for k, v in figures.row(0, named=True).items()}


def interval_problems(
    boards: pl.DataFrame, max_width: float = MAX_INTERVAL_WIDTH
) -> dict[str, int]:
    """Rows whose interval is not finite, inverted, does not contain the rating, or is
    wider than ``max_width`` rating points."""
    width = pl.col("upper") - pl.col("lower")
    # polars orders NaN above every number: compare finite rows only
    finite = (
        pl.col("lower").is_finite() & pl.col("upper").is_finite() & pl.col("rating").is_finite()
    )
    figures = boards.select(
        not_finite=(~finite).sum(),
        inverted=(finite & (width < 0)).sum(),
        rating_outside=(
            finite & ((pl.col("rating") < pl.col("lower")) | (pl.col("rating") > pl.col("upper")))
        ).sum(),
        too_wide=(finite & (width > max_width)).sum(),
    )
    return {k: int(v or 0) for k, v in figures.row(0, named=True).items()}


def volume_ratio(this_month: int, previous_month: int | None) -> float | None:
    """This month's rows over the previous month's (None without a previous month)."""
    if not previous_month:
        return None
    return this_month / previous_month


def language_shift(this: Mapping[str, int], previous: Mapping[str, int]) -> float | None:
    """Total variation distance between two months' language shares (0 = same mix, 1 =
    disjoint); None when either month is empty."""
    a, b = sum(this.values()), sum(previous.values())
    if not a or not b:
        return None
    langs = set(this) | set(previous)
    return 0.5 * sum(abs(this.get(k, 0) / a - previous.get(k, 0) / b) for k in langs)


def drift_ok(ratio: float | None, shift: float | None) -> bool:
    low, high = VOLUME_RATIO_BOUNDS
    return (ratio is None or low <= ratio <= high) and (
        shift is None or shift <= MAX_LANGUAGE_SHIFT
    )


def missing_label_shares(labels: pl.DataFrame) -> dict[str, dict[str, float]]:
    """Per label group (every ``<group>_status`` column): conversations whose label call
    ``failed`` or whose answer was ``parse_failed``, and their share of the conversations
    the group asked about (``not_applicable`` rows are not asked). Counted per conversation,
    whatever the group's prompts look like, so it holds for any label set."""
    out = {}
    for column in (c for c in labels.columns if c.endswith("_status")):
        counts = dict(labels[column].value_counts().iter_rows())
        failed, unparsed = int(counts.get("failed", 0)), int(counts.get("parse_failed", 0))
        asked = labels.height - int(counts.get("not_applicable", 0))
        out[column.removesuffix("_status")] = {
            "failed": failed,
            "parse_failed": unparsed,
            "asked": asked,
            "share": (failed + unparsed) / asked if asked else 0.0,
        }
    return out
