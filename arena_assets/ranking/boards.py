"""Monthly arena boards from cumulative battles: overall, style-controlled, per category.

Pure logic over the ranking library; the leaderboards stage's month step
(``arena_assets.pipeline.leaderboards``) reads the battles and writes the frame this
returns (one row per board and model). Which models a board ranks is the library's call
(``identify.rankable``): every model left off a board is listed with its reason in
``info["left_out"]``.
"""

from __future__ import annotations

import zlib
from dataclasses import replace

import polars as pl

from arena_assets.ranking.cells import encode_battles
from arena_assets.ranking.leaderboard import TooFewModels, fit_bt, leaderboard_from_aggregated
from arena_assets.ranking.options import FitOptions, RankingInputError
from arena_assets.ranking.schema import BOARD_SCHEMA
from arena_assets.ranking.style import fit_style_controlled


def month_seed(seed: int, month: str) -> int:
    """A stable per-month seed, so a month's snapshot is reproducible on its own."""
    return (seed * 1_000_003 + zlib.crc32(month.encode())) % (2**31)


def _board(table: pl.DataFrame, month: str, board: str) -> pl.DataFrame:
    if "rank_change" not in table.columns:
        table = table.with_columns(rank_change=pl.lit(None, pl.Int64))
    return table.with_columns(month=pl.lit(month), board=pl.lit(board)).select(
        [pl.col(c).cast(t) for c, t in BOARD_SCHEMA.items()]
    )


def board_options(
    *,
    bootstrap_rounds: int = 200,
    level: float = 0.95,
    anchor: tuple[str, float] | None = None,
    min_battles: int = 300,
    seed: int = 0,
) -> FitOptions:
    """The fit options of the monthly boards (bootstrap intervals when rounds > 0)."""
    return FitOptions(anchor=anchor, ci="bootstrap" if bootstrap_rounds > 0 else "sandwich",
                      level=level, bootstrap_rounds=bootstrap_rounds, seed=seed,
                      min_battles=min_battles)


def arena_boards(
    battles: pl.DataFrame,
    *,
    month: str,
    options: FitOptions | None = None,
    min_category_battles: int = 1000,
) -> tuple[pl.DataFrame, dict]:
    """Boards as of ``month`` from ``battles`` (all months <= month, with ``keep``).

    ``options.seed`` is mixed with the month (``month_seed``). ``info`` holds the battles
    used per board (or why a board was skipped), the style coefficients, and
    ``left_out``: board -> {model: reason} for every model a board could not rank.
    """
    options = options or board_options()
    options = replace(options, seed=month_seed(options.seed, month))
    kept = battles.filter(pl.col("keep") & pl.col("winner").is_not_null())
    removed = battles.filter(~pl.col("keep"))["removed_reason"].value_counts()
    info: dict = {
        "battles_used": 0,
        "removed_by_reason": dict(removed.iter_rows()),
        "boards": {},
        "style_coefficients": pl.DataFrame(),
        "left_out": {},
    }
    frames = [pl.DataFrame(schema=BOARD_SCHEMA)]
    encoded = encode_battles(kept, options.tie_mode)  # once, for the plain and the styled fit
    # an early or small month may leave fewer than two models to rank: that board is
    # skipped (and said so in `boards`), the others are still published
    try:
        overall = leaderboard_from_aggregated(encoded.aggregate(), options)
    except TooFewModels as exc:
        info["boards"]["overall"] = f"skipped: {exc}"
        return pl.concat(frames), info
    frames.append(_board(overall.table, month, "overall"))
    info["battles_used"] = info["boards"]["overall"] = overall.meta["n_battles"]
    info["left_out"]["overall"] = overall.left_out
    styled = fit_style_controlled(kept, options, encoded=encoded)
    frames.append(_board(styled.table, month, "style_control"))
    info["boards"]["style_control"] = styled.meta["n_battles"]
    info["left_out"]["style_control"] = styled.left_out
    info["style_coefficients"] = styled.coefficients

    # per-category boards: languages now; topic categories join once topic labels exist
    by_language = kept.group_by("language").len().filter(pl.col("len") >= min_category_battles)
    for language in sorted(by_language["language"].drop_nulls().to_list()):
        name = f"language:{language}"
        try:
            board = fit_bt(kept.filter(pl.col("language") == language), options)
        except RankingInputError as exc:  # too few models, or the anchor is not among them
            info["boards"][name] = f"skipped: {exc}"
            continue
        frames.append(_board(board.table, month, name))
        info["boards"][name] = board.meta["n_battles"]
        info["left_out"][name] = board.left_out
    return pl.concat(frames), info
