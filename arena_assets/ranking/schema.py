"""Tables of the leaderboards stage (one row per board x model, and the history)."""

from __future__ import annotations

import polars as pl

# arena_leaderboard: one row per (month, board, model)
BOARD_SCHEMA = {
    "month": pl.String,
    "board": pl.String,  # overall | style_control | language:<iso>
    "model": pl.String,
    "rating": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
    "rank": pl.Int64,
    "rank_ub": pl.Int64,
    "battles": pl.Int64,
    "ci_method": pl.String,
    "ci_level": pl.Float64,
    "rank_change": pl.Int64,  # style_control only: + = higher once style is controlled
}

# leaderboard_history: partition month x snapshot month x model (overall board)
HISTORY_SCHEMA = {
    "month": pl.String,  # the partition: history as of this month
    "snapshot_month": pl.String,
    "model": pl.String,
    "rating": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
    "rank": pl.Int64,
    "rank_ub": pl.Int64,
    "battles": pl.Int64,
}
