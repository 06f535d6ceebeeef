"""Prompt-to-leaderboard: Bradley-Terry coefficients that depend on the prompt.

    β(x) = b + W x,   W = U Vᵀ  (K models × d features, rank r)

x is the prompt's feature vector (``features.py``). The objective is the mean negative
log-likelihood of the battles under the outcome model (``outcomes.py``: ``bt`` with the
boards' tie handling, or ``grk`` for the four outcomes, whose tie parameter is also linear
in x: η(x) = η₀ + g·x) plus the ridge (α/2)(‖U‖² + ‖V‖² + ‖g‖²), which at the optimum is
α‖W‖_* (nuclear norm). Fitted with L-BFGS (scipy) on analytic gradients; the battles enter
through sparse model×battle and prompt×battle incidence matrices, so one evaluation costs
O(battles·r + prompts·d·r).

Nesting: W = 0 is the marginal Bradley-Terry board (the same likelihood as
``ranking.newton`` on the same battles); ``fit_p2l`` fits it first and keeps it unless a
ridge on the path beats it on the held-out latest battles by more than one standard error
(the one-standard-error rule, and a gain of at least ``MIN_GAIN``: with no prompt effect,
P2L stays the marginal board), and only when at least ``min_validation_battles`` battles
are held out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from arena_assets.errors import ArenaError
from arena_assets.routing.features import FeatureConfig, FeatureSpace
from arena_assets.routing.outcomes import bt_terms, grk_terms, score_of_a

LOSSES = ("bt", "grk")
_B_RIDGE = 1e-7  # keeps b finite when a time split leaves a model unbeaten; negligible otherwise


class P2LInputError(ArenaError, ValueError):
    """Input a P2L fit cannot use (no battles, unknown loss, …): one line for the user."""


@dataclass(frozen=True)
class P2LConfig:
    loss: str = "bt"
    tie_mode: str = "half"  # bt only: ranking.options.TIE_MODES, as the boards
    rank: int = 8
    ridge_grid: tuple[float, ...] = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5)
    validation_share: float = 0.1  # the latest battles, held out to pick the ridge
    # fewer held-out battles than this cannot tell a prompt effect from noise: W stays 0
    min_validation_battles: int = 200
    max_search_battles: int = 200_000  # the ridge search fits on at most the latest this many
    min_model_battles: int = 100  # a model with fewer keeps W's row at 0 (marginal only)
    max_iter: int = 400
    # a low-rank fit stops when an iteration improves the mean log loss by under ~1e-8
    # (relative) or the largest gradient entry is under gtol: far below the differences
    # between ridges (1e-4 and up). The W = 0 fits (b only, cheap) run to 1e-13 so that
    # they equal the boards' Newton fit.
    gtol: float = 1e-6
    ftol: float = 1e-8
    seed: int = 0
    features: FeatureConfig = field(default_factory=FeatureConfig)

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise P2LInputError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.rank < 1:
            raise P2LInputError(f"rank must be >= 1, got {self.rank}")
        if not 0 < self.validation_share < 0.5:
            raise P2LInputError(
                f"validation_share must be in (0, 0.5), got {self.validation_share}"
            )


@dataclass(frozen=True)
class Coded:
    """Battles ready to fit: model indices, outcome codes, prompt rows of X, time."""

    models: list[str]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    prompt: np.ndarray
    tstamp: np.ndarray  # seconds
    X: np.ndarray  # prompts × d

    @property
    def n(self) -> int:
        return len(self.a)

    def model_battles(self, rows: np.ndarray | None = None) -> np.ndarray:
        a = self.a if rows is None else self.a[rows]
        b = self.b if rows is None else self.b[rows]
        k = len(self.models)
        return np.bincount(a, minlength=k) + np.bincount(b, minlength=k)


@dataclass
class Params:
    b: np.ndarray  # (K,)
    U: np.ndarray  # (K, r); all zero = the marginal board
    V: np.ndarray  # (d, r)
    eta0: float = 0.0  # grk only
    g: np.ndarray | None = None  # (d,) grk only

    def betas(self, X: np.ndarray) -> np.ndarray:
        """β(x) for each row of X (prompts × K)."""
        return self.b[None, :] + (X @ self.V) @ self.U.T

    def eta(self, X: np.ndarray) -> np.ndarray:
        g = self.g if self.g is not None else np.zeros(X.shape[1])
        return self.eta0 + X @ g

    @property
    def w_is_zero(self) -> bool:
        """W = U Vᵀ negligible (every entry under 1e-6): the marginal board again."""
        return float(np.abs(self.U @ self.V.T).max(initial=0.0)) < 1e-6

    def to_dict(self) -> dict:
        return {
            "b": self.b.tolist(),
            "U": self.U.tolist(),
            "V": self.V.tolist(),
            "eta0": self.eta0,
            "g": None if self.g is None else self.g.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict, k: int, dim: int, rank: int) -> Params:
        return cls(
            np.asarray(d["b"], float),
            np.asarray(d["U"], float).reshape(k, rank),
            np.asarray(d["V"], float).reshape(dim, rank),
            float(d["eta0"]),
            None if d["g"] is None else np.asarray(d["g"], float),
        )


class Objective:
    """Mean NLL + ridge over ``rows`` of ``coded``; ``lowrank=False`` fits b (and η₀) only."""

    def __init__(
        self,
        coded: Coded,
        rows: np.ndarray,
        cfg: P2LConfig,
        alpha: float,
        lowrank: bool,
        w_mask: np.ndarray,
    ) -> None:
        self.cfg, self.alpha, self.lowrank, self.mask = cfg, alpha, lowrank, w_mask
        self.k, self.d, self.r = len(coded.models), coded.X.shape[1], cfg.rank
        self.grk = cfg.loss == "grk"
        self.a, self.b = coded.a[rows], coded.b[rows]
        self.o = coded.outcome[rows]
        self.y = score_of_a(self.o)
        n = len(rows)
        self.n = n
        cols = np.arange(n)
        ones = np.ones(n)
        self.Sa = sp.csr_matrix((ones, (self.a, cols)), shape=(self.k, n))
        self.Sb = sp.csr_matrix((ones, (self.b, cols)), shape=(self.k, n))
        # only the prompts these battles use, re-indexed (a search subset reads fewer rows)
        used, self.p = np.unique(coded.prompt[rows], return_inverse=True)
        self.X = coded.X[used]
        self.P = sp.csr_matrix((ones, (self.p, cols)), shape=(len(used), n))

    # parameter vector layout: b | U | V | (η₀ | g)
    def pack(self, prm: Params) -> np.ndarray:
        parts = [prm.b]
        if self.lowrank:
            parts += [prm.U.ravel(), prm.V.ravel()]
        if self.grk:
            parts.append([prm.eta0])
            if self.lowrank:
                parts.append(prm.g if prm.g is not None else np.zeros(self.d))
        return np.concatenate([np.asarray(p, float).ravel() for p in parts])

    def unpack(self, theta: np.ndarray, template: Params) -> Params:
        k, d, r = self.k, self.d, self.r
        i = k
        b = theta[:k]
        U, V, g = template.U, template.V, template.g
        if self.lowrank:
            U = theta[i : i + k * r].reshape(k, r)
            i += k * r
            V = theta[i : i + d * r].reshape(d, r)
            i += d * r
        eta0 = template.eta0
        if self.grk:
            eta0 = float(theta[i])
            i += 1
            if self.lowrank:
                g = theta[i : i + d]
        return Params(
            b.copy(),
            np.array(U, float),
            np.array(V, float),
            eta0,
            None if g is None else np.array(g, float),
        )

    def __call__(self, theta: np.ndarray, template: Params) -> tuple[float, np.ndarray]:
        prm = self.unpack(theta, template)
        n = self.n
        z = (self.X @ prm.V)[self.p] if self.lowrank else None  # battles × r
        beta_a = prm.b[self.a]
        beta_b = prm.b[self.b]
        if self.lowrank:
            ua, ub = prm.U[self.a], prm.U[self.b]  # gathered once, used twice
            beta_a = beta_a + np.einsum("ij,ij->i", ua, z)
            beta_b = beta_b + np.einsum("ij,ij->i", ub, z)
        if self.grk:
            eta = prm.eta0 + (
                (self.X @ prm.g)[self.p] if self.lowrank and prm.g is not None else 0.0
            )
            nll, ga, gb, ge = grk_terms(beta_a, beta_b, np.broadcast_to(eta, beta_a.shape), self.o)
        else:
            nll, ga, gb = bt_terms(beta_a - beta_b, self.y)
        value = float(nll.sum()) / n
        grads = [(self.Sa @ ga + self.Sb @ gb) / n + 2 * _B_RIDGE * prm.b]
        penalty = _B_RIDGE * float(prm.b @ prm.b)
        if not self.grk:  # only differences matter: pin the mean of b at 0
            penalty += float(prm.b.sum()) ** 2
            grads[0] = grads[0] + 2 * prm.b.sum()
        if self.lowrank:
            gU = (
                self.Sa @ (ga[:, None] * z) + self.Sb @ (gb[:, None] * z)
            ) / n + self.alpha * prm.U
            gU *= self.mask[:, None]
            h = self.P @ (ga[:, None] * ua + gb[:, None] * ub)
            gV = self.X.T @ h / n + self.alpha * prm.V
            penalty += 0.5 * self.alpha * (float((prm.U**2).sum()) + float((prm.V**2).sum()))
            grads += [gU.ravel(), gV.ravel()]
        if self.grk:
            grads.append([ge.sum() / n])
            if self.lowrank:
                gg = self.X.T @ (self.P @ ge) / n + self.alpha * prm.g
                penalty += 0.5 * self.alpha * float(prm.g @ prm.g)
                grads.append(gg)
        return value + penalty, np.concatenate([np.asarray(g, float).ravel() for g in grads])

    def w_gradient(self, prm: Params) -> np.ndarray:
        """∂(mean NLL)/∂W at W = 0 (K × d): where a low-rank W should start from."""
        beta_a, beta_b = prm.b[self.a], prm.b[self.b]
        if self.grk:
            _, ga, gb, _ = grk_terms(beta_a, beta_b, np.full(self.n, prm.eta0), self.o)
        else:
            _, ga, gb = bt_terms(beta_a - beta_b, self.y)
        per_prompt = (self.Sa.multiply(ga) + self.Sb.multiply(gb)) @ self.P.T  # K × prompts
        return np.asarray(per_prompt @ self.X) / self.n

    def nll(self, prm: Params) -> np.ndarray:
        """Per-battle negative log-likelihood (no penalty)."""
        X = self.X
        beta = prm.betas(X)[self.p]
        ba, bb = beta[np.arange(self.n), self.a], beta[np.arange(self.n), self.b]
        if self.grk:
            return grk_terms(ba, bb, prm.eta(X)[self.p], self.o)[0]
        return bt_terms(ba - bb, self.y)[0]


def _fit(obj: Objective, start: Params, cfg: P2LConfig) -> tuple[Params, dict]:
    tol = {"gtol": cfg.gtol, "ftol": cfg.ftol} if obj.lowrank else {"gtol": 1e-9, "ftol": 1e-13}
    res = minimize(
        obj,
        obj.pack(start),
        args=(start,),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": cfg.max_iter, "maxcor": 20, **tol},
    )
    prm = obj.unpack(res.x, start)
    if obj.lowrank:
        prm.U[~obj.mask.astype(bool)] = 0.0
    return prm, {
        "iterations": int(res.nit),
        "converged": bool(res.success),
        "objective": float(res.fun),
    }


SPECTRAL_SIZE = 0.1  # ‖W‖_F of a restart


def spectral_start(
    obj: Objective, prm: Params, cfg: P2LConfig, size: float = SPECTRAL_SIZE
) -> Params:
    """U, V along the top singular directions of −∂L/∂W at W = 0 (the steepest low-rank
    descent), scaled to ‖W‖_F = ``size``: a start the optimiser cannot mistake for the
    saddle at W = 0, whatever the signal's strength."""
    G = -obj.w_gradient(replace(prm, U=np.zeros_like(prm.U)))
    G *= obj.mask[:, None]
    u, sv, vt = np.linalg.svd(G, full_matrices=False)
    r = cfg.rank
    if not sv[:1].any():
        return replace(prm, U=np.zeros_like(prm.U), V=start_params(obj.k, obj.d, cfg).V)
    w = np.sqrt(size * sv[:r] / np.linalg.norm(sv[:r]))
    U, V = np.zeros((obj.k, r)), np.zeros((obj.d, r))
    m = min(r, len(sv))
    U[:, :m], V[:, :m] = u[:, :m] * w[:m], vt[:m].T * w[:m]
    return replace(prm, U=U, V=V)


def start_params(k: int, d: int, cfg: P2LConfig, init: Params | None = None) -> Params:
    """A low-rank start: U = 0 (every model starts at W = 0) and a small seeded V (so
    the gradient in U is not zero), or ``init`` where given."""
    if init is not None:
        return replace(init, U=init.U.copy(), V=init.V.copy())
    rng = np.random.default_rng(cfg.seed)
    g = np.zeros(d) if cfg.loss == "grk" else None
    return Params(
        np.zeros(k), np.zeros((k, cfg.rank)), 0.01 * rng.standard_normal((d, cfg.rank)), 0.0, g
    )


@dataclass
class P2LFit:
    params: Params  # fitted on every battle at the chosen ridge
    marginal: Params  # W = 0 on every battle: the marginal board (nested baseline)
    holdout: Params  # fitted before the validation cut at the chosen ridge (router_eval)
    holdout_marginal: Params  # W = 0 before the cut
    alpha: float | None  # chosen ridge; None = W = 0 (the marginal board won)
    path: list[dict]  # per ridge: validation NLL, its standard error vs W = 0, iterations
    cut_tstamp: float  # validation battles are those at or after this time
    validation_rows: np.ndarray
    info: dict


def _se(diff: np.ndarray) -> float:
    return float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else math.inf


def fit_p2l(coded: Coded, cfg: P2LConfig, init: Params | None = None) -> P2LFit:
    """Ridge path on the latest training battles, the one-standard-error choice on the
    held-out latest ``validation_share`` of battles, then the final fit on all of them."""
    if coded.n < 10:
        raise P2LInputError(f"P2L needs battles to fit: got {coded.n}")
    k, d = len(coded.models), coded.X.shape[1]
    order = np.argsort(coded.tstamp, kind="stable")
    n_val = max(1, round(cfg.validation_share * coded.n))
    train, val = order[:-n_val], order[-n_val:]
    search = train[-cfg.max_search_battles :]
    seen = coded.model_battles(search) > 0
    val = np.sort(val[seen[coded.a[val]] & seen[coded.b[val]]])
    mask = (coded.model_battles(search) >= cfg.min_model_battles).astype(float)
    template = start_params(k, d, cfg, init)
    marg = Objective(coded, search, cfg, 0.0, False, mask)
    base, it = _fit(marg, replace(template, U=np.zeros_like(template.U)), cfg)
    val_obj = Objective(coded, val, cfg, 0.0, True, mask) if len(val) else None
    base_val = val_obj.nll(base) if val_obj else np.zeros(0)
    path = [
        {
            "alpha": None,
            "val_nll": float(base_val.mean()) if len(val) else math.nan,
            "se_vs_marginal": 0.0,
            **it,
        }
    ]
    fits: dict[float | None, Params] = {None: base}
    losses: dict[float | None, np.ndarray] = {None: base_val}
    current = replace(template, b=base.b.copy(), eta0=base.eta0)
    worse = 0
    for alpha in sorted(cfg.ridge_grid, reverse=True):
        if len(val) < cfg.min_validation_battles or not mask.any():
            break
        obj = Objective(coded, search, cfg, alpha, True, mask)
        # W = 0 is a stationary point of U Vᵀ and a W shrunk near it barely moves: restart
        # along the steepest low-rank direction whenever W is smaller than that start
        if np.linalg.norm(current.U @ current.V.T) < SPECTRAL_SIZE:
            current = spectral_start(obj, current, cfg)
        current, it = _fit(obj, current, cfg)
        fits[alpha] = current
        losses[alpha] = val_obj.nll(current)
        path.append(
            {
                "alpha": alpha,
                "val_nll": float(losses[alpha].mean()),
                "se_vs_marginal": _se(losses[alpha] - base_val),
                **it,
            }
        )
        best = min(v.mean() for v in losses.values())
        # past the minimum (two ridges in a row worse than the best, with W not shrunk to
        # 0, which is only the marginal board again): smaller ridges only overfit more
        worse = worse + 1 if losses[alpha].mean() > best + 1e-12 and not current.w_is_zero else 0
        if worse >= 2:
            break
    chosen = _one_se_choice(losses)
    if chosen is not None and fits[chosen].w_is_zero:
        chosen = None
    holdout = fits[chosen]
    n_search, n_all = len(search), coded.n
    rows = np.arange(n_all)
    mask_all = (coded.model_battles() >= cfg.min_model_battles).astype(float)
    marginal, _ = _fit(Objective(coded, rows, cfg, 0.0, False, mask_all), base, cfg)
    if chosen is None:
        final, it = marginal, {"iterations": 0, "converged": True, "objective": math.nan}
    else:  # the same total penalty on more battles: λ = α·n_search stays fixed
        final, it = _fit(
            Objective(coded, rows, cfg, chosen * n_search / n_all, True, mask_all), holdout, cfg
        )
    info = {
        "battles": n_all,
        "search_battles": n_search,
        "validation_battles": len(val),
        "final_fit": it,
        "models_with_w": int(mask_all.sum()),
    }
    return P2LFit(
        final, marginal, holdout, base, chosen, path, float(coded.tstamp[order[-n_val]]), val, info
    )


MIN_GAIN = 1e-4  # nats per battle: a smaller held-out gain is no reason to leave W = 0


def _one_se_choice(losses: dict[float | None, np.ndarray]) -> float | None:
    """The largest ridge (None = W = 0, the largest of all) whose validation NLL is within
    one standard error (and MIN_GAIN) of the best one's (paired over the same battles)."""
    best = min(losses, key=lambda a: losses[a].mean())
    order = [None] + sorted((a for a in losses if a is not None), reverse=True)
    for a in order:
        if losses[a].mean() <= losses[best].mean() + max(_se(losses[a] - losses[best]), MIN_GAIN):
            return a
    return best


def battle_nll(coded: Coded, rows: np.ndarray, prm: Params, cfg: P2LConfig) -> np.ndarray:
    """Per-battle NLL of ``prm`` on ``rows`` (the same likelihood the fit minimises)."""
    return Objective(coded, rows, cfg, 0.0, True, np.ones(len(coded.models))).nll(prm)


def side_a_probability(coded: Coded, rows: np.ndarray, prm: Params) -> np.ndarray:
    """P(side a wins) under bt (ties as half wins): σ(β_a(x) − β_b(x)) per battle."""
    from scipy.special import expit

    beta = prm.betas(coded.X[coded.prompt[rows]])
    i = np.arange(len(rows))
    return expit(beta[i, coded.a[rows]] - beta[i, coded.b[rows]])


@dataclass
class P2LModel:
    """A fitted P2L model: what p2l_model stores (``to_dict``) and routers and boards read."""

    models: list[str]
    features: FeatureSpace
    params: Params
    config: P2LConfig
    alpha: float | None
    holdout: Params | None = None
    meta: dict = field(default_factory=dict)

    def betas(self, X: np.ndarray) -> np.ndarray:
        return self.params.betas(X)

    def to_dict(self) -> dict:
        cfg = self.config
        return {
            "version": 1,
            "models": self.models,
            "features": self.features.to_dict(),
            "params": self.params.to_dict(),
            "holdout": None if self.holdout is None else self.holdout.to_dict(),
            "alpha": self.alpha,
            "loss": cfg.loss,
            "tie_mode": cfg.tie_mode,
            "rank": cfg.rank,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict) -> P2LModel:
        features = FeatureSpace.from_dict(d["features"])
        k, dim, rank = len(d["models"]), features.dim, int(d["rank"])
        cfg = P2LConfig(loss=d["loss"], tie_mode=d["tie_mode"], rank=rank)
        hold = None if d["holdout"] is None else Params.from_dict(d["holdout"], k, dim, rank)
        return cls(
            list(d["models"]),
            features,
            Params.from_dict(d["params"], k, dim, rank),
            cfg,
            d["alpha"],
            hold,
            dict(d.get("meta", {})),
        )


def map_params(prev: P2LModel, models: list[str], dim: int, cfg: P2LConfig) -> Params | None:
    """The previous month's parameters on this month's model list (warm start): known
    models keep b and their row of U; a new model starts at b = 0 and W's row = 0. None
    when the feature space or the rank differs (then the fit starts cold)."""
    if prev.features.dim != dim or prev.config.rank != cfg.rank or prev.config.loss != cfg.loss:
        return None
    pos = {m: i for i, m in enumerate(prev.models)}
    k = len(models)
    b, U = np.zeros(k), np.zeros((k, cfg.rank))
    for i, m in enumerate(models):
        if m in pos:
            b[i], U[i] = prev.params.b[pos[m]], prev.params.U[pos[m]]
    V = prev.params.V.copy() if np.any(prev.params.V) else start_params(k, dim, cfg).V
    g = None if prev.params.g is None else prev.params.g.copy()
    return Params(b, U, V, prev.params.eta0, g)
