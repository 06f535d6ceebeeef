"""Bradley-Terry maximum likelihood on pair cells: Newton's method, sandwich, batches.

Parameters are natural-log strengths β (P(i beats j) = σ(β_i − β_j)). The objective is the
log-likelihood minus ``ridge/2·|β|²``; the tiny default ridge only keeps β finite when a
resample leaves a model with all wins or all losses (its effect on real boards is far below
1e-6 rating points). The translation non-identifiability is handled by solving with
``H + J`` (J = c·11ᵀ): the gradient is orthogonal to 1, so the step equals the
pseudo-inverse step and β keeps mean 0.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

DEFAULT_RIDGE = 1e-6


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


def _regularized(h: np.ndarray, ridge: float) -> np.ndarray:
    k = h.shape[0]
    c = max(float(np.trace(h)) / k, 1.0) / k
    return h + ridge * np.eye(k) + c


def objective(
    beta: np.ndarray, left: np.ndarray, right: np.ndarray, n: np.ndarray, w: np.ndarray, ridge: float
) -> float:
    d = beta[left] - beta[right]
    # W·log σ(d) + (N−W)·log σ(−d) = W·d − N·log(1 + e^d), stable for large |d|
    ll = (w * d - n * np.logaddexp(0.0, d)).sum()
    return float(ll - 0.5 * ridge * beta @ beta)


def fit_pairs(
    left: np.ndarray,
    right: np.ndarray,
    n: np.ndarray,
    w: np.ndarray,
    k: int,
    *,
    beta0: np.ndarray | None = None,
    ridge: float = DEFAULT_RIDGE,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> tuple[np.ndarray, int]:
    """Newton with exact Hessian and backtracking; returns (β, iterations).

    ``n``/``w`` are battles and wins-of-left (ties half) per pair. Stops when the largest
    Newton step is below ``tol`` (natural units; 1 rating point ≈ 5.8e-3).
    """
    beta = np.zeros(k) if beta0 is None else beta0 - beta0.mean()
    f = objective(beta, left, right, n, w, ridge)
    for it in range(1, max_iter + 1):
        p = expit(beta[left] - beta[right])
        r = w - n * p
        grad = np.bincount(left, r, k) - np.bincount(right, r, k) - ridge * beta
        h = laplacian(left, right, n * p * (1.0 - p), k)
        try:
            step = np.linalg.solve(_regularized(h, ridge), grad)
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                "the maximum-likelihood ratings do not exist (a model won or lost all its "
                "battles, or the comparison graph is disconnected); fit with ridge > 0"
            ) from exc
        t = 1.0
        while True:  # the objective is concave: a halved Newton step always ends ascending
            cand = beta + t * step
            f_new = objective(cand, left, right, n, w, ridge)
            if f_new >= f - 1e-12 * abs(f) or t < 1e-8:
                break
            t *= 0.5
        beta, f = cand, f_new
        if np.abs(t * step).max() < tol:
            return beta, it
    return beta, max_iter


def hessian(
    beta: np.ndarray, left: np.ndarray, right: np.ndarray, n: np.ndarray, ridge: float
) -> np.ndarray:
    """Negative Hessian of the objective, with the identifiability term J added."""
    p = expit(beta[left] - beta[right])
    return _regularized(laplacian(left, right, n * p * (1.0 - p), len(beta)), ridge)


def sandwich_cov(
    beta: np.ndarray, left: np.ndarray, right: np.ndarray, counts: np.ndarray, ridge: float
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
    h_inv = np.linalg.inv(hessian(beta, left, right, counts.sum(axis=1), ridge))
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


def fit_batch(
    left: np.ndarray,
    right: np.ndarray,
    n: np.ndarray,
    w: np.ndarray,
    beta0: np.ndarray,
    *,
    ridge: float = DEFAULT_RIDGE,
    tol: float = 1e-9,
    max_iter: int = 12,
) -> np.ndarray:
    """Fit many weightings of the same pairs at once (``n``, ``w``: R×P) -> β (R×K).

    Plain Newton from the point estimate ``beta0``, every row with its own exact Hessian
    (batched K×K solves are cheap next to the R×P element-wise work), so a resample
    converges quadratically in about three steps. Rows whose steps stop shrinking (tiny
    data, separated resamples) are finished by the line-searched ``fit_pairs``.
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
        grad = np.asarray(dt @ r.T).T - ridge * b
        h = _batch_laplacians(left, right, na * p * (1.0 - p), k)
        if c is None:  # the identifiability constant J = c·11ᵀ (any c > 0 works)
            c = max(float(np.trace(h[0])) / k, 1.0) / k
        h += c
        h[:, np.arange(k), np.arange(k)] += ridge
        step = np.linalg.solve(h, grad[:, :, None])[:, :, 0]
        size = np.abs(step).max(axis=1)
        diverging = (size > 0.5 * prev[active]) & (it >= 2)
        beta[active] = np.where(diverging[:, None], b, b + step)
        done = size < tol
        for row in active[diverging & ~done]:  # restart safely from β0
            beta[row], _ = fit_pairs(left, right, n[row], w[row], k, beta0=beta0, ridge=ridge, tol=tol)
        prev[active] = size
        active = active[~(done | diverging)]
        if active.size == 0:
            return beta
    for row in active:  # still moving after max_iter: finish with the safe solver
        beta[row], _ = fit_pairs(left, right, n[row], w[row], k, beta0=beta[row], ridge=ridge, tol=tol)
    return beta
