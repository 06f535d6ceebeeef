"""Synthetic battles from a known Bradley-Terry model (tests, benchmarks)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl
from scipy.special import expit

from arena_assets.ranking.options import STYLE_FEATURES
from arena_assets.ranking.style import style_differences


def _named_ratings(ratings: Mapping[str, float] | Sequence[float] | np.ndarray) -> tuple[list[str], np.ndarray]:
    if isinstance(ratings, Mapping):
        return list(ratings), np.asarray(list(ratings.values()), dtype=np.float64)
    values = np.asarray(ratings, dtype=np.float64)
    width = len(str(len(values) - 1))
    return [f"model-{i:0{width}d}" for i in range(len(values))], values


def sample_bt_battles(
    ratings: Mapping[str, float] | Sequence[float] | np.ndarray,
    n: int,
    seed: int,
    *,
    scale: float = 400.0,
    base: float = 10.0,
    tie_rate: float = 0.0,
    style_coef: Mapping[str, float] | None = None,
    model_style: Mapping[str, Mapping[str, float]] | None = None,
    popularity: Sequence[float] | np.ndarray | None = None,
) -> pl.DataFrame:
    """``n`` battles between uniformly drawn distinct pairs (or drawn by ``popularity``,
    one weight per model, as arena traffic is), outcomes from BT.

    ``tie_rate`` turns that share of battles (chosen independently of the models) into
    ties. With ``style_coef`` (feature -> logit coefficient per standard deviation of the
    normalized difference) the battles carry ``{feature}_a/_b`` columns drawn around each
    model's mean in ``model_style`` (Poisson; default mean 100 tokens / 3 markdown
    elements) and the planted style term is added to the logit.
    """
    names, values = _named_ratings(ratings)
    k = len(names)
    rng = np.random.default_rng(seed)
    if popularity is None:
        a = rng.integers(0, k, n)
        b = (a + rng.integers(1, k, n)) % k  # uniform over the other k-1 models
    else:  # both sides drawn by popularity, redrawing b until it differs from a
        weights = np.asarray(popularity, dtype=np.float64)
        weights = weights / weights.sum()
        a = rng.choice(k, n, p=weights)
        b = rng.choice(k, n, p=weights)
        while (same := np.flatnonzero(a == b)).size:
            b[same] = rng.choice(k, same.size, p=weights)
    logit = (values[a] - values[b]) * math.log(base) / scale
    columns: dict[str, np.ndarray] = {}
    if style_coef:
        model_style = model_style or {}
        x_raw = []
        for feat in STYLE_FEATURES:
            default = 100.0 if feat == "sum_assistant_tokens" else 3.0
            means = np.array([model_style.get(m, {}).get(feat, default) for m in names])
            columns[f"{feat}_a"] = rng.poisson(means[a])
            columns[f"{feat}_b"] = rng.poisson(means[b])
            x_raw.append(style_differences(columns[f"{feat}_a"], columns[f"{feat}_b"]))
        x = np.column_stack(x_raw)
        sd = x.std(axis=0)
        x = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        coef = np.array([style_coef.get(f, 0.0) for f in STYLE_FEATURES])
        logit = logit + x @ coef
    a_wins = rng.random(n) < expit(logit)
    tie = rng.random(n) < tie_rate
    winner = np.where(tie, "tie", np.where(a_wins, "model_a", "model_b"))
    names_arr = np.array(names, dtype=object)
    return pl.DataFrame(
        {"model_a": names_arr[a], "model_b": names_arr[b], "winner": winner, **columns}
    )


def true_ratings(
    ratings: Mapping[str, float] | Sequence[float] | np.ndarray, init_rating: float = 1000.0
) -> dict[str, float]:
    """The planted ratings shifted to mean ``init_rating`` (what a mean-normalized fit estimates)."""
    names, values = _named_ratings(ratings)
    return dict(zip(names, (values - values.mean() + init_rating).tolist()))
