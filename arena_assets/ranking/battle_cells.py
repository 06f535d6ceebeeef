"""Battles counted per cell: what the cumulative boards read from earlier months.

A month of battles folds to one row per (keep, removed_reason, language, model_a, model_b,
winner) with the count ``n``. Bradley-Terry (overall and per-category boards) needs only
these counts, so a snapshot reads every earlier month's cells, never its rows: the work of
a refresh grows with the number of cells (models² × outcomes × languages), not with the
battles ever cast. Style control is the exception: its features are continuous per battle,
so it reads rows, only the columns it needs (``style_columns``).

A cell also sums its battles' ``weight`` (``w``; the battle filter down-weights some votes,
see ``arena_assets.battles.cohort``): the fit reads ``w``, the counts stay ``n``. A battles
table without weights gives ``w = n``, and cells whose ``w`` equals ``n`` everywhere fit
exactly as unweighted ones.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from arena_assets.ranking.cells import Aggregated, aggregate_codes, encode_battles
from arena_assets.ranking.options import FitOptions

CELL_KEYS = ("keep", "removed_reason", "language", "model_a", "model_b", "winner")
CELLS_SCHEMA = {
    "month": pl.String,
    "keep": pl.Boolean,
    "removed_reason": pl.String,
    "language": pl.String,
    "model_a": pl.String,
    "model_b": pl.String,
    "winner": pl.String,
    "n": pl.Int64,
    "w": pl.Float64,
}
# the battle row columns the cells read (``weight`` where the table has it)
CELL_COLUMNS = (*CELL_KEYS, "weight")


def battle_cells(battles: pl.DataFrame, month: str) -> pl.DataFrame:
    """One row per cell of ``battles`` with its count ``n``; sorted, so equal input gives
    equal bytes."""
    weight = (
        pl.col("weight").fill_null(1.0).cast(pl.Float64).sum()
        if "weight" in battles.columns
        else pl.len().cast(pl.Float64)
    )
    cells = (
        battles.group_by(list(CELL_KEYS))
        .agg(pl.len().alias("n"), weight.alias("w"))
        .with_columns(month=pl.lit(month))
    )
    cells = cells.select([pl.col(c).cast(t) for c, t in CELLS_SCHEMA.items()])
    return cells.sort(list(CELL_KEYS), nulls_last=True)


def rankable_cells(cells: pl.DataFrame) -> pl.DataFrame:
    """The cells a board counts: kept battles with a winner."""
    return cells.filter(pl.col("keep") & pl.col("winner").is_not_null())


def aggregate_cells(cells: pl.DataFrame, tie_mode: str = "half") -> Aggregated:
    """Pair cells of counted battles; equal to aggregating the rows the counts stand for.
    Cells whose summed weight ``w`` differs from ``n`` somewhere give weighted cells (cells
    from before weights were counted have no ``w``: every battle weighs 1)."""
    encoded = encode_battles(cells.drop("weight", strict=False), tie_mode)
    weights = cells["n"].to_numpy().astype(np.float64)[encoded.rows]
    fit_weights = None
    if "w" in cells.columns:
        summed = cells["w"].cast(pl.Float64).fill_null(cells["n"].cast(pl.Float64)).to_numpy()
        if not np.array_equal(summed, cells["n"].to_numpy().astype(np.float64)):
            fit_weights = summed[encoded.rows]
    return aggregate_codes(
        encoded.models, encoded.a, encoded.b, encoded.outcome, weights, fit_weights
    )


def removed_by_reason(cells: pl.DataFrame) -> dict:
    """Battles not kept, per removal reason."""
    removed = cells.filter(~pl.col("keep")).group_by("removed_reason").agg(pl.col("n").sum())
    return dict(removed.sort("n", "removed_reason", descending=[True, False]).iter_rows())


def style_columns(options: FitOptions) -> list[str]:
    """Row columns style control needs (the rest of a battle row is never read)."""
    return [
        "keep",
        "model_a",
        "model_b",
        "winner",
        *[f"{f}_{s}" for f in options.style_features for s in "ab"],
        "weight",  # where the battles carry it (read with the columns present)
    ]
