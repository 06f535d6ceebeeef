"""Router evaluation (RouteLLM's APGR / CPT, checked against an independent implementation
of its evaluate.py and, where the files are present, its published evaluation files),
the anchor's LP router against scipy's LP solver, RouteLLM's tiers against brute force."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

from arena_assets.routing.evaluate import (
    apgr,
    cpt,
    evaluate_routers,
    expected_calibration_error,
    log_loss,
    random_curve,
    threshold_curve,
)
from arena_assets.routing.router import (
    Unfulfillable,
    lp_distribution,
    lp_route,
    router_rows,
    win_scores,
)
from arena_assets.routing.tiers import compute_tiers


def _routellm_metrics(scores, strong, weak, num_results=10):
    """RouteLLM's evaluate.py written out: pd.qcut thresholds, '>=' except the last edge
    ('>'), np.trapz AUC over strong share / 100, APGR, CPT by np.interp."""
    _, thresholds = pd.qcut(scores, num_results, retbins=True)
    rows = []
    for i, thr in enumerate(thresholds):
        sel = scores >= thr if i != len(thresholds) - 1 else scores > thr
        rows.append({"pct": sel.mean() * 100, "acc": np.where(sel, strong, weak).mean()})
    df = pd.DataFrame(rows).sort_values("pct")
    x = df["pct"].to_numpy() / 100
    auc = np.trapezoid(df["acc"].to_numpy(), x)
    s, w = strong.mean(), weak.mean()
    weak_auc = np.trapezoid(np.full(len(x), w), x)
    strong_auc = np.trapezoid(np.full(len(x), s), x)
    cpt50 = np.interp(0.5 * (s - w) + w, df["acc"].to_numpy(), df["pct"].to_numpy())
    return (auc - weak_auc) / (strong_auc - weak_auc), cpt50


def test_apgr_and_cpt_match_routellm_formula():
    rng = np.random.default_rng(0)
    n = 3000
    difficulty = rng.random(n)
    strong = (rng.random(n) > 0.2 * difficulty).astype(float)
    weak = (rng.random(n) > 0.9 * difficulty).astype(float)
    score = difficulty + 0.3 * rng.standard_normal(n)
    curve = threshold_curve(score, strong, weak)
    ref_apgr, ref_cpt = _routellm_metrics(score, strong, weak)
    assert apgr(curve, strong.mean(), weak.mean()) == pytest.approx(ref_apgr, abs=1e-12)
    assert cpt(curve, 0.5, strong.mean(), weak.mean()) == pytest.approx(ref_cpt, abs=1e-9)
    assert apgr(curve, strong.mean(), weak.mean()) > 0.55  # an informative score helps


def test_apgr_and_cpt_on_a_hand_worked_case():
    """Four prompts, two quantile bins: edges 0.1, 0.5, 0.9 -> (100 %, 0.75), (50 %, 0.75),
    (0 %, 0.25) by hand; AUC = 0.625, APGR = (0.625 - 0.25) / (0.75 - 0.25) = 0.75;
    CPT(50 %) = interp(0.5) = 25 %, CPT(80 %) = interp(0.65) = 40 %."""
    strong, weak = np.array([1.0, 1, 1, 0]), np.array([0.0, 0, 1, 0])
    scores = np.array([0.9, 0.8, 0.1, 0.2])
    curve = threshold_curve(scores, strong, weak, num_results=2)
    assert curve.strong_pct.tolist() == [0.0, 50.0, 100.0]
    assert curve.quality.tolist() == [0.25, 0.75, 0.75]
    assert apgr(curve, 0.75, 0.25) == pytest.approx(0.75, abs=1e-12)
    assert cpt(curve, 0.5, 0.75, 0.25) == pytest.approx(25.0, abs=1e-12)
    assert cpt(curve, 0.8, 0.75, 0.25) == pytest.approx(40.0, abs=1e-12)


def test_expected_calibration_error_by_hand():
    """Bins of width 0.1: {0.15, 0.15} with outcomes {1, 0} -> |0.5 - 0.15| = 0.35 on 2 of
    4; {0.95, 0.95} with {1, 1} -> 0.05 on 2 of 4: ECE = (0.7 + 0.1) / 4 = 0.2."""
    p, y = np.array([0.15, 0.15, 0.95, 0.95]), np.array([1.0, 0, 1, 1])
    assert expected_calibration_error(p, y) == pytest.approx(0.2, abs=1e-12)
    assert log_loss(np.array([0.5]), np.array([1.0]))[0] == pytest.approx(np.log(2))


def test_random_router_recovers_half_the_gap():
    rng = np.random.default_rng(1)
    strong, weak = (rng.random(5000) < 0.8).astype(float), (rng.random(5000) < 0.6).astype(float)
    curve = random_curve(strong, weak, iterations=50, seed=0)
    assert apgr(curve, strong.mean(), weak.mean()) == pytest.approx(0.5, abs=0.02)
    # an oracle (route exactly the prompts where strong beats weak) is near the top
    oracle = threshold_curve(strong - weak + 1e-6 * rng.random(5000), strong, weak)
    assert apgr(oracle, strong.mean(), weak.mean()) > 0.75


ROUTELLM = os.environ.get("ROUTELLM_DIR", "")


@pytest.fixture
def routellm_files():
    """A checkout (or bare git mirror) of lm-sys/RouteLLM named by ROUTELLM_DIR; skips
    when absent. The files are never copied into this project."""
    if not ROUTELLM or not Path(ROUTELLM).exists():
        pytest.skip("set ROUTELLM_DIR to a lm-sys/RouteLLM checkout to run this test")
    from arena_assets.routing.routellm_files import RouteLLMFiles

    return RouteLLMFiles(ROUTELLM)


@pytest.mark.parametrize("bench", ["gsm8k", "mmlu", "mt-bench"])
def test_published_files_give_random_half_and_length_056_060(routellm_files, bench):
    b = routellm_files.benchmark(bench)
    lengths = np.array([len(p) for p in b.prompts], float)
    scores = {
        r.router: r for r in evaluate_routers({}, b.strong, b.weak, lengths, random_iterations=200)
    }
    assert scores["random"].apgr == pytest.approx(0.50, abs=0.02)
    assert 0.55 <= scores["length"].apgr <= 0.60
    ref, _ = _routellm_metrics(lengths + 1e-9 * np.arange(len(lengths)), b.strong, b.weak)
    assert scores["length"].apgr == pytest.approx(ref, abs=0.01)


def test_lp_distribution_is_the_lp_optimum():
    rng = np.random.default_rng(2)
    for _ in range(200):
        k = int(rng.integers(2, 8))
        scores, costs = rng.random(k), rng.random(k) * 10
        budget = float(rng.uniform(costs.min(), costs.max() + 1))
        p = lp_distribution(scores, costs, budget)
        ref = linprog(
            -scores,
            A_ub=costs[None, :],
            b_ub=[budget],
            A_eq=np.ones((1, k)),
            b_eq=[1],
            bounds=[(0, None)] * k,
            method="highs",
        )
        assert ref.status == 0
        assert p @ scores == pytest.approx(-ref.fun, abs=1e-9)
        assert p @ costs <= budget + 1e-9 and p.sum() == pytest.approx(1) and (p >= 0).all()
        assert (p > 0).sum() <= 2
    with pytest.raises(Unfulfillable):
        lp_distribution(np.ones(3), np.array([2.0, 3.0, 4.0]), 1.0)


def test_lp_route_is_seeded_and_win_scores_are_win_rates():
    rng = np.random.default_rng(3)
    betas = rng.normal(size=(50, 4))
    q = np.array([0.4, 0.3, 0.2, 0.1])
    s = win_scores(betas, q)
    i = 7
    manual = [
        sum(q[j] / (1 + np.exp(-(betas[i, m] - betas[i, j]))) for j in range(4)) for m in range(4)
    ]
    assert np.allclose(s[i], manual)
    costs = np.array([1.0, 2.0, 4.0, 8.0])
    one, two = lp_route(betas, costs, 3.0, q, seed=5), lp_route(betas, costs, 3.0, q, seed=5)
    assert np.array_equal(one[0], two[0])
    spent = (one[1] * costs).sum(axis=1)
    # a mix spends the budget exactly; a single model stays within it
    assert (np.isclose(spent, 3.0) | ((one[1].max(axis=1) == 1) & (spent <= 3.0))).all()
    assert (one[1][np.arange(50), one[0]] > 0).all()  # the draw picks a model of the mix


def test_router_rows_budgets_and_unpriced_models():
    rng = np.random.default_rng(4)
    models = ["a", "b", "c", "d"]
    betas = rng.normal(size=(100, 4)) + [0, 0.5, 1.0, 1.5]
    rows = router_rows(models, betas, np.full(4, 0.25), {"a": 1.0, "b": 2.0, "c": 4.0}, [1.5, 3.0])
    argmax = [r for r in rows if r["policy"] == "argmax"]
    assert sum(r["share"] for r in argmax) == pytest.approx(1.0) and len(argmax) == 4
    for budget in (1.5, 3.0):
        lp = [r for r in rows if r["policy"] == "lp" and r["budget"] == budget]
        assert {r["model"] for r in lp} == {"a", "b", "c"}  # d has no price: not routable
        assert lp[0]["expected_cost"] <= budget + 1e-9
        strict = [r for r in rows if r["policy"] == "strict" and r["budget"] == budget]
        assert lp[0]["expected_win_rate"] >= strict[0]["expected_win_rate"] - 1e-12


def test_tiers_minimise_within_tier_variance():
    rng = np.random.default_rng(5)
    for _ in range(40):
        n, t = int(rng.integers(2, 8)), int(rng.integers(1, 5))
        ratings = rng.normal(1000, 100, n)
        tiers = compute_tiers([str(i) for i in range(n)], ratings, t)
        ours = sum(
            np.var([ratings[int(m)] for m, v in tiers.items() if v == g])
            for g in set(tiers.values())
        )
        order = np.sort(ratings)[::-1]
        best = min(
            sum(np.var(order[b[g] : b[g + 1]]) for g in range(len(b) - 1))
            for cuts in itertools.combinations(range(1, n), min(t, n) - 1)
            for b in [[0, *cuts, n]]
        )
        assert ours == pytest.approx(best, abs=1e-9)
        assert tiers[str(int(np.argmax(ratings)))] == 0
