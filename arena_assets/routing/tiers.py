"""Model tiers as RouteLLM assigns them (``compute_tiers`` in routellm/routers/
similarity_weighted/utils.py): models sorted by rating (best first) are cut into at most
``n_tiers`` contiguous groups minimising the sum over groups of the rating variance within
the group (population variance, as numpy's ``var``); tier 0 is the strongest.

Dynamic programming over (first k models, t groups): O(K²·T).
"""

from __future__ import annotations

import numpy as np


def compute_tiers(models: list[str], ratings: np.ndarray, n_tiers: int = 10) -> dict[str, int]:
    order = np.argsort(-np.asarray(ratings, float), kind="stable")
    r = np.asarray(ratings, float)[order]
    n = len(r)
    if n == 0:
        return {}
    t_max = max(1, min(n_tiers, n))
    # var[i, j] = variance of r[i..j] from prefix sums
    s1 = np.concatenate([[0.0], np.cumsum(r)])
    s2 = np.concatenate([[0.0], np.cumsum(r * r)])
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    cnt = np.maximum(j - i + 1, 1)
    mean = (s1[j + 1] - s1[i]) / cnt
    var = np.where(j >= i, np.maximum((s2[j + 1] - s2[i]) / cnt - mean * mean, 0.0), np.inf)
    cost = np.full((t_max + 1, n + 1), np.inf)  # cost[t, m]: first m models in t groups
    cut = np.zeros((t_max + 1, n + 1), dtype=int)
    cost[0, 0] = 0.0
    for t in range(1, t_max + 1):
        for m in range(t, n + 1):
            cands = cost[t - 1, t - 1 : m] + var[np.arange(t - 1, m), m - 1]
            best = int(np.argmin(cands))
            cost[t, m], cut[t, m] = cands[best], best + t - 1
    tier_of = np.empty(n, dtype=int)
    m, t = n, t_max
    while t > 0:
        start = cut[t, m]
        tier_of[start:m] = t - 1
        m, t = start, t - 1
    return {models[order[k]]: int(tier_of[k]) for k in range(n)}
