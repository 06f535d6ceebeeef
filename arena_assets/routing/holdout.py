"""router_eval: the P2L model judged on the battles it never saw.

The monthly fit keeps the latest ``validation_share`` of its battles out to choose the
ridge; the model fitted before that cut (``P2LFit.holdout``, and its W = 0 twin) is judged
here on those battles:

- prediction: mean log loss of P2L and of the marginal board (the same likelihood as the
  fit), the paired gain with its standard error, and the calibration (ECE) of side a's
  expected score;
- routing, as RouteLLM evaluates a router: the battles between a strong-tier and a
  weak-tier model (RouteLLM's tiers of the marginal ratings before the cut) are prompts
  whose two "answers" have known quality: the strong side's score (1, ½, 0) and the weak
  side's (1 − that). Routers: random, "the longer prompt goes to the strong model", and
  P2L's P(strong beats weak | prompt).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from arena_assets.routing.evaluate import evaluate_routers, expected_calibration_error
from arena_assets.routing.outcomes import grk_probs, score_of_a
from arena_assets.routing.p2l import Coded, P2LConfig, Params, battle_nll
from arena_assets.routing.tiers import compute_tiers


def expected_score_a(coded: Coded, prm: Params, loss: str) -> np.ndarray:
    """Side a's expected score (win 1, tie or both bad ½) per battle."""
    X = coded.X[coded.prompt]
    beta = prm.betas(X)
    i = np.arange(coded.n)
    ba, bb = beta[i, coded.a], beta[i, coded.b]
    if loss == "grk":
        p = grk_probs(ba, bb, prm.eta(X))
        return p[:, 0] + 0.5 * (p[:, 2] + p[:, 3])
    return expit(ba - bb)


def prediction_figures(coded: Coded, p2l: Params, marginal: Params, cfg: P2LConfig) -> dict:
    rows = np.arange(coded.n)
    if not coded.n:
        return {"battles": 0}
    nll_p, nll_m = battle_nll(coded, rows, p2l, cfg), battle_nll(coded, rows, marginal, cfg)
    gain = nll_m - nll_p
    y = score_of_a(coded.outcome)
    return {
        "battles": int(coded.n),
        "log_loss_p2l": float(nll_p.mean()),
        "log_loss_marginal": float(nll_m.mean()),
        "gain": float(gain.mean()),
        "gain_se": float(gain.std(ddof=1) / math.sqrt(coded.n)) if coded.n > 1 else math.nan,
        "ece_p2l": expected_calibration_error(expected_score_a(coded, p2l, cfg.loss), y),
        "ece_marginal": expected_calibration_error(expected_score_a(coded, marginal, cfg.loss), y),
    }


def tier_pairs(
    models: list[str], ratings: np.ndarray, n_tiers: int, strong_tiers: int, weak_from: int
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    tiers = compute_tiers(models, ratings, n_tiers)
    t = np.array([tiers[m] for m in models])
    return t < strong_tiers, t >= weak_from, tiers


def routing_rows(
    coded: Coded,
    p2l: Params,
    marginal: Params,
    prompt_chars: np.ndarray,
    *,
    n_tiers: int = 10,
    strong_tiers: int = 2,
    weak_from: int = 5,
    seed: int = 0,
) -> tuple[list, dict]:
    """RouteLLM's scores of the three routers on strong-vs-weak battles (and the tiers)."""
    strong, weak, tiers = tier_pairs(coded.models, marginal.b, n_tiers, strong_tiers, weak_from)
    a_strong = strong[coded.a] & weak[coded.b]
    b_strong = strong[coded.b] & weak[coded.a]
    rows = np.flatnonzero(a_strong | b_strong)
    if len(rows) < 2:
        return [], tiers
    flip = b_strong[rows]
    y = score_of_a(coded.outcome[rows])
    q_strong = np.where(flip, 1.0 - y, y)
    beta = p2l.betas(coded.X[coded.prompt[rows]])
    i = np.arange(len(rows))
    s_idx = np.where(flip, coded.b[rows], coded.a[rows])
    w_idx = np.where(flip, coded.a[rows], coded.b[rows])
    p2l_score = expit(beta[i, s_idx] - beta[i, w_idx])
    lengths = prompt_chars[coded.prompt[rows]].astype(float)
    return evaluate_routers({"p2l": p2l_score}, q_strong, 1.0 - q_strong, lengths, seed=seed), tiers
