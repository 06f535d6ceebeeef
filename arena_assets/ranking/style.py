"""Style-controlled Bradley-Terry: ratings net of answer length and markdown.

Battle columns (flat, one pair per feature): ``{feature}_a`` and ``{feature}_b`` for
feature in STYLE_FEATURES — the sum of assistant tokens over the conversation and the
number of markdown headers, list items and bold spans in the assistant messages (code
blocks excluded). The feature of a battle is (s_a − s_b)/(s_a + s_b) (0 when both are 0),
standardized across battles; the model adds θ·x to the BT logit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.special import expit
from scipy.stats import norm

from arena_assets.ranking.aggregate import aggregate_codes, drop_rare_models, encode_battles
from arena_assets.ranking.newton import DEFAULT_RIDGE, single_threaded_blas
from arena_assets.ranking.style_fit import fit_style_params, style_gram, style_pieces

STYLE_FEATURES = ("sum_assistant_tokens", "header_count", "list_count", "bold_count")

def style_differences(s_a: np.ndarray, s_b: np.ndarray) -> np.ndarray:
    s_a = np.asarray(s_a, dtype=np.float64)
    s_b = np.asarray(s_b, dtype=np.float64)
    total = s_a + s_b
    return np.divide(s_a - s_b, total, out=np.zeros_like(total), where=total != 0)


@dataclass
class StyleLeaderboard:
    # model, rating, lower, upper, rank, rank_ub, battles, se, ci_method, ci_level,
    # rating_unstyled, rank_unstyled, rank_change (positive = higher under style control)
    table: pl.DataFrame
    coefficients: pl.DataFrame  # feature, coef, lower, upper, se, coef_rating
    theta: np.ndarray
    beta: np.ndarray
    bootstrap: np.ndarray | None = None  # rounds × (K + F): ratings then coefficients


def fit_style_controlled(
    battles: pl.DataFrame,
    *,
    features: tuple[str, ...] = STYLE_FEATURES,
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
) -> StyleLeaderboard:
    """BT with standardized style-difference features; see the module docstring.

    Coefficients are in logit units per standard deviation of the feature
    (``coef_rating`` in rating points). Bootstrap resamples battles with replacement.
    """
    from arena_assets.ranking.leaderboard import (
        RatingScale,
        leaderboard_from_aggregated,
        rank_upper_bounds,
        ranks,
        require_two_models,
    )

    missing = [f"{f}_{s}" for f in features for s in "ab" if f"{f}_{s}" not in battles.columns]
    if missing:
        raise ValueError(f"style control needs columns {missing}")
    models, a, b, o, kept = encode_battles(battles, tie_mode)
    agg = drop_rare_models(aggregate_codes(models, a[kept], b[kept], o[kept]), min_battles)
    require_two_models(agg)
    keep_model = np.isin(np.array(models), np.array(agg.models))
    kept &= keep_model[a] & keep_model[b]
    remap = np.cumsum(keep_model) - 1
    a, b, o = remap[a[kept]], remap[b[kept]], o[kept]
    y = np.where(o == 0, 1.0, np.where(o == 1, 0.0, 0.5))
    x = np.column_stack(
        [
            # a missing count (null) is read as 0, i.e. no such element in the answer
            style_differences(
                battles[f"{f}_a"].fill_null(0).to_numpy()[kept],
                battles[f"{f}_b"].fill_null(0).to_numpy()[kept],
            )
            for f in features
        ]
    )
    sd = x.std(axis=0)
    x = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    k = agg.n_models
    sc = RatingScale(scale, base, init_rating, anchor)
    pieces = style_pieces(a, b, k)
    with single_threaded_blas():
        params = fit_style_params(pieces, x, y, None, k, ridge=ridge)
        beta, theta = params[:k], params[k:]
        # sandwich: H⁻¹ M H⁻¹ with the per-battle scores; J handled inside style_gram
        p = expit(beta[a] - beta[b] + x @ theta)
        h_inv = np.linalg.inv(style_gram(pieces, x, p * (1 - p), k, ridge, identify=True))
        cov = h_inv @ style_gram(pieces, x, (y - p) ** 2, k, 0.0, identify=False) @ h_inv
    # ratings and coefficients as one linear map of the parameters
    lin = np.zeros((k + len(features), k + len(features)))
    lin[:k, :k] = sc.factor * sc.contrast(agg.models)
    lin[k:, k:] = np.eye(len(features))
    cov = lin @ cov @ lin.T
    point = np.concatenate([sc.ratings(beta, agg.models), theta])
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    boot = None
    if bootstrap_rounds > 0:
        from arena_assets.ranking.style_fit import bootstrap_style

        raw = bootstrap_style(pieces, x, y, k, params, bootstrap_rounds, seed, ridge)
        boot = np.column_stack([sc.ratings(raw[:, :k], agg.models), raw[:, k:]])
    if ci == "bootstrap":
        if boot is None:
            raise ValueError("ci='bootstrap' needs bootstrap_rounds > 0")
        lower, upper = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
        se = boot.std(axis=0, ddof=1)
    else:
        z = norm.ppf(0.5 + level / 2)
        lower, upper = point - z * se, point + z * se
    plain = leaderboard_from_aggregated(agg, scale=sc, ridge=ridge)
    plain_rating = sc.ratings(plain.beta, agg.models)
    rating = point[:k]
    rank, rank_plain = ranks(rating), ranks(plain_rating)
    table = (
        pl.DataFrame(
            {
                "model": agg.models,
                "rating": rating,
                "lower": lower[:k],
                "upper": upper[:k],
                "rank": rank.astype(np.int64),
                "rank_ub": rank_upper_bounds(lower[:k], upper[:k]).astype(np.int64),
                "battles": agg.model_battles().astype(np.int64),
                "se": se[:k],
                "rating_unstyled": plain_rating,
                "rank_unstyled": rank_plain.astype(np.int64),
                "rank_change": (rank_plain - rank).astype(np.int64),
            }
        )
        .with_columns(ci_method=pl.lit(ci), ci_level=pl.lit(level))
        .sort(["rank", "model"])
    )
    coefs = pl.DataFrame(
        {
            "feature": list(features),
            "coef": theta,
            "lower": lower[k:],
            "upper": upper[k:],
            "se": se[k:],
            "coef_rating": sc.factor * theta,
        }
    )
    return StyleLeaderboard(table, coefs, theta, beta, boot)
