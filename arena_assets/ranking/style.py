"""Style-controlled Bradley-Terry: ratings net of answer length and markdown.

Battle columns (flat, one pair per feature): ``{feature}_a`` and ``{feature}_b`` for
feature in ``FitOptions.style_features`` — by default the sum of assistant tokens over the
conversation and the number of markdown headers, list items and bold spans in the
assistant messages (code blocks excluded). The feature of a battle is, with
``style_norm="ratio"``, (s_a − s_b)/(s_a + s_b) (0 when both are 0); FastChat's style
control uses (s_a − s_b)/(s_a + s_b + 1) for every feature, offered as
``style_norm="ratio_plus_one"``. Features are then standardized across battles, and the
model adds θ·x to the BT logit. A feature that does not vary (every battle 0, say) or is a
linear combination of the features before it has no coefficient of its own: it is
reported as NaN, named in ``meta["features_left_out"]``, and left out of the fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl
from scipy.special import expit, ndtri

from arena_assets.ranking.cells import BattleSet, encode_battles
from arena_assets.ranking.newton import single_threaded_blas
from arena_assets.ranking.options import STYLE_FEATURES, FitOptions, RankingInputError
from arena_assets.ranking.style_fit import fit_style_params, style_gram, style_pieces

__all__ = ["STYLE_FEATURES", "StyleLeaderboard", "fit_style_controlled", "style_differences"]


def style_differences(s_a: np.ndarray, s_b: np.ndarray, norm: str = "ratio") -> np.ndarray:
    s_a = np.asarray(s_a, dtype=np.float64)
    s_b = np.asarray(s_b, dtype=np.float64)
    total = s_a + s_b + (1.0 if norm == "ratio_plus_one" else 0.0)
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
    left_out: dict[str, str] | None = None  # as Leaderboard.left_out
    meta: dict | None = None


def style_matrix(battles: pl.DataFrame, bs: BattleSet, options: FitOptions) -> np.ndarray:
    """Normalized style differences of the encoded battles (N × F, not standardized)."""
    features = options.style_features
    missing = [f"{f}_{s}" for f in features for s in "ab" if f"{f}_{s}" not in battles.columns]
    if missing:
        raise RankingInputError(f"style control needs columns {missing}")
    return np.column_stack(
        [
            # a missing count (null) is read as 0, i.e. no such element in the answer
            style_differences(
                battles[f"{f}_a"].fill_null(0).to_numpy()[bs.rows],
                battles[f"{f}_b"].fill_null(0).to_numpy()[bs.rows],
                options.style_norm,
            )
            for f in features
        ]
    ).reshape(len(bs.rows), len(features))


def _independent_features(x: np.ndarray, sd: np.ndarray, names: tuple[str, ...]):
    """Mask of the features kept (each varies and adds a dimension to those before it),
    and {feature: "constant" | "collinear"} for the others."""
    gram = x.T @ x / max(len(x), 1)
    keep = np.zeros(len(names), dtype=bool)
    reasons = {}
    for f, name in enumerate(names):
        if not sd[f] > 0:
            reasons[name] = "constant"
            continue
        trial = keep.copy()
        trial[f] = True
        sub = gram[np.ix_(trial, trial)]
        if np.linalg.matrix_rank(sub, tol=1e-9 * max(np.trace(sub), 1.0)) == trial.sum():
            keep = trial
        else:
            reasons[name] = "collinear"
    return keep, reasons


def fit_style_controlled(
    battles: pl.DataFrame,
    options: FitOptions | None = None,
    *,
    encoded: BattleSet | None = None,
    **changes,
) -> StyleLeaderboard:
    """BT with standardized style-difference features; see the module docstring.

    ``encoded``: the battles already encoded (``encode_battles(battles, tie_mode)``), so a
    caller fitting the plain and the styled board encodes once. Coefficients are in logit
    units per standard deviation of the feature (``coef_rating`` in rating points).
    Bootstrap resamples battles with replacement; a model a resample cannot rate is NaN
    in that round. A ``weight`` column (the battle filter's down-weights) weighs each
    battle in the likelihood, the sandwich and the resamples, as in the plain fit.
    """
    from arena_assets.ranking.leaderboard import (
        RatingScale,
        bootstrap_interval,
        leaderboard_from_aggregated,
        missing_rounds,
        rank_set,
        rank_upper_bounds,
        ranks,
    )

    options = replace(options or FitOptions(), **changes)
    features = options.style_features
    bs = encoded if encoded is not None else encode_battles(battles, options.tie_mode)
    x_all = style_matrix(battles, bs, options)
    agg, left_out = rank_set(bs.aggregate(), options)
    sub = bs.among(agg.models)
    x = x_all[np.isin(bs.rows, sub.rows)]
    a, b, o = sub.a, sub.b, sub.outcome
    y = np.where(o == 0, 1.0, np.where(o == 1, 0.0, 0.5))
    sd = x.std(axis=0)
    x = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    varies, features_left_out = _independent_features(x, sd, features)
    x = x[:, varies]
    nf = int(varies.sum())
    k = agg.n_models
    sc = RatingScale.of(options)
    pieces = style_pieces(a, b, k)
    cw = sub.weight  # None: every battle weighs 1 (exactly the unweighted fit)
    with single_threaded_blas():
        params = fit_style_params(pieces, x, y, cw, k)
        beta, theta = params[:k], params[k:]
        # sandwich: H⁻¹ M H⁻¹ with the per-battle scores; J handled inside style_gram
        p = expit(beta[a] - beta[b] + x @ theta)
        v, m = p * (1 - p), (y - p) ** 2
        if cw is not None:
            v, m = v * cw, m * cw
        h_inv = np.linalg.inv(style_gram(pieces, x, v, k, identify=True))
        cov = h_inv @ style_gram(pieces, x, m, k, identify=False) @ h_inv
    # ratings and coefficients as one linear map of the parameters
    lin = np.zeros((k + nf, k + nf))
    lin[:k, :k] = sc.factor * sc.contrast(agg.models)
    lin[k:, k:] = np.eye(nf)
    cov = lin @ cov @ lin.T
    point = np.concatenate([sc.ratings(beta, agg.models), theta])
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    boot = None
    if options.bootstrap_rounds > 0:
        from arena_assets.ranking.style_fit import bootstrap_style

        raw = bootstrap_style(
            pieces, x, y, k, params, options.bootstrap_rounds, options.seed, weight=cw
        )
        boot = np.column_stack([sc.resample_ratings(raw[:, :k], agg.models, point[:k]), raw[:, k:]])
    if options.ci == "bootstrap":
        lower, upper, se = bootstrap_interval(boot, options.level)
    else:
        z = float(ndtri(0.5 + options.level / 2))
        lower, upper = point - z * se, point + z * se
    plain = leaderboard_from_aggregated(agg, replace(options, ci="sandwich", bootstrap_rounds=0))
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
        .with_columns(ci_method=pl.lit(options.ci), ci_level=pl.lit(options.level))
        .sort(["rank", "model"])
    )

    def per_feature(values: np.ndarray) -> np.ndarray:
        out = np.full(len(features), np.nan)
        out[varies] = values
        return out

    coefs = pl.DataFrame(
        {
            "feature": list(features),
            "coef": per_feature(theta),
            "lower": per_feature(lower[k:]),
            "upper": per_feature(upper[k:]),
            "se": per_feature(se[k:]),
            "coef_rating": per_feature(sc.factor * theta),
        }
    )
    meta = {
        "n_battles": len(y),
        "features_left_out": features_left_out,
        "bootstrap_missing_rounds": missing_rounds(boot, agg.models),
    }
    return StyleLeaderboard(table, coefs, theta, beta, boot, left_out, meta)
