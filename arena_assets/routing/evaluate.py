"""Router evaluation as RouteLLM publishes it (``routellm/evals/evaluate.py``), and the
calibration figures of a P2L model.

A router gives each prompt a score ("strong win rate"); sending the prompts with a score at
or above a threshold to the strong model and the rest to the weak one gives one point
(share of strong calls, quality) per threshold. RouteLLM's thresholds are the quantile
edges of the scores (``pd.qcut(scores, num_results, retbins=True)``: num_results + 1 edges;
the last edge routes with ``>`` so that it sends nothing to the strong model). Then

- AUC  = trapezoid of quality over the strong share (as a fraction);
- APGR = (AUC − weak·span) / (strong·span − weak·span), span = the strong shares' range:
  the average share of the strong-minus-weak quality gap recovered;
- CPT(f) = the strong share at which the curve reaches weak + f·(strong − weak)
  (``np.interp`` of that quality along the curve), in percent.

A random router is averaged over ``iterations`` seeded runs, grouped by strong share, as
RouteLLM averages its random router (``--random-iters``, default 10). Quality per prompt
comes as two arrays: what the strong and the weak model score on it (MMLU/GSM8K
correctness, MT-Bench grade, or, for arena battles, the score of each side).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Curve:
    strong_pct: np.ndarray  # percent of prompts sent to the strong model, ascending
    quality: np.ndarray  # mean quality at that share


def threshold_curve(
    scores: np.ndarray, strong: np.ndarray, weak: np.ndarray, num_results: int = 10
) -> Curve:
    """One point per quantile edge of ``scores`` (duplicate edges kept, no error)."""
    scores = np.asarray(scores, float)
    edges = np.quantile(scores, np.linspace(0.0, 1.0, num_results + 1))
    pct, qual = [], []
    for i, thr in enumerate(edges):
        sel = scores > thr if i == len(edges) - 1 else scores >= thr
        pct.append(100.0 * sel.mean())
        qual.append(float(np.where(sel, strong, weak).mean()))
    return _sorted(np.array(pct), np.array(qual))


def _sorted(pct: np.ndarray, qual: np.ndarray) -> Curve:
    order = np.argsort(pct, kind="stable")
    return Curve(pct[order], qual[order])


def random_curve(
    strong: np.ndarray, weak: np.ndarray, num_results: int = 10, iterations: int = 10, seed: int = 0
) -> Curve:
    """The random router: uniform scores, ``iterations`` runs, mean quality per share."""
    rng = np.random.default_rng(seed)
    points: dict[float, list[float]] = {}
    for _ in range(iterations):
        c = threshold_curve(rng.random(len(strong)), strong, weak, num_results)
        for p, q in zip(c.strong_pct.tolist(), c.quality.tolist(), strict=True):
            points.setdefault(p, []).append(q)
    pct = np.array(sorted(points))
    return Curve(pct, np.array([np.mean(points[p]) for p in pct]))


def _trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2.0))


def apgr(curve: Curve, strong_quality: float, weak_quality: float) -> float:
    x = curve.strong_pct / 100.0
    auc = _trapezoid(curve.quality, x)
    span = float(x[-1] - x[0])
    gap = (strong_quality - weak_quality) * span
    return (auc - weak_quality * span) / gap if gap else float("nan")


def cpt(curve: Curve, fraction: float, strong_quality: float, weak_quality: float) -> float:
    """Percent of strong calls needed for ``fraction`` of the quality gap."""
    target = weak_quality + fraction * (strong_quality - weak_quality)
    return float(np.interp(target, curve.quality, curve.strong_pct))


@dataclass(frozen=True)
class RouterScore:
    router: str
    apgr: float
    cpt50: float
    cpt80: float
    auc: float
    prompts: int
    strong_quality: float  # mean quality of always calling the strong model
    weak_quality: float


def score_router(name: str, curve: Curve, strong: np.ndarray, weak: np.ndarray) -> RouterScore:
    s, w = float(np.mean(strong)), float(np.mean(weak))
    return RouterScore(
        name,
        apgr(curve, s, w),
        cpt(curve, 0.5, s, w),
        cpt(curve, 0.8, s, w),
        _trapezoid(curve.quality, curve.strong_pct / 100.0),
        len(strong),
        s,
        w,
    )


def evaluate_routers(
    scores: dict[str, np.ndarray],
    strong: np.ndarray,
    weak: np.ndarray,
    prompt_lengths: np.ndarray | None = None,
    *,
    num_results: int = 10,
    random_iterations: int = 10,
    seed: int = 0,
) -> list[RouterScore]:
    """``random``, ``length`` (when lengths are given: the longer prompt goes to the strong
    model) and every named score, each as RouteLLM scores a router."""
    strong, weak = np.asarray(strong, float), np.asarray(weak, float)
    out = [
        score_router(
            "random", random_curve(strong, weak, num_results, random_iterations, seed), strong, weak
        )
    ]
    if prompt_lengths is not None:
        out.append(
            score_router(
                "length", threshold_curve(prompt_lengths, strong, weak, num_results), strong, weak
            )
        )
    for name, s in scores.items():
        out.append(score_router(name, threshold_curve(s, strong, weak, num_results), strong, weak))
    return out


def log_loss(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-battle cross-entropy of P(a wins) = p against a's score y (1, ½, 0)."""
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return -(y * np.log(p) + (1 - y) * np.log1p(-p))


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Σ_bins (n_bin/n)·|mean y − mean p| over equal-width bins of p."""
    p, y = np.asarray(p, float), np.asarray(y, float)
    idx = np.minimum((p * bins).astype(int), bins - 1)
    n = np.bincount(idx, minlength=bins)
    sp, sy = np.bincount(idx, p, bins), np.bincount(idx, y, bins)
    used = n > 0
    return float(np.sum(np.abs(sy[used] - sp[used])) / len(p)) if len(p) else float("nan")
