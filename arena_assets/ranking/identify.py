"""Which models the battles can rank, and why the others are left out.

Bradley-Terry ratings have a finite maximum-likelihood estimate exactly when the directed
graph with an edge i -> j whenever i beat or tied j is strongly connected (Zermelo 1929;
Ford 1957). A model that never lost would otherwise get an ever larger rating (the solver
never stops), and two groups that never met have no common scale. So a board ranks the
largest strongly connected component of that graph and lists every other model with the
reason it cannot be placed; no prior or penalty is added to invent a number for it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from arena_assets.ranking.cells import Aggregated

# reason -> what it means; every model left off a board carries one of these
LEFT_OUT_REASONS = {
    "no_battles": "no battle left once the tie mode dropped its ties (or only self-battles)",
    "under_min_battles": "fewer (kept) battles than min_battles",
    "won_all": "never lost or tied a battle: its maximum-likelihood rating is +infinity",
    "lost_all": "never won or tied a battle: its maximum-likelihood rating is -infinity",
    "not_connected": "no chain of battles links it to the ranked models",
    "above_ranked": "its group never lost or tied against the ranked models "
    "(rating unbounded above)",
    "below_ranked": "its group never beat or tied the ranked models (rating unbounded below)",
    "not_comparable": "linked to the ranked models only through left-out models, "
    "in both directions unbounded",
}


def beat_or_tied_graph(agg: Aggregated) -> sp.csr_matrix:
    """K×K adjacency: [i, j] = 1 when i beat or tied j at least once (with weight > 0:
    the graph of the cells the fit reads)."""
    cells = agg.fit_counts
    win = cells[:, 0] + cells[:, 2] > 0  # left beat or tied right
    loss = cells[:, 1] + cells[:, 2] > 0
    rows = np.concatenate([agg.left[win], agg.right[loss]])
    cols = np.concatenate([agg.right[win], agg.left[loss]])
    k = agg.n_models
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(k, k))


def main_component(graph: sp.csr_matrix, weight: np.ndarray | None = None) -> np.ndarray:
    """Mask of the largest strongly connected component (ties: more battles, then the
    component holding the lowest model index, so the choice is deterministic)."""
    from scipy.sparse.csgraph import connected_components

    k = graph.shape[0]
    _, label = connected_components(graph, directed=True, connection="strong")
    size = np.bincount(label)
    battles = np.bincount(label, weight if weight is not None else np.zeros(k))
    first = np.full(len(size), k)
    np.minimum.at(first, label, np.arange(k))
    best = min(range(len(size)), key=lambda c: (-size[c], -battles[c], first[c]))
    return label == best


def _reachable(graph: sp.csr_matrix, sources: np.ndarray) -> np.ndarray:
    from scipy.sparse.csgraph import breadth_first_order

    seen = np.zeros(graph.shape[0], dtype=bool)
    start = int(np.flatnonzero(sources)[0])
    seen[breadth_first_order(graph, start, directed=True, return_predecessors=False)] = True
    return seen


def _reasons(graph: sp.csr_matrix, main: np.ndarray) -> list[str | None]:
    """Reason per model (None for the ranked ones)."""
    from scipy.sparse.csgraph import connected_components

    out_deg = np.asarray((graph != 0).sum(axis=1)).ravel()
    in_deg = np.asarray((graph != 0).sum(axis=0)).ravel()
    below = _reachable(graph, main)  # the ranked models beat or tied them, maybe via others
    above = _reachable(graph.T.tocsr(), main)  # they beat or tied the ranked models
    _, group = connected_components(graph, directed=False)
    linked = group == group[np.flatnonzero(main)[0]]
    reasons: list[str | None] = []
    for i in range(graph.shape[0]):
        if main[i]:
            reasons.append(None)
        elif not linked[i]:
            reasons.append("not_connected")
        elif in_deg[i] == 0:
            reasons.append("won_all")
        elif out_deg[i] == 0:
            reasons.append("lost_all")
        elif above[i]:
            reasons.append("above_ranked")
        elif below[i]:
            reasons.append("below_ranked")
        else:
            reasons.append("not_comparable")
    return reasons


def restrict(agg: Aggregated, keep: np.ndarray) -> Aggregated:
    """The cells among the models of ``keep`` (mask), re-indexed."""
    new_index = np.cumsum(keep) - 1
    rows = keep[agg.left] & keep[agg.right]
    return Aggregated(
        models=[m for m, k in zip(agg.models, keep) if k],
        left=new_index[agg.left[rows]],
        right=new_index[agg.right[rows]],
        counts=agg.counts[rows],
        weighted=None if agg.weighted is None else agg.weighted[rows],
    )


def rankable(agg: Aggregated, min_battles: int = 0) -> tuple[Aggregated, dict[str, str]]:
    """The cells of the models a board can rank, and ``{model: reason}`` for the others.

    Models under ``min_battles`` go first; then the largest strongly connected component of
    the "beat or tied" graph is kept. Removing models removes their opponents' battles, so
    both steps repeat until nothing changes.
    """
    left_out: dict[str, str] = {}
    while True:
        battles = agg.model_battles()
        rare = battles < max(min_battles, 1)
        if rare.any():
            left_out.update(
                {
                    m: "no_battles" if n == 0 else "under_min_battles"
                    for m, r, n in zip(agg.models, rare, battles)
                    if r
                }
            )
            agg = restrict(agg, ~rare)
            continue
        if agg.n_models < 2:
            return agg, left_out
        graph = beat_or_tied_graph(agg)
        main = main_component(graph, battles)
        if main.all():
            return agg, left_out
        left_out.update({m: r for m, r in zip(agg.models, _reasons(graph, main)) if r})
        agg = restrict(agg, main)
