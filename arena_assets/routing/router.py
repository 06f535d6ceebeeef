"""Routing a prompt with its P2L coefficients, as lmarena/p2l's ``route/`` does.

- ``argmax``: the model with the highest β(x) (the prompt's own leaderboard's top).
- ``strict``: the best model whose price is within the budget.
- ``lp`` (the anchor's "optimal-lp"): a distribution p over models maximising the expected
  win rate against the arena's opponent mix q,

      max_p  pᵀ W q   s.t.  pᵀc ≤ budget,  Σp = 1,  p ≥ 0,    W_ij = σ(β_i(x) − β_j(x)),

  and a seeded draw from p. With one budget constraint the optimum mixes at most two
  models (an LP's vertex): ``lp_distribution`` finds it exactly by checking the single
  models within budget and every pair that straddles the budget, so no LP solver runs per
  prompt (a test checks it against scipy's HiGHS).

A price is whatever unit the operator uses (cost per call, per 1k calls, …); it only has to
be the same unit as the budget. A budget below the cheapest model cannot be met
(``Unfulfillable``), as in the anchor.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit


class Unfulfillable(ValueError):
    """No model (or mix) fits the budget."""


def win_scores(betas: np.ndarray, q: np.ndarray) -> np.ndarray:
    """W q for each prompt: the expected win rate of each model against the mix q.

    ``betas``: (prompts × K) or (K,); ``q``: (K,) opponent shares summing to 1."""
    b = np.atleast_2d(betas)
    w = expit(b[:, :, None] - b[:, None, :])  # prompts × K × K
    out = w @ (q / q.sum())
    return out if betas.ndim == 2 else out[0]


def argmax_route(betas: np.ndarray) -> np.ndarray:
    return np.atleast_2d(betas).argmax(axis=1)


def strict_route(scores: np.ndarray, costs: np.ndarray, budget: float) -> np.ndarray:
    ok = costs <= budget
    if not ok.any():
        raise Unfulfillable(
            f"budget {budget} is below every model's price (cheapest {costs.min()})"
        )
    s = np.where(ok[None, :], np.atleast_2d(scores), -np.inf)
    return s.argmax(axis=1)


def lp_distribution(scores: np.ndarray, costs: np.ndarray, budget: float) -> np.ndarray:
    """The optimal p of ``max p·scores s.t. p·costs <= budget, sum p = 1, p >= 0``."""
    scores, costs = np.asarray(scores, float), np.asarray(costs, float)
    k = len(scores)
    ok = costs <= budget
    if not ok.any():
        raise Unfulfillable(
            f"budget {budget} is below every model's price (cheapest {costs.min()})"
        )
    # best single model within budget (ties: the cheaper)
    single = np.lexsort((costs, -np.where(ok, scores, -np.inf)))[0]
    best_value, p = scores[single], np.eye(k)[single]
    lo = np.flatnonzero(ok)
    hi = np.flatnonzero(~ok)
    if len(hi):
        # mixes of one affordable model i and one pricier j, spending the budget exactly
        ci, cj = costs[lo][:, None], costs[hi][None, :]
        t = (budget - ci) / (cj - ci)  # share of j
        value = scores[lo][:, None] + t * (scores[hi][None, :] - scores[lo][:, None])
        a, b = np.unravel_index(np.argmax(value), value.shape)
        if value[a, b] > best_value + 1e-15:
            p = np.zeros(k)
            p[lo[a]], p[hi[b]] = 1.0 - t[a, b], t[a, b]
    return p


def lp_route(
    betas: np.ndarray, costs: np.ndarray, budget: float, q: np.ndarray, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(chosen model index, p) per prompt; the draw is seeded (same seed, same routes)."""
    scores = win_scores(np.atleast_2d(betas), q)
    dist = np.stack([lp_distribution(s, costs, budget) for s in scores])
    u = np.random.default_rng(seed).random(len(dist))
    chosen = (u[:, None] > np.cumsum(dist, axis=1)).sum(axis=1).clip(max=len(costs) - 1)
    return chosen, dist


def default_budgets(prices: np.ndarray) -> list[float]:
    """The quartiles of the prices (three budgets between the cheapest and the dearest)."""
    return sorted({float(v) for v in np.quantile(prices, [0.25, 0.5, 0.75])})


def router_rows(
    models: list[str],
    betas: np.ndarray,
    q: np.ndarray,
    prices: dict[str, float],
    budgets: list[float] | None,
) -> list[dict]:
    """The month's routing summary: argmax over every model, then strict and LP routing
    over the priced models for each budget. Per row: the share of prompts routed to the
    model; per policy (repeated on its rows): the expected win rate of the routed model
    against the opponent mix q and the expected price per prompt."""
    n, k = betas.shape
    scores = win_scores(betas, q)
    rows = []

    def add(
        policy: str,
        budget: float | None,
        share: np.ndarray,
        idx: np.ndarray,
        price: np.ndarray,
        win: float,
    ) -> None:
        cost = None if np.isnan(price).any() else float(share @ price)
        for j, m in enumerate(idx.tolist()):
            rows.append(
                {
                    "policy": policy,
                    "budget": budget,
                    "model": models[m],
                    "price": None if np.isnan(price[j]) else float(price[j]),
                    "share": float(share[j]),
                    "expected_win_rate": win,
                    "expected_cost": cost,
                    "prompts": n,
                }
            )

    price_all = np.array([prices.get(m, np.nan) for m in models], float)
    pick = argmax_route(betas)
    add(
        "argmax",
        None,
        np.bincount(pick, minlength=k) / n,
        np.arange(k),
        price_all,
        float(scores[np.arange(n), pick].mean()),
    )
    priced = np.flatnonzero(~np.isnan(price_all))
    if len(priced) < 2:
        return rows
    sub_scores, sub_price = scores[:, priced], price_all[priced]
    for budget in budgets or default_budgets(sub_price):
        try:
            pick = strict_route(sub_scores, sub_price, budget)
        except Unfulfillable:
            continue
        add(
            "strict",
            budget,
            np.bincount(pick, minlength=len(priced)) / n,
            priced,
            sub_price,
            float(sub_scores[np.arange(n), pick].mean()),
        )
        dist = np.stack([lp_distribution(s, sub_price, budget) for s in sub_scores])
        add(
            "lp",
            budget,
            dist.mean(axis=0),
            priced,
            sub_price,
            float((dist * sub_scores).sum(axis=1).mean()),
        )
    return rows
