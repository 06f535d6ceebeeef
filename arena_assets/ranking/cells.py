"""Battles -> model indices, outcomes and aggregated pair cells.

Everything after aggregation is small: with K models there are at most 3·K(K-1)/2
unordered cells (pair i<j, outcome ∈ {i wins, j wins, tie}). Folding (model_a, model_b)
and (model_b, model_a) into one unordered pair loses nothing for Bradley-Terry (the model
has no side advantage) and multinomial resampling of the folded cells has exactly the
distribution of resampling the ordered cells and folding afterwards.

Weights: a battle row may carry ``weight`` (the battle filter down-weights the votes of
accounts without history and of cohorts that deviate from the established voters; see
``arena_assets.battles.cohort``). The counts stay the votes as cast (what a board reports
as its battles); ``weighted`` holds the same cells summed by weight, and the fit reads
``fit_counts``: the weighted cells when there are any, else the counts themselves. A
table without a weight column, or with every weight 1, gives exactly the unweighted
numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from arena_assets.ranking.options import TIE_MODES, RankingInputError

# FastChat's winner vocabulary -> outcome code from model_a's side.
A_WINS, B_WINS, TIE, BOTHBAD = 0, 1, 2, 3
WINNER_CODES = {"model_a": A_WINS, "model_b": B_WINS, "tie": TIE, "tie (bothbad)": BOTHBAD}

# tie_mode -> which tie codes are kept (as half wins); the rest are dropped.
TIES_KEPT = {
    "half": (TIE, BOTHBAD),  # every tie is half a win for each side (LMArena default)
    "drop_bothbad": (TIE,),  # "both are bad" votes dropped, plain ties half wins
    "drop": (),  # decisive votes only
}
assert tuple(TIES_KEPT) == TIE_MODES


@dataclass(frozen=True)
class Aggregated:
    """Battles aggregated to unordered pairs i<j with outcome counts.

    ``counts[p] = (i wins, j wins, ties)`` for pair ``(left[p], right[p])``: votes as
    cast. ``weighted`` (float, same shape) is the same cells summed by the battles'
    weights, None when the battles carry no weight.
    """

    models: list[str]
    left: np.ndarray  # int64 (P,)
    right: np.ndarray  # int64 (P,)
    counts: np.ndarray  # int64 (P, 3)
    weighted: np.ndarray | None = None  # float64 (P, 3)

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

    @property
    def fit_counts(self) -> np.ndarray:
        """The cells the Bradley-Terry fit reads: weighted when the battles carry weights."""
        return self.counts if self.weighted is None else self.weighted

    def model_battles(self) -> np.ndarray:
        n = self.pair_battles
        k = self.n_models
        return np.bincount(self.left, n, k) + np.bincount(self.right, n, k)


@dataclass(frozen=True)
class BattleSet:
    """Battles encoded once, after the tie mode: model indices and outcome per battle.

    ``outcome`` uses A_WINS / B_WINS / TIE (bothbad folded into TIE); ``rows`` are the
    battles' positions in the source frame, so per-battle columns (style features) line up.
    ``models`` holds every name in the source, with or without kept battles.
    """

    models: list[str]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    rows: np.ndarray
    weight: np.ndarray | None = None  # float64 per battle, None: every battle counts 1

    def aggregate(self) -> Aggregated:
        return aggregate_codes(self.models, self.a, self.b, self.outcome, fit_weights=self.weight)

    def among(self, models: list[str]) -> BattleSet:
        """The battles between ``models`` only, re-indexed to that list."""
        index = np.full(len(self.models), -1)
        pos = {m: i for i, m in enumerate(self.models)}
        index[[pos[m] for m in models]] = np.arange(len(models))
        a, b = index[self.a], index[self.b]
        keep = (a >= 0) & (b >= 0)
        weight = None if self.weight is None else self.weight[keep]
        return BattleSet(
            list(models), a[keep], b[keep], self.outcome[keep], self.rows[keep], weight
        )


def _unknown_winners(battles: pl.DataFrame, codes: pl.Series) -> RankingInputError:
    bad = battles.filter(codes.is_null())
    shown = ", ".join(repr(v) for v in bad["winner"].unique(maintain_order=True).head(5))
    return RankingInputError(
        f"{bad.height} battle(s) with an unknown winner ({shown}); "
        "expected one of " + ", ".join(WINNER_CODES)
    )


def encode_battles(battles: pl.DataFrame, tie_mode: str = "half") -> BattleSet:
    """Encode ``model_a, model_b, winner`` once; drops self-battles and the ties that
    ``tie_mode`` drops. Models are the sorted union of names. A ``weight`` column (null:
    1) is carried for the fit."""
    if tie_mode not in TIES_KEPT:
        raise RankingInputError(f"tie_mode must be one of {TIE_MODES}, got {tie_mode!r}")
    models = sorted(
        set(battles["model_a"].drop_nulls().unique().to_list())
        | set(battles["model_b"].drop_nulls().unique().to_list())
    )
    enum = pl.Enum(models)
    # Enum's physical codes are the positions in `models`: a hash lookup, no sort of 1M strings.
    codes = battles.select(
        pl.col("model_a").cast(pl.String).cast(enum).to_physical().alias("a"),
        pl.col("model_b").cast(pl.String).cast(enum).to_physical().alias("b"),
        # unknown strings (and nulls) become null here and are reported below
        pl.col("winner")
        .cast(pl.String)
        .replace_strict(WINNER_CODES, default=None, return_dtype=pl.Int8)
        .alias("o"),
    )
    if codes["o"].null_count():
        raise _unknown_winners(battles, codes["o"])
    if codes["a"].null_count() or codes["b"].null_count():
        raise RankingInputError("battles with an empty model_a or model_b")
    a = codes["a"].to_numpy().astype(np.int64, copy=False)
    b = codes["b"].to_numpy().astype(np.int64, copy=False)
    o = codes["o"].to_numpy().astype(np.int64, copy=False)
    kept = ((o <= B_WINS) | np.isin(o, TIES_KEPT[tie_mode])) & (a != b)
    rows = np.flatnonzero(kept)
    weight = (
        battles["weight"].cast(pl.Float64).fill_null(1.0).to_numpy()[rows]
        if "weight" in battles.columns
        else None
    )
    if weight is not None and (weight == 1.0).all():
        weight = None  # every battle weighs 1: exactly the unweighted numbers
    return BattleSet(
        models, a[rows], b[rows], np.where(o[rows] == BOTHBAD, TIE, o[rows]), rows, weight
    )


def aggregate_codes(
    models: list[str],
    a: np.ndarray,
    b: np.ndarray,
    outcome: np.ndarray,
    weights: np.ndarray | None = None,
    fit_weights: np.ndarray | None = None,
) -> Aggregated:
    """Aggregate coded battles to unordered pair cells with np.bincount on a packed key;
    ``weights`` (battles per row) when the rows are already counted cells; ``fit_weights``
    (the rows' summed battle weights) gives the ``weighted`` cells."""
    k = len(models)
    swap = a > b
    lo = np.where(swap, b, a)
    hi = np.where(swap, a, b)
    # from the lower index's side: a win of model_a becomes a loss when the pair was swapped
    flipped = np.where(swap & (outcome != TIE), 1 - outcome, outcome)
    key = (lo * k + hi) * 3 + flipped
    cells = np.bincount(key, weights, minlength=3 * k * k).reshape(k * k, 3)
    if weights is not None:  # integer counts summed as floats: exact below 2**53
        cells = np.rint(cells).astype(np.int64)
    present = np.flatnonzero(cells.sum(axis=1))
    weighted = None
    if fit_weights is not None:
        summed = np.bincount(key, fit_weights, minlength=3 * k * k).reshape(k * k, 3)
        weighted = summed[present].astype(np.float64)
    return Aggregated(
        models=list(models),
        left=present // k,
        right=present % k,
        counts=cells[present].astype(np.int64),
        weighted=weighted,
    )


def aggregate(battles: pl.DataFrame, tie_mode: str = "half") -> Aggregated:
    """Aggregate a battle table (``model_a, model_b, winner``) to pair cells. Every model
    named in the table is listed, also one left without battles by the tie mode; which
    models a board can rank is ``arena_assets.ranking.identify.rankable``'s call."""
    return encode_battles(battles, tie_mode).aggregate()
