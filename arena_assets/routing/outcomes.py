"""Per-battle outcome models: their probabilities, negative log-likelihoods and gradients.

Two models, as in lmarena/p2l (``p2l/model.py``):

- ``bt``: Bradley-Terry on the score of side a, P(a beats b) = σ(β_a − β_b), with the
  arena boards' tie handling (``ranking.cells.TIES_KEPT``): a kept tie (or "both bad")
  counts as half a win for each side, a dropped one is not a battle at all.
- ``grk``: the grounded Rao-Kupper model of the four outcomes ("bag" in P2L). With
  A = e^β_a, B = e^β_b, θ = 1 + e^η (η: the tie parameter):

      P(a)        = A / (A + θB + 1)
      P(b)        = B / (B + θA + 1)
      P(both bad) = 1 / (1 + A + B)
      P(tie)      = 1 − P(a) − P(b) − P(both bad)   (> 0 whenever θ > 1)

  The constant 1 grounds the scale: β has an absolute level (a pair of weak models is
  more often "both bad"), unlike Bradley-Terry where only differences matter.

Each ``*_terms`` function returns (nll, d nll/dβ_a, d nll/dβ_b[, d nll/dη]) per battle.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from arena_assets.ranking.cells import A_WINS, B_WINS, BOTHBAD, TIE

TIE_FLOOR = 1e-12  # P(tie) is a difference of probabilities: keep its log finite


def bt_terms(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """s = β_a − β_b, y = score of side a (1, ½, 0)."""
    nll = np.logaddexp(0.0, s) - y * s
    g = expit(s) - y
    return nll, g, -g


def grk_probs(beta_a: np.ndarray, beta_b: np.ndarray, eta: np.ndarray | float) -> np.ndarray:
    """(…, 4) probabilities of (a wins, b wins, tie, both bad)."""
    log_theta = np.logaddexp(0.0, eta)  # log(1 + e^η)
    pa = np.exp(beta_a - np.logaddexp(np.logaddexp(beta_a, log_theta + beta_b), 0.0))
    pb = np.exp(beta_b - np.logaddexp(np.logaddexp(beta_b, log_theta + beta_a), 0.0))
    pbb = np.exp(-np.logaddexp(np.logaddexp(beta_a, beta_b), 0.0))
    pt = np.maximum(1.0 - pa - pb - pbb, TIE_FLOOR)
    return np.stack(np.broadcast_arrays(pa, pb, pt, pbb), axis=-1)


def grk_terms(beta_a: np.ndarray, beta_b: np.ndarray, eta: np.ndarray, outcome: np.ndarray):
    """nll and its derivatives in β_a, β_b and η for coded outcomes (ranking.cells codes)."""
    log_theta = np.logaddexp(0.0, eta)
    theta = np.exp(log_theta)
    e_eta = theta - 1.0  # dθ/dη
    ea, eb = np.exp(beta_a), np.exp(beta_b)
    # P(a): log = β_a − log D_a, D_a = A + θB + 1 (derivatives of log P(a) below)
    log_da = np.logaddexp(np.logaddexp(beta_a, log_theta + beta_b), 0.0)
    da = np.exp(log_da)
    lpa = beta_a - log_da
    ga_a, ga_b, ga_e = 1.0 - ea / da, -theta * eb / da, -e_eta * eb / da
    log_db = np.logaddexp(np.logaddexp(beta_b, log_theta + beta_a), 0.0)
    db = np.exp(log_db)
    lpb = beta_b - log_db
    gb_a, gb_b, gb_e = -theta * ea / db, 1.0 - eb / db, -e_eta * ea / db
    log_dn = np.logaddexp(np.logaddexp(beta_a, beta_b), 0.0)
    dn = np.exp(log_dn)
    lpn = -log_dn
    gn_a, gn_b = -ea / dn, -eb / dn
    pa, pb, pn = np.exp(lpa), np.exp(lpb), np.exp(lpn)
    pt_raw = 1.0 - pa - pb - pn
    pt = np.maximum(pt_raw, TIE_FLOOR)
    # d log P(tie) = −(P(a) d log P(a) + P(b) d log P(b) + P(bb) d log P(bb)) / P(tie)
    gt_a = -(pa * ga_a + pb * gb_a + pn * gn_a) / pt
    gt_b = -(pa * ga_b + pb * gb_b + pn * gn_b) / pt
    gt_e = -(pa * ga_e + pb * gb_e) / pt
    o = outcome
    logp = np.select([o == A_WINS, o == B_WINS, o == TIE], [lpa, lpb, np.log(pt)], lpn)
    d_a = np.select([o == A_WINS, o == B_WINS, o == TIE], [ga_a, gb_a, gt_a], gn_a)
    d_b = np.select([o == A_WINS, o == B_WINS, o == TIE], [ga_b, gb_b, gt_b], gn_b)
    d_e = np.select([o == A_WINS, o == B_WINS, o == TIE], [ga_e, gb_e, gt_e], 0.0)
    return -logp, -d_a, -d_b, -d_e


def score_of_a(outcome: np.ndarray) -> np.ndarray:
    """Side a's score for the bt model: 1 win, 0 loss, ½ tie or both bad."""
    return np.where(outcome == A_WINS, 1.0, np.where(outcome == B_WINS, 0.0, 0.5))


__all__ = ["A_WINS", "BOTHBAD", "B_WINS", "TIE", "bt_terms", "grk_probs", "grk_terms", "score_of_a"]
