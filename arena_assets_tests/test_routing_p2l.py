"""The P2L model's math: gradients, the nested marginal board, recovery of a planted
prompt effect, the null world, the GRK outcome model, and P2L's aggregation of a prompt
set checked against an independent implementation of the anchor's loss."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from arena_assets.ranking.cells import A_WINS, B_WINS, BOTHBAD, TIE
from arena_assets.ranking.leaderboard import fit_bt
from arena_assets.routing.aggregate import aggregate_board
from arena_assets.routing.outcomes import grk_probs, grk_terms
from arena_assets.routing.p2l import Coded, Objective, P2LConfig, Params, battle_nll, fit_p2l

WINNERS = {A_WINS: "model_a", B_WINS: "model_b", TIE: "tie", BOTHBAD: "tie (bothbad)"}


def planted(n=6000, k=6, d=5, n_prompts=2000, effect=0.8, seed=0, eta=0.4):
    """Battles from a GRK world with β(x) = b + W x (W rank 2, scaled by ``effect``)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_prompts, d))
    W = effect * rng.standard_normal((k, 2)) @ rng.standard_normal((2, d)) / np.sqrt(d)
    b = rng.standard_normal(k)
    p = rng.integers(0, n_prompts, n)
    a = rng.integers(0, k, n)
    bb = (a + rng.integers(1, k, n)) % k
    beta = b[None, :] + X @ W.T
    probs = grk_probs(beta[p, a], beta[p, bb], eta)
    o = (rng.random(n)[:, None] > probs.cumsum(axis=1)).sum(axis=1)
    coded = Coded([f"m{i}" for i in range(k)], a, bb, o, p, np.arange(n, dtype=float), X)
    return coded, beta


@pytest.mark.parametrize("loss", ["bt", "grk"])
def test_gradient_matches_finite_differences(loss):
    coded, _ = planted(n=800, n_prompts=300)
    k, d = 6, 5
    cfg = P2LConfig(loss=loss, rank=3, min_model_battles=1)
    obj = Objective(coded, np.arange(coded.n), cfg, 1e-2, True, np.ones(k))
    rng = np.random.default_rng(1)
    prm = Params(
        rng.standard_normal(k),
        0.3 * rng.standard_normal((k, 3)),
        0.3 * rng.standard_normal((d, 3)),
        0.2,
        0.1 * rng.standard_normal(d) if loss == "grk" else None,
    )
    theta = obj.pack(prm)
    value, grad = obj(theta, prm)
    num = np.empty_like(theta)
    for i in range(len(theta)):
        e = np.zeros_like(theta)
        e[i] = 1e-6
        num[i] = (obj(theta + e, prm)[0] - obj(theta - e, prm)[0]) / 2e-6
    assert np.isfinite(value)
    assert np.abs(num - grad).max() < 1e-6 * max(1.0, np.abs(grad).max())


def test_grk_probabilities_sum_to_one_and_match_the_anchor_formula():
    rng = np.random.default_rng(2)
    ba, bb, eta = rng.normal(size=50), rng.normal(size=50), rng.normal(size=50)
    p = grk_probs(ba, bb, eta)
    theta, A, B = np.exp(eta) + 1, np.exp(ba), np.exp(bb)  # P2L's get_bag_probs, written out
    assert np.allclose(p[:, 0], A / (A + theta * B + 1))
    assert np.allclose(p[:, 1], B / (B + theta * A + 1))
    assert np.allclose(p[:, 3], 1 / (1 + A + B))
    assert np.allclose(p.sum(axis=1), 1.0) and (p > 0).all()
    nll, *_ = grk_terms(ba, bb, eta, np.full(50, TIE))
    assert np.allclose(nll, -np.log(p[:, 2]))


def _frame(coded: Coded) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "model_a": [coded.models[i] for i in coded.a],
            "model_b": [coded.models[i] for i in coded.b],
            "winner": [WINNERS[int(o)] for o in coded.outcome],
        }
    )


def test_w_zero_is_the_marginal_board():
    """The nested baseline: with W = 0 the fit is the boards' Bradley-Terry fit (ties as
    half wins) on the same battles, to a hundredth of an Elo point."""
    coded, _ = planted(effect=0.0, n=4000)
    fit = fit_p2l(coded, P2LConfig(rank=2, min_model_battles=1))
    board = fit_bt(_frame(coded)).table.sort("model")
    ours = 400 / np.log(10) * (fit.marginal.b - fit.marginal.b.mean()) + 1000
    assert np.abs(ours - board["rating"].to_numpy()).max() < 0.01


def test_planted_prompt_effect_is_recovered_and_beats_the_marginal_board():
    coded, beta = planted(n=20000, effect=1.0, eta=0.3)
    cfg = P2LConfig(loss="bt", rank=2, min_model_battles=1)
    fit = fit_p2l(coded, cfg)
    assert fit.alpha is not None  # a ridge beat W = 0 on the held-out battles
    val = fit.validation_rows
    gain = battle_nll(coded, val, fit.holdout_marginal, cfg) - battle_nll(
        coded, val, fit.holdout, cfg
    )
    assert gain.mean() > 5 * gain.std() / np.sqrt(len(gain))
    hat = fit.params.betas(coded.X)
    rho = [np.corrcoef(h - h.mean(), t - t.mean())[0, 1] for h, t in zip(hat[:300], beta[:300])]
    assert np.median(rho) > 0.9


def test_null_world_keeps_w_at_zero():
    """No prompt effect: the one-standard-error rule keeps the marginal board."""
    for seed in range(3):
        coded, _ = planted(n=6000, effect=0.0, seed=seed)
        assert fit_p2l(coded, P2LConfig(rank=3, min_model_battles=1)).alpha is None


def test_grk_fit_recovers_level_and_tie_parameter():
    coded, beta = planted(n=30000, effect=0.0, eta=0.5)
    fit = fit_p2l(coded, P2LConfig(loss="grk", rank=2, min_model_battles=1))
    truth = beta[0]  # no prompt effect: every row is b
    assert np.abs(fit.marginal.b - truth).max() < 0.15  # GRK's β has an absolute level
    assert abs(fit.marginal.eta0 - 0.5) < 0.15


def test_models_below_the_minimum_keep_w_at_zero():
    coded, _ = planted(n=20000, effect=1.0)
    rare = coded.model_battles() < 0  # none yet: make model 0 rare by dropping its battles
    keep = ~(((coded.a == 0) | (coded.b == 0)) & (np.arange(coded.n) % 20 != 0))
    c2 = Coded(
        coded.models,
        coded.a[keep],
        coded.b[keep],
        coded.outcome[keep],
        coded.prompt[keep],
        coded.tstamp[keep],
        coded.X,
    )
    fit = fit_p2l(c2, P2LConfig(rank=2, min_model_battles=int(c2.model_battles()[0]) + 1))
    assert not rare.any() and fit.alpha is not None
    assert np.all(fit.params.U[0] == 0) and np.any(fit.params.U[1:])


# -- aggregation: an independent implementation of P2L's pairwise losses -----------------
def _anchor_bt_aggregate(betas: np.ndarray) -> np.ndarray:
    """P2L's pairwise_batch_BT_loss: mean over prompts and pairs i<j of the cross-entropy
    between σ(β_i − β_j) per prompt and σ(r_i − r_j), minimised over r (numeric gradient)."""
    k = betas.shape[1]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    true = np.stack([expit(betas[:, i] - betas[:, j]) for i, j in pairs], axis=1)

    def loss(r):
        pred = np.array([expit(r[i] - r[j]) for i, j in pairs])
        return float(-(true * np.log(pred) + (1 - true) * np.log(1 - pred)).mean())

    r = minimize(loss, np.zeros(k), method="BFGS", options={"gtol": 1e-10}).x
    return r - r.mean()


def _anchor_grk_aggregate(betas: np.ndarray, etas: np.ndarray) -> np.ndarray:
    """P2L's pairwise_batch_bag_loss: four-outcome cross-entropy, aggregated η."""
    k = betas.shape[1]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]

    def probs(bi, bj, eta):
        theta, A, B = np.exp(eta) + 1, np.exp(bi), np.exp(bj)
        pw, pl_, pbb = A / (A + theta * B + 1), B / (B + theta * A + 1), 1 / (1 + A + B)
        return np.stack([pw, pl_, 1 - pw - pl_ - pbb, pbb], axis=-1)

    true = np.stack([probs(betas[:, i], betas[:, j], etas) for i, j in pairs], axis=1)

    def loss(theta):
        r, eta = theta[:k], theta[k]
        pred = np.stack([probs(r[i], r[j], eta) for i, j in pairs])
        return float(-(true * np.log(pred)).sum(axis=-1).mean())

    return minimize(loss, np.zeros(k + 1), method="BFGS", options={"gtol": 1e-10}).x[:k]


def test_bt_aggregation_matches_the_anchor_loss():
    rng = np.random.default_rng(5)
    betas = rng.normal(size=(40, 5)) + rng.normal(size=5)
    ours = aggregate_board(betas, rounds=0).ratings
    assert np.abs(ours - _anchor_bt_aggregate(betas)).max() < 1e-4


def test_grk_aggregation_matches_the_anchor_loss():
    rng = np.random.default_rng(6)
    betas, etas = rng.normal(size=(30, 4)), rng.normal(0.3, 0.2, size=30)
    ours = aggregate_board(betas, loss="grk", etas=etas, rounds=0).ratings
    assert np.abs(ours - _anchor_grk_aggregate(betas, etas)).max() < 1e-3


def test_two_model_bt_aggregate_is_the_logit_of_the_mean_probability():
    """By hand: with two models the set's gap is logit(mean_t σ(β₁(x_t) − β₀(x_t))), which
    is not the mean gap (Jensen): a set of one-sided prompts is not its average prompt."""
    gaps = np.array([-2.0, 0.5, 3.0])
    betas = np.stack([np.zeros(3), gaps], axis=1)
    r = aggregate_board(betas, rounds=0).ratings
    pbar = expit(gaps).mean()
    assert r[1] - r[0] == pytest.approx(np.log(pbar / (1 - pbar)), abs=1e-6)
    assert abs((r[1] - r[0]) - gaps.mean()) > 0.1


def test_grk_aggregate_of_one_prompt_is_that_prompt():
    """One prompt: its four-outcome probabilities are exactly a GRK model's, so the fit
    returns its β (GRK's β has an absolute level) and η."""
    beta, eta = np.array([[0.3, -0.4, 1.1]]), np.array([0.7])
    r = aggregate_board(beta, loss="grk", etas=eta, rounds=0).ratings
    assert np.abs(r - beta[0]).max() < 1e-4


def test_aggregation_bootstrap_is_seeded_and_brackets_the_point():
    rng = np.random.default_rng(7)
    betas = rng.normal(size=(200, 6)) * [1, 1, 1, 2, 2, 2] + np.arange(6) * 0.3
    one = aggregate_board(betas, rounds=50, seed=3)
    two = aggregate_board(betas, rounds=50, seed=3)
    assert np.array_equal(one.boot, two.boot)
    lo, hi = np.quantile(one.boot, [0.025, 0.975], axis=0)
    assert ((lo <= one.ratings + 1e-9) & (one.ratings <= hi + 1e-9)).all()
    assert (hi - lo).min() > 0


def test_each_bootstrap_round_is_the_anchor_aggregate_of_its_resampled_prompts():
    """The rounds are fitted in one batch; each must still be P2L's BT aggregate of the
    prompts its resample drew (the same multinomial draw, repeated prompts repeated)."""
    rng = np.random.default_rng(11)
    betas = rng.normal(size=(25, 5)) + rng.normal(size=5)
    board = aggregate_board(betas, rounds=4, seed=9)
    draw = np.random.default_rng(9)  # aggregate_board's own stream: no subsample (25 < cap)
    counts = draw.multinomial(25, np.full(25, 1 / 25), size=4)
    for r in range(4):
        resampled = np.repeat(betas, counts[r], axis=0)
        assert np.abs(board.boot[r] - _anchor_bt_aggregate(resampled)).max() < 1e-4
