"""Battles -> model indices, outcomes and aggregated cells.

Everything after aggregation is small: with K models there are at most 3·K(K-1)/2
unordered cells (pair i<j, outcome ∈ {i wins, j wins, tie}). Folding (model_a, model_b)
and (model_b, model_a) into one unordered pair loses nothing for Bradley-Terry (the model
has no side advantage) and multinomial resampling of the folded cells has exactly the
distribution of resampling the ordered cells and folding afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

# FastChat's winner vocabulary -> outcome code from model_a's side.
A_WINS, B_WINS, TIE, BOTHBAD = 0, 1, 2, 3
WINNER_CODES = {"model_a": A_WINS, "model_b": B_WINS, "tie": TIE, "tie (bothbad)": BOTHBAD}

# tie_mode -> which tie codes are kept (as half wins); the rest are dropped.
TIE_MODES = {
    "half": (TIE, BOTHBAD),  # every tie is half a win for each side (LMArena default)
    "drop_bothbad": (TIE,),  # "both are bad" votes dropped, plain ties half wins
    "drop": (),  # decisive votes only
}


@dataclass(frozen=True)
class Aggregated:
    """Battles aggregated to unordered pairs i<j with outcome counts.

    ``counts[p] = (i wins, j wins, ties)`` for pair ``(left[p], right[p])``.
    """

    models: list[str]
    left: np.ndarray  # int64 (P,)
    right: np.ndarray  # int64 (P,)
    counts: np.ndarray  # int64 (P, 3)

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_battles(self) -> int:
        return int(self.counts.sum())

    @property
    def pair_battles(self) -> np.ndarray:
        return self.counts.sum(axis=1)

    @property
    def pair_wins(self) -> np.ndarray:
        """Wins of ``left`` with ties counted as half a win (float)."""
        return self.counts[:, 0] + 0.5 * self.counts[:, 2]

    def model_battles(self) -> np.ndarray:
        n = self.pair_battles
        k = self.n_models
        return np.bincount(self.left, n, k) + np.bincount(self.right, n, k)


def encode_battles(
    battles: pl.DataFrame, tie_mode: str = "half", models: list[str] | None = None
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Model indices and outcome per battle: (models, a, b, outcome, kept_mask).

    ``outcome`` uses A_WINS/B_WINS/TIE (bothbad folded into TIE); ``kept_mask`` marks the
    battles that ``tie_mode`` keeps. ``models`` defaults to the sorted union of names.
    """
    if tie_mode not in TIE_MODES:
        raise ValueError(f"tie_mode must be one of {sorted(TIE_MODES)}, got {tie_mode!r}")
    if models is None:
        models = sorted(
            set(battles["model_a"].unique().to_list()) | set(battles["model_b"].unique().to_list())
        )
    enum = pl.Enum(models)
    # Enum's physical codes are the positions in `models`: a hash lookup, no sort of 1M strings.
    codes = battles.select(
        pl.col("model_a").cast(pl.String).cast(enum).to_physical().alias("a"),
        pl.col("model_b").cast(pl.String).cast(enum).to_physical().alias("b"),
        pl.col("winner").replace_strict(WINNER_CODES, return_dtype=pl.Int8).alias("o"),
    )
    a = codes["a"].to_numpy().astype(np.int64, copy=False)
    b = codes["b"].to_numpy().astype(np.int64, copy=False)
    o = codes["o"].to_numpy().astype(np.int64, copy=False)
    kept = (o <= B_WINS) | np.isin(o, TIE_MODES[tie_mode])
    kept &= a != b
    o = np.where(o == BOTHBAD, TIE, o)
    return models, a, b, o, kept


def aggregate_codes(
    models: list[str], a: np.ndarray, b: np.ndarray, outcome: np.ndarray
) -> Aggregated:
    """Aggregate coded battles to unordered pair cells with np.bincount on a packed key."""
    k = len(models)
    swap = a > b
    lo = np.where(swap, b, a)
    hi = np.where(swap, a, b)
    # from the lower index's side: a win of model_a becomes a loss when the pair was swapped
    flipped = np.where(swap & (outcome != TIE), 1 - outcome, outcome)
    key = (lo * k + hi) * 3 + flipped
    cells = np.bincount(key, minlength=3 * k * k).reshape(k * k, 3)
    present = np.flatnonzero(cells.sum(axis=1))
    return Aggregated(
        models=list(models),
        left=present // k,
        right=present % k,
        counts=cells[present].astype(np.int64),
    )


def aggregate(
    battles: pl.DataFrame,
    tie_mode: str = "half",
    min_battles: int = 0,
) -> Aggregated:
    """Aggregate a battle table (``model_a, model_b, winner``) to pair cells.

    Models with fewer than ``min_battles`` (kept) battles, or none, are dropped with their
    battles.
    """
    models, a, b, o, kept = encode_battles(battles, tie_mode)
    # models left without battles (all ties dropped, say) are removed as well
    return drop_rare_models(aggregate_codes(models, a[kept], b[kept], o[kept]), min_battles)


def drop_rare_models(agg: Aggregated, min_battles: int) -> Aggregated:
    """Drop models under ``min_battles`` until none is left under it (dropping one model
    removes battles of its opponents)."""
    while True:
        keep = agg.model_battles() >= max(min_battles, 1)
        if keep.all():
            return agg
        new_index = np.cumsum(keep) - 1
        rows = keep[agg.left] & keep[agg.right]
        agg = Aggregated(
            models=[m for m, k in zip(agg.models, keep) if k],
            left=new_index[agg.left[rows]],
            right=new_index[agg.right[rows]],
            counts=agg.counts[rows],
        )
