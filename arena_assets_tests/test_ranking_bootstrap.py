"""Batched bootstrap on real-shaped battle graphs: every round equals a fit of
its own resample, whether its graph kept every edge of the full data, lost some edges but
stayed strongly connected, or lost a model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from arena_assets.ranking import FitOptions, fit_bt
from arena_assets.ranking.cells import Aggregated, encode_battles
from arena_assets.ranking.identify import rankable
from arena_assets.ranking.leaderboard import BOOTSTRAP_CHUNK
from arena_assets.ranking.newton import fit_pairs
from arena_assets.ranking.synthetic import graph_shape, sample_shaped_battles

FACTOR = 400 / math.log(10)


def round_by_round(agg: Aggregated, rounds: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """The reference: each round's draw (the same seeded chunks), its own strongly
    connected parts found by scipy, the largest (most models, then most battles, then the
    lowest model index) fitted alone by the line-searched solver; β mean 0 over it."""
    sizes = [min(BOOTSTRAP_CHUNK, rounds - s) for s in range(0, rounds, BOOTSTRAP_CHUNK)]
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))
    k = agg.n_models
    out, kinds = [], []
    for size, seq in zip(sizes, seeds):
        draw = (
            np.random.default_rng(seq)
            .multinomial(agg.n_battles, agg.counts.ravel() / agg.n_battles, size=size)
            .reshape(size, -1, 3)
        )
        for d in draw:
            won, lost = d[:, 0] + d[:, 2] > 0, d[:, 1] + d[:, 2] > 0
            full_won = agg.counts[:, 0] + agg.counts[:, 2] > 0
            full_lost = agg.counts[:, 1] + agg.counts[:, 2] > 0
            rows = np.concatenate([agg.left[won], agg.right[lost]])
            cols = np.concatenate([agg.right[won], agg.left[lost]])
            graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(k, k))
            _, label = connected_components(graph, directed=True, connection="strong")
            n = d.sum(axis=1)
            battles = np.bincount(agg.left, n, k) + np.bincount(agg.right, n, k)
            best = min(
                set(label),
                key=lambda c: (
                    -(label == c).sum(),
                    -battles[label == c].sum(),
                    np.flatnonzero(label == c)[0],
                ),
            )
            keep = label == best
            if keep.all():
                kinds.append(
                    "intact"
                    if (won >= full_won).all() and (lost >= full_lost).all()
                    else "edges_lost"
                )
            else:
                kinds.append("model_lost")
            beta = np.full(k, np.nan)
            cells = keep[agg.left] & keep[agg.right] & (n > 0)
            index = np.cumsum(keep) - 1
            beta[keep], _ = fit_pairs(
                index[agg.left[cells]],
                index[agg.right[cells]],
                n[cells].astype(float),
                d[cells, 0] + 0.5 * d[cells, 2],
                int(keep.sum()),
                tol=1e-13,
            )
            out.append(beta)
    return np.array(out), kinds


@pytest.mark.parametrize("shape, seed", [("arena", 3), ("rare", 1)])
def test_batched_rounds_equal_round_by_round_fits(shape: str, seed: int) -> None:
    battles = sample_shaped_battles(20_000, 20, seed, shape, rare_models=2)
    agg, left_out = rankable(encode_battles(battles).aggregate())
    assert not left_out
    board = fit_bt(battles, FitOptions(ci="bootstrap", bootstrap_rounds=120, seed=4))
    ref, kinds = round_by_round(agg, 120, 4)
    # the cases the batching has to get right are all present in this sample
    assert kinds.count("intact") < 60 and kinds.count("edges_lost") > 0
    if shape == "rare":
        assert kinds.count("model_lost") > 0
    raw = (board.bootstrap - board.bootstrap[:, :1]) / FACTOR  # β differences, any offset
    ref_diff = ref - ref[:, :1]
    assert np.array_equal(np.isnan(raw), np.isnan(ref_diff))
    done = ~np.isnan(ref_diff)
    assert np.abs(raw[done] - ref_diff[done]).max() * FACTOR < 1e-6  # rating points
    # hence the same intervals (rounds missing model 0 are compared through the ratings)
    for r in np.flatnonzero(np.isnan(ref[:, 0])):
        seen = ~np.isnan(ref[r])
        got = board.bootstrap[r, seen]
        want = FACTOR * ref[r, seen]
        assert np.abs((got - got.mean()) - (want - want.mean())).max() < 1e-6


def test_shapes_are_what_they_say() -> None:
    """The generator's arena shape at 1M battles / 100 models has a real month's pair figures
    (4,801 of 4,950 pairs met, 737 of them fewer than 5 times: ``ARENA_SHAPE``)."""
    arena = graph_shape(sample_shaped_battles(1_000_000, 100, 0, "arena"))
    assert 4_750 <= arena["pairs_met"] <= 4_850 and 650 <= arena["pairs_under_5"] <= 820
    lo, hi = arena["battles_per_model"]
    assert 20 <= hi / lo <= 40  # the real month's 900-25,000 range, scaled with the battles
    assert abs(arena["tie_share"] - 0.1) < 0.01 and abs(arena["bothbad_share"] - 0.1) < 0.01
    uniform = graph_shape(sample_shaped_battles(300_000, 100, 0, "uniform"))
    assert uniform["pairs_met"] == 4_950 and uniform["pairs_under_5"] == 0
    rare = graph_shape(sample_shaped_battles(100_000, 100, 0, "rare"))
    assert rare["battles_per_model"][0] < 50


def test_a_singular_newton_system_marks_only_its_own_row():
    """fit_batch's batched solve: one round whose Hessian became singular (a thin model's
    p(1-p) underflowed; found on a real month's category board) must not stop the batch:
    its row is NaN (fit_batch then restarts it with the line-searched solver), the other
    rows are solved as alone."""
    from arena_assets.ranking.newton import solve_rows

    good = np.array([[2.0, -1.0], [-1.0, 2.0]])
    h = np.stack([good, np.ones((2, 2)), 3 * good])
    grad = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 3.0]])
    out = solve_rows(h, grad)
    assert np.isnan(out[1]).all()
    assert np.allclose(out[0], np.linalg.solve(good, grad[0]))
    assert np.allclose(out[2], np.linalg.solve(3 * good, grad[2]))
