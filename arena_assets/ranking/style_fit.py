"""Per-battle Newton for the style-controlled model (K strengths + F style coefficients).

The Hessian is (K+F)²: the model block is a Laplacian built with one bincount over the
ordered pair key, the cross block with one bincount per feature, the feature block is a
dense F×F product. Battles carry weights (bootstrap counts), so the same code fits every
resample. There is no penalty term: callers hand over battles whose models form a strongly
connected "beat or tied" graph (``identify.rankable``), and a bootstrap round that loses
that property is fitted on its largest strongly connected part (other models NaN).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from arena_assets.ranking.identify import main_component
from arena_assets.ranking.newton import NoMaximumLikelihood, single_threaded_blas

REUSE_HESSIAN_BELOW = 1e-3  # largest step (natural units) after which the Hessian is kept


@dataclass(frozen=True)
class Pieces:
    a: np.ndarray
    b: np.ndarray
    key: np.ndarray  # a·K + b


def style_pieces(a: np.ndarray, b: np.ndarray, k: int) -> Pieces:
    return Pieces(a, b, a * k + b)


def _pair_sums(key: np.ndarray, v: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(key, v, k * k).reshape(k, k)


def style_gram(pc: Pieces, x: np.ndarray, v: np.ndarray, k: int, identify: bool) -> np.ndarray:
    """Σ_n v_n z_n z_nᵀ with z_n = (e_a − e_b, x_n); with ``identify`` plus J on the model
    block.

    With ``identify`` the constant c·11ᵀ on the model block makes it invertible without
    changing the inverse on the identified subspace (see newton.py).
    """
    nf = x.shape[1]
    g = np.zeros((k + nf, k + nf))
    vp = _pair_sums(pc.key, v, k)
    off = vp + vp.T
    g[:k, :k] = -off
    g[np.arange(k), np.arange(k)] += off.sum(axis=1)
    for f in range(nf):
        cp = _pair_sums(pc.key, v * x[:, f], k)
        g[:k, k + f] = cp.sum(axis=1) - cp.sum(axis=0)
    g[k:, :k] = g[:k, k:].T
    g[k:, k:] = (x * v[:, None]).T @ x
    if identify:
        g[:k, :k] += max(np.trace(g[:k, :k]) / k, 1.0) / k
    return g


def _gradient(pc: Pieces, x: np.ndarray, r: np.ndarray, k: int) -> np.ndarray:
    rp = _pair_sums(pc.key, r, k)
    return np.concatenate([rp.sum(axis=1) - rp.sum(axis=0), x.T @ r])


def _logit(pc: Pieces, x: np.ndarray, params: np.ndarray, k: int) -> np.ndarray:
    beta = params[:k]
    # one gather from the K×K difference table instead of two from β
    return (beta[:, None] - beta[None, :]).ravel()[pc.key] + x @ params[k:]


def _objective(d: np.ndarray, y: np.ndarray, c: np.ndarray | None) -> float:
    ll = np.logaddexp(0.0, d) - y * d  # = −[y·log σ(d) + (1−y)·log σ(−d)]
    return float(-(ll.sum() if c is None else ll @ c))


def fit_style_params(
    pc: Pieces,
    x: np.ndarray,
    y: np.ndarray,
    c: np.ndarray | None,
    k: int,
    *,
    params0: np.ndarray | None = None,
    tol: float = 1e-10,
    line_search: bool = True,
    max_iter: int = 100,
) -> np.ndarray:
    """Weighted (``c``; None = 1 each) maximum likelihood of (β, θ) by Newton."""
    params = np.zeros(k + x.shape[1]) if params0 is None else params0.copy()
    d = _logit(pc, x, params, k)
    f = _objective(d, y, c) if line_search else 0.0
    gram, last = None, np.inf
    for _ in range(max_iter):
        p = expit(d)
        r = y - p if c is None else (y - p) * c
        grad = _gradient(pc, x, r, k)
        if gram is None or last > REUSE_HESSIAN_BELOW:
            v = p * (1 - p) if c is None else p * (1 - p) * c
            gram = style_gram(pc, x, v, k, identify=True)
        # near the optimum the Hessian barely moves: reusing it keeps the fixed point
        # exact and the contraction far below 1 while skipping the (K+F)² assembly
        try:
            step = np.linalg.solve(gram, grad)
        except np.linalg.LinAlgError:
            # a resample (or a tiny board) where a style feature is constant or collinear
            # with the ratings: the model has no unique maximum here
            raise NoMaximumLikelihood(
                "style-controlled fit: singular Hessian (a style "
                "feature is constant or collinear in these battles)"
            ) from None
        t = 1.0
        while True:
            cand = params + t * step
            d = _logit(pc, x, cand, k)
            if not line_search:
                break
            f_new = _objective(d, y, c)
            if f_new >= f - 1e-12 * abs(f) or t < 1e-8:
                f = f_new
                break
            t *= 0.5
        params = cand
        last = np.abs(t * step).max()
        if last < tol:
            return params
    if not line_search:  # plain Newton wandered (far from the start): redo safely
        return fit_style_params(pc, x, y, c, k, params0=params0, tol=tol)
    # the log-likelihood is concave; a line-searched Newton that keeps moving after this
    # many steps is climbing towards infinity (the features separate the outcomes)
    raise NoMaximumLikelihood(f"style-controlled Newton did not converge in {max_iter} steps")


def _beat_or_tied(pc: Pieces, y: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """K×K: [i, j] when i beat or tied j in a battle of weight ``c`` > 0."""
    won = np.bincount(pc.key, c * (y > 0), k * k).reshape(k, k) > 0
    lost = np.bincount(pc.key, c * (y < 1), k * k).reshape(k, k) > 0
    return won | lost.T


def _partial_round(
    pc: Pieces,
    x: np.ndarray,
    y: np.ndarray,
    c: np.ndarray,
    k: int,
    graph: np.ndarray,
    params: np.ndarray,
) -> np.ndarray:
    """A round whose graph is no longer strongly connected: fit its largest strongly
    connected part, models outside it NaN."""
    import scipy.sparse as sp

    battles = np.bincount(pc.a, c, k) + np.bincount(pc.b, c, k)
    main = main_component(sp.csr_matrix(graph.astype(np.float64)), battles)
    out = np.full(k + x.shape[1], np.nan)
    if main.sum() < 2:
        return out
    index = np.cumsum(main) - 1
    rows = main[pc.a] & main[pc.b] & (c > 0)
    km = int(main.sum())
    a, b = index[pc.a[rows]], index[pc.b[rows]]
    start = np.concatenate([params[:k][main] - params[:k][main].mean(), params[k:]])
    fit = fit_style_params(
        Pieces(a, b, a * km + b), x[rows], y[rows], c[rows].astype(np.float64), km, params0=start
    )
    out[:k][main] = fit[:km]
    out[k:] = fit[km:]
    return out


def bootstrap_style(
    pc: Pieces,
    x: np.ndarray,
    y: np.ndarray,
    k: int,
    params: np.ndarray,
    rounds: int,
    seed: int,
    workers: int | None = None,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """Fits of ``rounds`` resamples of the battles (with replacement) -> rounds × (K+F).
    ``weight`` (per battle; None = 1) multiplies each battle's draw count.

    Round i always draws from ``SeedSequence(seed).spawn(rounds)[i]``; warm-started plain
    Newton converges in 2-3 steps (quadratically) from the full-data optimum. A round that
    drops every battle a model won (or lost), or all of its battles, rates the models it
    still can and leaves the others NaN.
    """
    n = len(y)
    seeds = np.random.SeedSequence(seed).spawn(rounds)
    full = _beat_or_tied(pc, y, np.ones(n) if weight is None else weight, k)

    def run(i: int) -> np.ndarray:
        try:
            return fit_round(i)
        except NoMaximumLikelihood:  # this resample cannot rate anyone: a NaN round
            return np.full(k + x.shape[1], np.nan)

    def fit_round(i: int) -> np.ndarray:
        rng = np.random.default_rng(seeds[i])
        c = np.bincount(rng.integers(0, n, n), minlength=n)
        if weight is not None:
            c = c * weight
        drawn = np.flatnonzero(c)  # ~37 % of battles are not drawn: skip them in every pass
        sub = Pieces(pc.a[drawn], pc.b[drawn], pc.key[drawn])
        graph = _beat_or_tied(sub, y[drawn], c[drawn], k)
        if (graph | ~full).all():  # every edge of the full data survived: still identified
            return fit_style_params(
                sub,
                x[drawn],
                y[drawn],
                c[drawn].astype(np.float64),
                k,
                params0=params,
                tol=1e-8,
                line_search=False,
                max_iter=20,
            )
        return _partial_round(sub, x[drawn], y[drawn], c[drawn], k, graph, params)

    workers = workers or min(rounds, os.cpu_count() or 1)
    with single_threaded_blas():
        if workers <= 1:
            out = [run(i) for i in range(rounds)]
        else:
            with ThreadPoolExecutor(workers) as pool:
                out = list(pool.map(run, range(rounds)))
    return np.array(out).reshape(rounds, k + x.shape[1])
