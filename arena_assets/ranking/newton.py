"""Bradley-Terry maximum likelihood on pair cells: Newton's method, sandwich, batches.

Parameters are natural-log strengths β (P(i beats j) = σ(β_i − β_j)); the objective is the
plain log-likelihood, with no penalty. Its maximum exists exactly when the graph with an
edge i -> j whenever i beat or tied j is strongly connected (Zermelo; Ford 1957), so
``fit_pairs`` checks that first and raises ``NoMaximumLikelihood`` otherwise; callers pick
the rankable models with ``arena_assets.ranking.identify`` before they get here. The
translation non-identifiability is handled by solving with ``H + J`` (J = c·11ᵀ): the
gradient is orthogonal to 1, so the step equals the pseudo-inverse step and β keeps mean 0.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import numpy as np
import scipy.sparse as sp
from scipy.special import expit


class NoMaximumLikelihood(ValueError):
    """The data have no finite maximum-likelihood ratings (see the module docstring)."""


def strongly_connected(
    left: np.ndarray, right: np.ndarray, n: np.ndarray, w: np.ndarray, k: int
) -> bool:
    """Whether the "beat or tied" graph of the pair cells is strongly connected."""
    from scipy.sparse.csgraph import connected_components

    if k <= 1:
        return k == 1
    win, loss = w > 0, (n - w) > 0  # left beat/tied right; right beat/tied left
    rows = np.concatenate([left[win], right[loss]])
    cols = np.concatenate([right[win], left[loss]])
    graph = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(k, k))
    return connected_components(graph, directed=True, connection="strong")[0] == 1


def single_threaded_blas() -> AbstractContextManager:
    """Hold OpenBLAS to one thread: for ~100×100 solves its threads cost far more than
    they give (measured 20-70 ms instead of ~1 ms per solve on a busy 2-core machine), and
    the bootstraps already run their own threads."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only speed depends on it
        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def laplacian(left: np.ndarray, right: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """Σ_p w_p (e_l − e_r)(e_l − e_r)ᵀ as a dense K×K matrix."""
    off = np.bincount(left * k + right, w, k * k).reshape(k, k)
    off = off + off.T
    out = -off
    out[np.diag_indices(k)] += off.sum(axis=1)
    return out


def _identified(h: np.ndarray) -> np.ndarray:
    """H + c·11ᵀ: invertible when the comparison graph is connected, same inverse on the
    mean-zero subspace."""
    k = h.shape[0]
    return h + max(float(np.trace(h)) / k, 1.0) / k


def objective(
    beta: np.ndarray, left: np.ndarray, right: np.ndarray, n: np.ndarray, w: np.ndarray
) -> float:
    d = beta[left] - beta[right]
    # W·log σ(d) + (N−W)·log σ(−d) = W·d − N·log(1 + e^d), stable for large |d|
    return float((w * d - n * np.logaddexp(0.0, d)).sum())


def fit_pairs(
    left: np.ndarray,
    right: np.ndarray,
    n: np.ndarray,
    w: np.ndarray,
    k: int,
    *,
    beta0: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> tuple[np.ndarray, int]:
    """Newton with exact Hessian and backtracking; returns (β, iterations).

    ``n``/``w`` are battles and wins-of-left (ties half) per pair. Stops when the largest
    Newton step is below ``tol`` (natural units; 1 rating point ≈ 5.8e-3). Raises
    ``NoMaximumLikelihood`` when the ratings do not exist or Newton does not converge.
    """
    if not strongly_connected(left, right, n, w, k):
        raise NoMaximumLikelihood(
            "the maximum-likelihood ratings do not exist: the graph of 'beat or tied' is not "
            "strongly connected (a model won or lost all its battles, or groups never met); "
            "rank the models arena_assets.ranking.identify.rankable keeps"
        )
    beta = np.zeros(k) if beta0 is None else beta0 - beta0.mean()
    f = objective(beta, left, right, n, w)
    for it in range(1, max_iter + 1):
        p = expit(beta[left] - beta[right])
        r = w - n * p
        grad = np.bincount(left, r, k) - np.bincount(right, r, k)
        h = laplacian(left, right, n * p * (1.0 - p), k)
        step = np.linalg.solve(_identified(h), grad)
        t = 1.0
        while True:  # the objective is concave: a halved Newton step always ends ascending
            cand = beta + t * step
            f_new = objective(cand, left, right, n, w)
            if f_new >= f - 1e-12 * abs(f) or t < 1e-8:
                break
            t *= 0.5
        beta, f = cand, f_new
        if np.abs(t * step).max() < tol:
            return beta, it
    raise NoMaximumLikelihood(f"Newton did not converge in {max_iter} iterations")


def hessian(beta: np.ndarray, left: np.ndarray, right: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Negative Hessian of the objective, with the identifiability term J added."""
    p = expit(beta[left] - beta[right])
    return _identified(laplacian(left, right, n * p * (1.0 - p), len(beta)))


def sandwich_cov(
    beta: np.ndarray, left: np.ndarray, right: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """Robust covariance H⁺ M H⁺ of β (natural units, in the mean-zero subspace).

    Every battle of a cell has the same score (y − p)(e_l − e_r), so the meat is a Laplacian
    with per-pair weights Σ_outcome count·(y − p)².
    """
    k = len(beta)
    p = expit(beta[left] - beta[right])
    meat_w = counts[:, 0] * (1 - p) ** 2 + counts[:, 1] * p**2 + counts[:, 2] * (0.5 - p) ** 2
    meat = laplacian(left, right, meat_w, k)
    # (H + J)⁻¹ = H⁺ + (const)·11ᵀ, and 11ᵀ·M = 0, so this product is exactly H⁺ M H⁺.
    h_inv = np.linalg.inv(hessian(beta, left, right, counts.sum(axis=1)))
    cov = h_inv @ meat @ h_inv
    return 0.5 * (cov + cov.T)


def incidence(left: np.ndarray, right: np.ndarray, k: int) -> sp.csr_matrix:
    """K×P sparse matrix with +1 at (left_p, p) and −1 at (right_p, p)."""
    npairs = len(left)
    cols = np.concatenate([np.arange(npairs), np.arange(npairs)])
    rows = np.concatenate([left, right])
    vals = np.concatenate([np.ones(npairs), -np.ones(npairs)])
    return sp.csr_matrix((vals, (rows, cols)), shape=(k, npairs))


def _batch_laplacians(left: np.ndarray, right: np.ndarray, v: np.ndarray, k: int) -> np.ndarray:
    """Laplacians of the rows of ``v`` (R×P) -> R×K×K, with one bincount."""
    rounds = v.shape[0]
    flat = (np.arange(rounds)[:, None] * (k * k) + (left * k + right)[None, :]).ravel()
    off = np.bincount(flat, v.ravel(), rounds * k * k).reshape(rounds, k, k)
    off += off.transpose(0, 2, 1)
    out = -off
    diag = np.arange(k)
    out[:, diag, diag] += off.sum(axis=2)
    return out


def solve_rows(h: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Newton steps of a batch (R×K×K, R×K); a row whose system is singular gets NaN."""
    try:
        return np.linalg.solve(h, grad[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        out = np.full(grad.shape, np.nan)
        for i in range(len(h)):
            try:
                out[i] = np.linalg.solve(h[i], grad[i])
            except np.linalg.LinAlgError:
                pass
        return out


def fit_batch(
    left: np.ndarray,
    right: np.ndarray,
    n: np.ndarray,
    w: np.ndarray,
    beta0: np.ndarray,
    *,
    tol: float = 1e-9,
    max_iter: int = 12,
) -> np.ndarray:
    """Fit many weightings of the same pairs at once (``n``, ``w``: R×P) -> β (R×K).

    Every row must have maximum-likelihood ratings (the bootstrap hands over only the
    resamples whose "beat or tied" graph is still strongly connected).

    Plain Newton from the point estimate ``beta0``, every row with its own exact Hessian
    (batched K×K solves are cheap next to the R×P element-wise work), so a resample
    converges quadratically in about three steps. Rows whose steps stop shrinking (tiny
    data) are finished by the line-searched ``fit_pairs``.
    """
    k = len(beta0)
    rounds = n.shape[0]
    beta = np.repeat((beta0 - beta0.mean())[None, :], rounds, axis=0)
    dt = incidence(left, right, k)
    active = np.arange(rounds)
    prev = np.full(rounds, np.inf)
    c = None
    for it in range(max_iter):
        b = beta[active]
        p = expit(b[:, left] - b[:, right])
        na = n[active]
        r = w[active] - na * p
        grad = np.asarray(dt @ r.T).T
        h = _batch_laplacians(left, right, na * p * (1.0 - p), k)
        if c is None:  # the identifiability constant J = c·11ᵀ (any c > 0 works)
            c = max(float(np.trace(h[0])) / k, 1.0) / k
        h += c
        step = solve_rows(h, grad)
        size = np.abs(step).max(axis=1)
        # a row whose Hessian became singular (a thin model's first step overshot, its
        # p(1-p) underflowed to 0: seen on real months' category boards) restarts safely too
        broken = ~np.isfinite(size)
        step[broken] = 0.0
        diverging = ((size > 0.5 * prev[active]) & (it >= 2)) | broken
        beta[active] = np.where(diverging[:, None], b, b + step)
        done = size < tol
        for row in active[diverging & ~done]:  # restart safely from β0
            beta[row], _ = fit_pairs(left, right, n[row], w[row], k, beta0=beta0, tol=tol)
        prev[active] = size
        active = active[~(done | diverging)]
        if active.size == 0:
            return beta
    for row in active:  # still moving after max_iter: finish with the safe solver
        beta[row], _ = fit_pairs(left, right, n[row], w[row], k, beta0=beta[row], tol=tol)
    return beta
