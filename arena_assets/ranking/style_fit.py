"""Per-battle Newton for the style-controlled model (K strengths + F style coefficients).

The Hessian is (K+F)²: the model block is a Laplacian built with one bincount over the
ordered pair key, the cross block with one bincount per feature, the feature block is a
dense F×F product. Battles carry weights (bootstrap counts), so the same code fits every
resample.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from arena_assets.ranking.newton import single_threaded_blas

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


def style_gram(
    pc: Pieces, x: np.ndarray, v: np.ndarray, k: int, ridge: float, identify: bool
) -> np.ndarray:
    """Σ_n v_n z_n z_nᵀ with z_n = (e_a − e_b, x_n); with ``identify`` plus the ridge (all
    parameters) and J on the model block.

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
        g[np.diag_indices(k + nf)] += ridge
    return g


def _gradient(pc: Pieces, x: np.ndarray, r: np.ndarray, params: np.ndarray, k: int, ridge: float) -> np.ndarray:
    rp = _pair_sums(pc.key, r, k)
    return np.concatenate([rp.sum(axis=1) - rp.sum(axis=0), x.T @ r]) - ridge * params


def _logit(pc: Pieces, x: np.ndarray, params: np.ndarray, k: int) -> np.ndarray:
    beta = params[:k]
    # one gather from the K×K difference table instead of two from β
    return (beta[:, None] - beta[None, :]).ravel()[pc.key] + x @ params[k:]


def _objective(d: np.ndarray, y: np.ndarray, c: np.ndarray | None, params: np.ndarray, ridge: float) -> float:
    ll = np.logaddexp(0.0, d) - y * d  # = −[y·log σ(d) + (1−y)·log σ(−d)]
    total = ll.sum() if c is None else ll @ c
    return float(-total - 0.5 * ridge * params @ params)


def fit_style_params(
    pc: Pieces,
    x: np.ndarray,
    y: np.ndarray,
    c: np.ndarray | None,
    k: int,
    *,
    ridge: float,
    params0: np.ndarray | None = None,
    tol: float = 1e-10,
    line_search: bool = True,
    max_iter: int = 100,
) -> np.ndarray:
    """Weighted (``c``; None = 1 each) maximum likelihood of (β, θ) by Newton."""
    params = np.zeros(k + x.shape[1]) if params0 is None else params0.copy()
    d = _logit(pc, x, params, k)
    f = _objective(d, y, c, params, ridge) if line_search else 0.0
    gram, last = None, np.inf
    for _ in range(max_iter):
        p = expit(d)
        r = y - p if c is None else (y - p) * c
        grad = _gradient(pc, x, r, params, k, ridge)
        if gram is None or last > REUSE_HESSIAN_BELOW:
            v = p * (1 - p) if c is None else p * (1 - p) * c
            gram = style_gram(pc, x, v, k, ridge, identify=True)
        # near the optimum the Hessian barely moves: reusing it keeps the fixed point
        # exact and the contraction far below 1 while skipping the (K+F)² assembly
        step = np.linalg.solve(gram, grad)
        t = 1.0
        while True:
            cand = params + t * step
            d = _logit(pc, x, cand, k)
            if not line_search:
                break
            f_new = _objective(d, y, c, cand, ridge)
            if f_new >= f - 1e-12 * abs(f) or t < 1e-8:
                f = f_new
                break
            t *= 0.5
        params = cand
        last = np.abs(t * step).max()
        if last < tol:
            return params
    if not line_search:  # plain Newton wandered (far from the start): redo safely
        return fit_style_params(pc, x, y, c, k, ridge=ridge, params0=params0, tol=tol)
    return params


def bootstrap_style(
    pc: Pieces,
    x: np.ndarray,
    y: np.ndarray,
    k: int,
    params: np.ndarray,
    rounds: int,
    seed: int,
    ridge: float,
    workers: int | None = None,
) -> np.ndarray:
    """Fits of ``rounds`` resamples of the battles (with replacement) -> rounds × (K+F).

    Round i always draws from ``SeedSequence(seed).spawn(rounds)[i]``; warm-started plain
    Newton converges in 2-3 steps (quadratically) from the full-data optimum.
    """
    n = len(y)
    seeds = np.random.SeedSequence(seed).spawn(rounds)

    def run(i: int) -> np.ndarray:
        rng = np.random.default_rng(seeds[i])
        c = np.bincount(rng.integers(0, n, n), minlength=n)
        drawn = np.flatnonzero(c)  # ~37 % of battles are not drawn: skip them in every pass
        sub = Pieces(pc.a[drawn], pc.b[drawn], pc.key[drawn])
        return fit_style_params(
            sub, x[drawn], y[drawn], c[drawn].astype(np.float64), k,
            ridge=ridge, params0=params, tol=1e-8, line_search=False, max_iter=20,
        )

    workers = workers or min(rounds, os.cpu_count() or 1)
    with single_threaded_blas():
        if workers <= 1:
            out = [run(i) for i in range(rounds)]
        else:
            with ThreadPoolExecutor(workers) as pool:
                out = list(pool.map(run, range(rounds)))
    return np.array(out).reshape(rounds, k + x.shape[1])
