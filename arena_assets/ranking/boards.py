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

from arena_assets.ranking.battle_cells import (
    aggregate_cells,
    battle_cells,
    rankable_cells,
    removed_by_reason,
    style_columns,
)
from arena_assets.ranking.leaderboard import TooFewModels, leaderboard_from_aggregated
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
    """Boards as of ``month`` from ``battles`` (all months <= month, with ``keep``): the
    battles are counted into cells (``battle_cells``) and passed to ``boards_from_cells``."""
    options = options or board_options()
    style_rows = battles.select(style_columns(options))
    return boards_from_cells(battle_cells(battles, month), style_rows, month=month,
                             options=options, min_category_battles=min_category_battles)


def boards_from_cells(
    cells: pl.DataFrame,
    style_rows: pl.DataFrame,
    *,
    month: str,
    options: FitOptions | None = None,
    min_category_battles: int = 1000,
) -> tuple[pl.DataFrame, dict]:
    """Boards as of ``month`` from the counted ``cells`` of every month <= month
    (``battle_cells``) and, for style control only, the battle rows' ``style_columns``.

    ``options.seed`` is mixed with the month (``month_seed``). ``info`` holds the battles
    used per board (or why a board was skipped), the style coefficients, and
    ``left_out``: board -> {model: reason} for every model a board could not rank.
    """
    options = options or board_options()
    options = replace(options, seed=month_seed(options.seed, month))
    kept = rankable_cells(cells)
    info: dict = {
        "battles_used": 0,
        "removed_by_reason": removed_by_reason(cells),
        "boards": {},
        "style_coefficients": pl.DataFrame(),
        "left_out": {},
    }
    frames = [pl.DataFrame(schema=BOARD_SCHEMA)]
    # an early or small month may leave fewer than two models to rank: that board is
    # skipped (and said so in `boards`), the others are still published
    try:
        overall = leaderboard_from_aggregated(aggregate_cells(kept, options.tie_mode), options)
    except TooFewModels as exc:
        info["boards"]["overall"] = f"skipped: {exc}"
        return pl.concat(frames), info
    frames.append(_board(overall.table, month, "overall"))
    info["battles_used"] = info["boards"]["overall"] = overall.meta["n_battles"]
    info["left_out"]["overall"] = overall.left_out
    styled_input = style_rows.filter(pl.col("keep") & pl.col("winner").is_not_null())
    styled = fit_style_controlled(styled_input, options)
    frames.append(_board(styled.table, month, "style_control"))
    info["boards"]["style_control"] = styled.meta["n_battles"]
    info["left_out"]["style_control"] = styled.left_out
    info["style_coefficients"] = styled.coefficients

    # per-category boards: languages now; topic categories join once topic labels exist
    by_language = (kept.group_by("language").agg(pl.col("n").sum())
                   .filter(pl.col("n") >= min_category_battles))
    for language in sorted(by_language["language"].drop_nulls().to_list()):
        name = f"language:{language}"
        try:
            board = leaderboard_from_aggregated(
                aggregate_cells(kept.filter(pl.col("language") == language), options.tie_mode),
                options)
        except RankingInputError as exc:  # too few models, or the anchor is not among them
            info["boards"][name] = f"skipped: {exc}"
            continue
        frames.append(_board(board.table, month, name))
        info["boards"][name] = board.meta["n_battles"]
        info["left_out"][name] = board.left_out
    return pl.concat(frames), info
