"""Bradley-Terry leaderboard: ratings, sandwich / bootstrap intervals, rank bounds, win rates."""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy.special import expit
from scipy.stats import norm

from arena_assets.ranking.aggregate import Aggregated, aggregate
from arena_assets.ranking.newton import (
    DEFAULT_RIDGE,
    fit_batch,
    fit_pairs,
    sandwich_cov,
    single_threaded_blas,
)

CI_METHODS = ("sandwich", "bootstrap")

# Rounds per independently seeded chunk: fixed so that the bytes do not depend on threads.
BOOTSTRAP_CHUNK = 50


@dataclass(frozen=True)
class RatingScale:
    """rating = scale/ln(base)·β + offset, offset set by the mean or by an anchor model."""

    scale: float = 400.0
    base: float = 10.0
    init_rating: float = 1000.0
    anchor: tuple[str, float] | None = None

    @property
    def factor(self) -> float:
        return self.scale / math.log(self.base)

    def contrast(self, models: list[str]) -> np.ndarray:
        """K×K matrix C with ratings = factor·(C @ β) + constant."""
        k = len(models)
        if self.anchor is None:
            return np.eye(k) - 1.0 / k
        if self.anchor[0] not in models:
            raise ValueError(f"anchor model {self.anchor[0]!r} has no battles")
        c = np.eye(k)
        c[:, models.index(self.anchor[0])] -= 1.0
        return c

    @property
    def level(self) -> float:
        return self.init_rating if self.anchor is None else float(self.anchor[1])

    def ratings(self, beta: np.ndarray, models: list[str]) -> np.ndarray:
        """β (…×K) -> ratings (…×K)."""
        return self.factor * (beta @ self.contrast(models).T) + self.level


@dataclass
class Leaderboard:
    table: pl.DataFrame  # model, rating, lower, upper, rank, rank_ub, battles, se, ci_method, ci_level
    winrates: pl.DataFrame  # model_a, model_b, battles, observed, predicted
    beta: np.ndarray  # natural-unit strengths, mean 0, order of `models`
    models: list[str]
    cov: np.ndarray  # sandwich covariance of the ratings (rating units²)
    bootstrap: np.ndarray | None = None  # rounds × K bootstrap ratings
    meta: dict = field(default_factory=dict)


def rank_upper_bounds(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """1 + the number of models whose lower bound is above this model's upper bound."""
    return 1 + (lower[None, :] > upper[:, None]).sum(axis=1)


def ranks(rating: np.ndarray) -> np.ndarray:
    """1 = best; ties share the best rank."""
    return 1 + (rating[None, :] > rating[:, None]).sum(axis=1)


def bootstrap_betas(
    agg: Aggregated,
    beta: np.ndarray,
    rounds: int,
    seed: int,
    ridge: float = DEFAULT_RIDGE,
    workers: int | None = None,
) -> np.ndarray:
    """β for ``rounds`` multinomial resamples of the aggregated cells (rounds × K).

    Chunk c always uses ``SeedSequence(seed).spawn(...)[c]``, so the result is the same
    for any number of worker threads (numpy's sampler and ufuncs release the GIL).
    """
    counts = agg.counts.ravel()
    total = int(counts.sum())
    pvals = counts / total
    sizes = [min(BOOTSTRAP_CHUNK, rounds - s) for s in range(0, rounds, BOOTSTRAP_CHUNK)]
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))

    def run(chunk: int) -> np.ndarray:
        rng = np.random.default_rng(seeds[chunk])
        draw = rng.multinomial(total, pvals, size=sizes[chunk]).reshape(sizes[chunk], -1, 3)
        n = draw.sum(axis=2).astype(np.float64)
        w = draw[:, :, 0] + 0.5 * draw[:, :, 2]
        return fit_batch(agg.left, agg.right, n, w, beta, ridge=ridge)

    workers = workers or min(len(sizes), os.cpu_count() or 1)
    with single_threaded_blas():
        if workers <= 1:
            parts = [run(c) for c in range(len(sizes))]
        else:
            with ThreadPoolExecutor(workers) as pool:
                parts = list(pool.map(run, range(len(sizes))))
    return np.concatenate(parts) if parts else np.empty((0, agg.n_models))


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


class TooFewModels(ValueError):
    """Fewer than two models are left to rank (no battles, or all under min_battles)."""


def require_two_models(agg: Aggregated) -> None:
    if len(agg.models) < 2:
        raise TooFewModels(
            f"{len(agg.models)} model(s) left after min_battles: a leaderboard needs two")


def leaderboard_from_aggregated(
    agg: Aggregated,
    *,
    scale: RatingScale = RatingScale(),
    ci: str = "sandwich",
    level: float = 0.95,
    bootstrap_rounds: int = 0,
    seed: int = 0,
    ridge: float = DEFAULT_RIDGE,
) -> Leaderboard:
    if ci not in CI_METHODS:
        raise ValueError(f"ci must be one of {CI_METHODS}, got {ci!r}")
    require_two_models(agg)
    if ci == "bootstrap" and bootstrap_rounds <= 0:
        raise ValueError("ci='bootstrap' needs bootstrap_rounds > 0")
    if not 0 < level < 1:
        raise ValueError("level must be in (0, 1)")
    k = agg.n_models
    n, w = agg.pair_battles.astype(np.float64), agg.pair_wins
    with single_threaded_blas():
        beta, iters = fit_pairs(agg.left, agg.right, n, w, k, ridge=ridge)
    rating = scale.ratings(beta, agg.models)
    contrast = scale.factor * scale.contrast(agg.models)
    with single_threaded_blas():
        cov = contrast @ sandwich_cov(beta, agg.left, agg.right, agg.counts, ridge) @ contrast.T
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    boot = None
    if bootstrap_rounds > 0:
        boot = scale.ratings(bootstrap_betas(agg, beta, bootstrap_rounds, seed, ridge), agg.models)
    if ci == "sandwich":
        z = norm.ppf(0.5 + level / 2)
        lower, upper = rating - z * se, rating + z * se
    else:
        lower, upper = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
        se = boot.std(axis=0, ddof=1)
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
        .with_columns(ci_method=pl.lit(ci), ci_level=pl.lit(level))
        .sort(["rank", "model"])
    )
    meta = {"newton_iterations": iters, "n_battles": agg.n_battles, "ridge": ridge}
    return Leaderboard(table, winrate_table(agg, beta), beta, agg.models, cov, boot, meta)


def fit_bt(
    battles: pl.DataFrame,
    *,
    scale: float = 400.0,
    base: float = 10.0,
    init_rating: float = 1000.0,
    anchor: tuple[str, float] | None = None,
    tie_mode: str = "half",
    min_battles: int = 0,
    ci: str = "sandwich",
    level: float = 0.95,
    bootstrap_rounds: int = 0,
    seed: int = 0,
    ridge: float = DEFAULT_RIDGE,
) -> Leaderboard:
    """Bradley-Terry leaderboard of a battle table with ``model_a, model_b, winner``.

    ``anchor=(model, rating)`` pins that model's rating; otherwise the mean is
    ``init_rating``. ``ci="bootstrap"`` uses percentile intervals of ``bootstrap_rounds``
    multinomial resamples of the aggregated cells (seeded); ``"sandwich"`` the robust normal
    interval. Bootstrap ratings are kept in ``.bootstrap`` whenever rounds > 0.
    """
    agg = aggregate(battles, tie_mode=tie_mode, min_battles=min_battles)
    return leaderboard_from_aggregated(
        agg,
        scale=RatingScale(scale, base, init_rating, anchor),
        ci=ci,
        level=level,
        bootstrap_rounds=bootstrap_rounds,
        seed=seed,
        ridge=ridge,
    )
