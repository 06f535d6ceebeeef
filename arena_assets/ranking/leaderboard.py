"""Bradley-Terry leaderboard: ratings, sandwich / bootstrap intervals, rank bounds, win rates."""

from __future__ import annotations

import math
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl
from scipy.special import expit, ndtri

from arena_assets.ranking.cells import Aggregated, encode_battles
from arena_assets.ranking.identify import beat_or_tied_graph, main_component, rankable
from arena_assets.ranking.newton import fit_batch, fit_pairs, sandwich_cov, single_threaded_blas
from arena_assets.ranking.options import FitOptions, RankingInputError

# Rounds per independently seeded chunk: fixed so that the bytes do not depend on threads.
BOOTSTRAP_CHUNK = 50


@dataclass(frozen=True)
class RatingScale:
    """rating = scale/ln(base)·β + offset, offset set by the mean or by an anchor model."""

    scale: float = 400.0
    base: float = 10.0
    init_rating: float = 1000.0
    anchor: tuple[str, float] | None = None

    @classmethod
    def of(cls, options: FitOptions) -> RatingScale:
        return cls(options.scale, options.base, options.init_rating, options.anchor)

    @property
    def factor(self) -> float:
        return self.scale / math.log(self.base)

    def contrast(self, models: list[str]) -> np.ndarray:
        """K×K matrix C with ratings = factor·(C @ β) + constant."""
        k = len(models)
        if self.anchor is None:
            return np.eye(k) - 1.0 / k
        if self.anchor[0] not in models:
            raise RankingInputError(f"anchor model {self.anchor[0]!r} is not on the board")
        c = np.eye(k)
        c[:, models.index(self.anchor[0])] -= 1.0
        return c

    @property
    def level(self) -> float:
        return self.init_rating if self.anchor is None else float(self.anchor[1])

    def ratings(self, beta: np.ndarray, models: list[str]) -> np.ndarray:
        """β (…×K) -> ratings (…×K)."""
        return self.factor * (beta @ self.contrast(models).T) + self.level

    def resample_ratings(
        self, beta: np.ndarray, models: list[str], point: np.ndarray
    ) -> np.ndarray:
        """Bootstrap β (R×K, NaN where a round could not rate a model) -> ratings.

        Complete rounds are placed as ``ratings`` places them. A round missing models is
        placed so that the models it rates keep their mean rating of the full fit (with an
        anchor: the anchor keeps its rating; a round without the anchor is all NaN).
        """
        out = np.full(beta.shape, np.nan)
        complete = ~np.isnan(beta).any(axis=1)
        out[complete] = self.ratings(beta[complete], models)
        for r in np.flatnonzero(~complete):
            seen = ~np.isnan(beta[r])
            if not seen.any():  # a round that fitted no model stays NaN (no empty mean)
                continue
            if self.anchor is not None:
                i = models.index(self.anchor[0])
                if seen[i]:
                    out[r, seen] = self.factor * (beta[r, seen] - beta[r, i]) + self.level
            else:
                centred = beta[r, seen] - beta[r, seen].mean()
                out[r, seen] = self.factor * centred + point[seen].mean()
        return out


@dataclass
class Leaderboard:
    table: (
        pl.DataFrame
    )  # model, rating, lower, upper, rank, rank_ub, battles, se, ci_method, ci_level
    winrates: pl.DataFrame  # model_a, model_b, battles, observed, predicted
    beta: np.ndarray  # natural-unit strengths, mean 0, order of `models`
    models: list[str]
    cov: np.ndarray  # sandwich covariance of the ratings (rating units²)
    bootstrap: np.ndarray | None = None  # rounds × K bootstrap ratings (NaN: not rated)
    meta: dict = field(default_factory=dict)
    # models in the battles that the board does not rank -> reason (identify.LEFT_OUT_REASONS)
    left_out: dict[str, str] = field(default_factory=dict)


def rank_upper_bounds(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """1 + the number of models whose lower bound is above this model's upper bound."""
    return 1 + (lower[None, :] > upper[:, None]).sum(axis=1)


def ranks(rating: np.ndarray) -> np.ndarray:
    """1 = best; ties share the best rank."""
    return 1 + (rating[None, :] > rating[:, None]).sum(axis=1)


def _strongly_connected_rounds(agg: Aggregated, draw: np.ndarray) -> np.ndarray:
    """Per round (R×P×3 draws), whether its own "beat or tied" graph is strongly connected:
    every model reached from model 0 along the edges and against them, all rounds at once
    (a few boolean R×K×K steps: the graphs are dense, their diameter small)."""
    rounds, k = draw.shape[0], agg.n_models
    adj = np.zeros((rounds, k, k), dtype=bool)
    adj[:, agg.left, agg.right] = draw[:, :, 0] + draw[:, :, 2] > 0  # left beat or tied right
    adj[:, agg.right, agg.left] = draw[:, :, 1] + draw[:, :, 2] > 0
    ok = np.ones(rounds, dtype=bool)
    for graph in (adj, adj.transpose(0, 2, 1)):
        seen = np.zeros((rounds, k), dtype=bool)
        seen[:, 0] = True
        for _ in range(k):
            grown = seen | (seen[:, :, None] & graph).any(axis=1)
            if (grown == seen).all():
                break
            seen = grown
        ok &= seen.all(axis=1)
    return ok


def round_components(agg: Aggregated, draw: np.ndarray, intact: np.ndarray) -> np.ndarray:
    """Per round (R×P×3 draws), the mask of the models it can rate (R×K): all of them when
    its own "beat or tied" graph is strongly connected, else its largest strongly connected
    part (``main_component``, ties broken by the round's battles as a board does)."""
    masks = np.ones((draw.shape[0], agg.n_models), dtype=bool)
    test = np.flatnonzero(~intact)
    if test.size:
        test = test[~_strongly_connected_rounds(agg, draw[test])]
    for r in test:  # a round that lost a model: its parts, one graph search
        sub = Aggregated(agg.models, agg.left, agg.right, draw[r])
        masks[r] = main_component(beat_or_tied_graph(sub), sub.model_battles())
    return masks


def _fit_rounds(
    agg: Aggregated, draw: np.ndarray, beta: np.ndarray, keep: np.ndarray
) -> np.ndarray:
    """β of rounds (R×P×3) that share the rated set ``keep``, fitted as one batch on the
    cells among those models; NaN for the others (not rated in these rounds)."""
    out = np.full((draw.shape[0], agg.n_models), np.nan)
    if keep.sum() < 2:
        return out
    cells = keep[agg.left] & keep[agg.right]
    index = np.cumsum(keep) - 1
    d = draw[:, cells]
    n = d.sum(axis=2).astype(np.float64)
    w = d[:, :, 0] + 0.5 * d[:, :, 2]
    out[:, keep] = fit_batch(index[agg.left[cells]], index[agg.right[cells]], n, w, beta[keep])
    return out


def bootstrap_betas(
    agg: Aggregated, beta: np.ndarray, rounds: int, seed: int, workers: int | None = None
) -> np.ndarray:
    """β for ``rounds`` multinomial resamples of the aggregated cells (rounds × K).

    A model the resample cannot rate (no battle drawn, or all its drawn battles won or all
    lost) is NaN in that round, never the starting value: a round rates the largest strongly
    connected part of its own "beat or tied" graph. Chunk c always uses
    ``SeedSequence(seed).spawn(...)[c]``, so the result is the same for any number of
    worker threads (numpy's sampler and ufuncs release the GIL).

    Rounds are fitted in batches of the same rated set (``fit_batch``): on real arena
    months many pairs meet only a few times, so most rounds lose some "beat or tied" edge
    of the full data, yet almost all stay strongly connected (fitted one by one, they make
    a 1,000-round bootstrap 2-3x slower). Every round converges to its own
    maximum-likelihood β, so batching changes nothing but the time.

    Weighted cells (``agg.weighted``) are resampled as counts: the round draws the rounded
    total weight over the cells in proportion to their weight, so a vote of weight w
    counts as w votes in the interval too.
    """
    cells = agg.fit_counts
    counts = cells.ravel()
    if agg.weighted is None:
        total = int(counts.sum())
        pvals = counts / total
    else:
        total = max(round(float(counts.sum())), 1)
        pvals = counts / counts.sum()
    sizes = [min(BOOTSTRAP_CHUNK, rounds - s) for s in range(0, rounds, BOOTSTRAP_CHUNK)]
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))
    # the full data's "beat or tied" edges; a round keeping all of them stays strongly
    # connected (the board only ranks a strongly connected set): no graph search needed
    has_win = cells[:, 0] + cells[:, 2] > 0
    has_loss = cells[:, 1] + cells[:, 2] > 0

    def run(chunk: int) -> np.ndarray:
        rng = np.random.default_rng(seeds[chunk])
        draw = rng.multinomial(total, pvals, size=sizes[chunk]).reshape(sizes[chunk], -1, 3)
        intact = (
            ((draw[:, :, 0] + draw[:, :, 2] > 0) | ~has_win)
            & ((draw[:, :, 1] + draw[:, :, 2] > 0) | ~has_loss)
        ).all(axis=1)
        masks = round_components(agg, draw, intact)
        out = np.empty((sizes[chunk], agg.n_models))
        groups, group_of = np.unique(masks, axis=0, return_inverse=True)
        for g, keep in enumerate(groups):
            rows = np.flatnonzero(group_of.ravel() == g)
            out[rows] = _fit_rounds(agg, draw[rows], beta, keep)
        return out

    workers = workers or min(len(sizes), os.cpu_count() or 1)
    with single_threaded_blas():
        if workers <= 1:
            parts = [run(c) for c in range(len(sizes))]
        else:
            with ThreadPoolExecutor(workers) as pool:
                parts = list(pool.map(run, range(len(sizes))))
    return np.concatenate(parts) if parts else np.empty((0, agg.n_models))


def bootstrap_interval(boot: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile interval and standard error per column over the rounds that rated it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column no round rated: NaN
        lower, upper = np.nanquantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
        se = np.nanstd(boot, axis=0, ddof=1)
    return lower, upper, se


def missing_rounds(boot: np.ndarray | None, names: list[str]) -> dict[str, int]:
    """Rounds in which each model could not be rated (only models with any)."""
    if boot is None:
        return {}
    miss = np.isnan(boot).sum(axis=0)
    return {m: int(c) for m, c in zip(names, miss) if c}


def winrate_table(agg: Aggregated, beta: np.ndarray) -> pl.DataFrame:
    """Every ordered pair of distinct models: battles between them, observed and predicted
    win rate of ``model_a`` over ``model_b`` (ties half; observed null without battles)."""
    k = agg.n_models
    n = np.zeros((k, k))
    wins = np.zeros((k, k))
    n[agg.left, agg.right] = agg.pair_battles
    wins[agg.left, agg.right] = agg.pair_wins
    n = n + n.T
    wins[agg.right, agg.left] = agg.pair_battles - agg.pair_wins
    pred = expit(beta[:, None] - beta[None, :])
    ia, ib = np.nonzero(~np.eye(k, dtype=bool))
    with np.errstate(invalid="ignore", divide="ignore"):
        obs = np.where(n[ia, ib] > 0, wins[ia, ib] / n[ia, ib], np.nan)
    names = np.array(agg.models, dtype=object)
    return pl.DataFrame(
        {
            "model_a": names[ia].tolist(),
            "model_b": names[ib].tolist(),
            "battles": n[ia, ib].astype(np.int64),
            "observed": obs,
            "predicted": pred[ia, ib],
        }
    ).with_columns(pl.col("observed").fill_nan(None))


class TooFewModels(RankingInputError):
    """Fewer than two models are left to rank (no battles, or all left out)."""


def rank_set(agg: Aggregated, options: FitOptions) -> tuple[Aggregated, dict[str, str]]:
    """The cells a board ranks and the models left out, checked before any fit: at least
    two models, and the anchor (if any) among them."""
    if agg.n_models == 0:
        raise TooFewModels("no battles: a leaderboard needs battles between two models")
    anchor = options.anchor[0] if options.anchor else None
    if anchor is not None and anchor not in agg.models:
        raise RankingInputError(f"anchor model {anchor!r} is not in the battles")
    ranked, left_out = rankable(agg, options.min_battles)
    if ranked.n_models < 2:
        raise TooFewModels(_too_few(agg, ranked.n_models, left_out, options.min_battles))
    if anchor in left_out:
        raise RankingInputError(
            f"anchor model {anchor!r} is left out of the board ({left_out[anchor]})"
        )
    return ranked, left_out


def _too_few(agg: Aggregated, ranked: int, left_out: dict[str, str], min_battles: int) -> str:
    """Why fewer than two models can be ranked, by reason: what a reader needs to know
    ("0 left of 19" alone does not say whether the votes were too few or too one-sided)."""
    battles = dict(zip(agg.models, agg.model_battles().astype(int).tolist()))
    by_reason: dict[str, list[str]] = {}
    for model, reason in left_out.items():
        by_reason.setdefault(reason, []).append(model)
    parts = []
    for reason, models in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if reason == "under_min_battles":
            most = max(battles[m] for m in models)
            # rankable() drops rare models repeatedly, taking their opponents' battles
            # with them: a model may start above the minimum and end below it
            parts.append(
                f"{len(models)} have fewer than min_battles={min_battles} battles "
                f"(the most: {most:,}, counting battles against models left out)"
            )
        else:
            parts.append(f"{len(models)} {reason.replace('_', ' ')}")
    return (
        f"{ranked} of {agg.n_models} model(s) can be ranked, a leaderboard needs two: "
        f"{'; '.join(parts)} (e.g. {_summary(left_out, 3)})"
    )


def _summary(left_out: dict[str, str], shown: int = 5) -> str:
    items = [f"{m}: {r}" for m, r in list(left_out.items())[:shown]]
    more = len(left_out) - shown
    return ", ".join(items) + (f" and {more} more" if more > 0 else "") if items else "none"


def leaderboard_from_aggregated(agg: Aggregated, options: FitOptions = FitOptions()) -> Leaderboard:
    """The board of aggregated cells: only the models ``rank_set`` keeps are rated. The
    fit reads ``agg.fit_counts`` (weighted cells when the battles carry weights); the
    ``battles`` column and ``n_battles`` count the votes as cast."""
    agg, left_out = rank_set(agg, options)
    scale = RatingScale.of(options)
    level = options.level
    k = agg.n_models
    cells = agg.fit_counts
    n, w = cells.sum(axis=1).astype(np.float64), cells[:, 0] + 0.5 * cells[:, 2]
    with single_threaded_blas():
        beta, iters = fit_pairs(agg.left, agg.right, n, w, k)
    rating = scale.ratings(beta, agg.models)
    contrast = scale.factor * scale.contrast(agg.models)
    with single_threaded_blas():
        cov = contrast @ sandwich_cov(beta, agg.left, agg.right, cells) @ contrast.T
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    boot = None
    if options.bootstrap_rounds > 0:
        raw = bootstrap_betas(agg, beta, options.bootstrap_rounds, options.seed)
        boot = scale.resample_ratings(raw, agg.models, rating)
    if options.ci == "sandwich":
        z = float(ndtri(0.5 + level / 2))
        lower, upper = rating - z * se, rating + z * se
    else:
        lower, upper, se = bootstrap_interval(boot, level)
    table = (
        pl.DataFrame(
            {
                "model": agg.models,
                "rating": rating,
                "lower": lower,
                "upper": upper,
                "rank": ranks(rating).astype(np.int64),
                "rank_ub": rank_upper_bounds(lower, upper).astype(np.int64),
                "battles": agg.model_battles().astype(np.int64),
                "se": se,
            }
        )
        .with_columns(ci_method=pl.lit(options.ci), ci_level=pl.lit(level))
        .sort(["rank", "model"])
    )
    meta = {
        "newton_iterations": iters,
        "n_battles": agg.n_battles,
        "bootstrap_missing_rounds": missing_rounds(boot, agg.models),
    }
    return Leaderboard(table, winrate_table(agg, beta), beta, agg.models, cov, boot, meta, left_out)


def fit_bt(battles: pl.DataFrame, options: FitOptions | None = None, **changes) -> Leaderboard:
    """Bradley-Terry leaderboard of a battle table with ``model_a, model_b, winner``.

    ``options`` (``FitOptions``; keyword ``changes`` override single fields) say how.
    Models the data cannot rate are listed in ``.left_out`` with the reason, not rated.
    """
    options = replace(options or FitOptions(), **changes)
    return leaderboard_from_aggregated(
        encode_battles(battles, options.tie_mode).aggregate(), options
    )
