"""The pairwise figures LMArena shows under its boards, from a board's counted battles.

FastChat (``fastchat/serve/monitor/elo_analysis.py``) computes them on the board's battles
without ties: the fraction of the non-tied battles between A and B that A won (its
win-fraction heatmap), the number of non-tied battles per pair (its battle-count heatmap)
and each model's mean of that fraction over the opponents it met (its "average win rate
against all other models, assuming uniform sampling and no ties"). Here they come from the
board's ``Aggregated`` cells (unordered pairs with wins, losses and ties), so the site
never re-reads battle rows; the head-to-heads add ties as half wins beside the
Bradley-Terry prediction.

Where we depart from FastChat's code: it adds two pivot tables (A's wins as model A, B's
wins as model B transposed) that pandas aligns on the union of their labels, so a cell is
NaN wherever the row model never won in one of the two positions (or the column model never
lost in one), even when the pair had non-tied battles; its average win rate then skips those
cells. Here every pair with a non-tied battle has its fraction, as the figure's caption
says. Equal on the pairs whose models won and lost in both positions; on the real battle
files FastChat's matrix has NaNs in the rows of 10 of 29 models (2023 hard-English file)
and of all 48 (the sparse 2024 sample): ``test_site_inputs.py`` carries its expression.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl

from arena_assets.ranking.cells import Aggregated


@dataclass(frozen=True)
class PairCounts:
    """Square matrices over ``models``: ``wins[i, j]`` battles i won against j (decisive),
    ``ties[i, j]`` (= ``ties[j, i]``) tied battles between them."""

    models: list[str]
    wins: np.ndarray
    ties: np.ndarray

    @classmethod
    def of(cls, agg: Aggregated) -> PairCounts:
        k = agg.n_models
        wins = np.zeros((k, k), dtype=np.int64)
        ties = np.zeros((k, k), dtype=np.int64)
        np.add.at(wins, (agg.left, agg.right), agg.counts[:, 0])
        np.add.at(wins, (agg.right, agg.left), agg.counts[:, 1])
        np.add.at(ties, (agg.left, agg.right), agg.counts[:, 2])
        return cls(list(agg.models), wins, ties + ties.T)

    def index(self, models: list[str]) -> np.ndarray:
        where = {m: i for i, m in enumerate(self.models)}
        return np.array([where[m] for m in models], dtype=np.int64)

    @property
    def decisive(self) -> np.ndarray:
        """Non-tied battles per pair (FastChat's battle-count heatmap)."""
        return self.wins + self.wins.T

    @cached_property
    def per_model(self) -> np.ndarray:
        """Every battle per model, ties included."""
        return (self.decisive + self.ties).sum(axis=1)

    def battles(self) -> np.ndarray:
        return self.per_model


def win_fraction(pairs: PairCounts, order: list[str] | None = None) -> np.ndarray:
    """[i, j] = share of the non-tied battles between i and j that i won; NaN where they
    never had one (and on the diagonal)."""
    n = pairs.decisive.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(n > 0, pairs.wins / n, np.nan)
    if order is not None:
        idx = pairs.index(order)
        frac = frac[np.ix_(idx, idx)]
    return frac


def decisive_counts(pairs: PairCounts, order: list[str]) -> np.ndarray:
    idx = pairs.index(order)
    return pairs.decisive[np.ix_(idx, idx)]


def average_win_rate(pairs: PairCounts) -> dict[str, float]:
    """Each model's mean win fraction over the opponents it had a non-tied battle with
    (NaN for a model with none), as FastChat's bar chart averages its heatmap's rows."""
    frac = win_fraction(pairs)
    met = ~np.isnan(frac)
    sums = np.where(met, frac, 0.0).sum(axis=1)
    counts = met.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return dict(zip(pairs.models, mean.tolist()))


def predicted_win_rate(
    rating_a: float, rating_b: float, scale: float = 400.0, base: float = 10.0
) -> float:
    """Bradley-Terry's chance that A beats B (a tie counting half), on the Elo scale."""
    return 1.0 / (1.0 + base ** ((rating_b - rating_a) / scale))


def head_to_heads(pairs: PairCounts, model: str, ratings: dict[str, float]) -> pl.DataFrame:
    """One row per opponent ``model`` met on the board: battles, wins / ties / losses, the
    empirical win rate (ties half) and the rate the ratings predict (null where either
    model is unrated)."""
    if model not in pairs.models:
        return pl.DataFrame(schema=HEAD_TO_HEAD_SCHEMA)
    i = pairs.models.index(model)
    rows = []
    for j, other in enumerate(pairs.models):
        w, l_, t = int(pairs.wins[i, j]), int(pairs.wins[j, i]), int(pairs.ties[i, j])
        n = w + l_ + t
        if j == i or n == 0:
            continue
        predicted = (
            predicted_win_rate(ratings[model], ratings[other])
            if model in ratings and other in ratings
            else None
        )
        rows.append((other, n, w, t, l_, (w + 0.5 * t) / n, predicted))
    frame = pl.DataFrame(rows, schema=HEAD_TO_HEAD_SCHEMA, orient="row")
    return frame.sort(["battles", "opponent"], descending=[True, False])


HEAD_TO_HEAD_SCHEMA = {
    "opponent": pl.String,
    "battles": pl.Int64,
    "wins": pl.Int64,
    "ties": pl.Int64,
    "losses": pl.Int64,
    "empirical": pl.Float64,
    "predicted": pl.Float64,
}
