"""Bench-vs-human metrics: published Arena-Hard notebook figures and hand-built cases."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from arena_assets.cli import main
from arena_assets.judging.metrics import (
    agreement_with_confidence,
    bench_vs_human,
    brier_score,
    read_name_map,
    read_score_table,
    score_table,
    separability,
)


def _table(rows: list[tuple[str, float, float, float]], name: str = "t"):
    return score_table(
        pl.DataFrame(rows, schema=["model", "score", "lower", "upper"], orient="row"), name
    )


def test_separability_hand_built() -> None:
    # a [0,1], b [2,3] apart; c [2.5,4] overlaps b only; d = zero-width point inside c
    t = _table([("a", 0.5, 0, 1), ("b", 2.5, 2, 3), ("c", 3, 2.5, 4), ("d", 3.5, 3.5, 3.5)])
    s = separability(t)
    # pairs: ab ac ad apart; bc overlap; bd apart (3.5 > 3); cd overlap (point inside)
    assert (s["separated_pairs"], s["pairs"]) == (4, 6)
    touching = _table([("a", 1, 0, 1), ("b", 2, 1, 2)])
    assert separability(touching)["value"] == 1.0


def test_agreement_and_brier_hand_built() -> None:
    human = _table([("a", 1, 0, 2), ("b", 5, 4, 6), ("c", 9, 8, 10)])
    same = _table([("a", 10, 9, 11), ("b", 20, 19, 21), ("c", 30, 29, 31)])
    unsure = _table([("a", 10, 9, 25), ("b", 20, 19, 21), ("c", 30, 29, 31)])
    flipped = _table([("a", 30, 29, 31), ("b", 20, 19, 21), ("c", 10, 9, 11)])
    assert agreement_with_confidence(same, human)["value"] == 1.0
    # a-b unsure (0.5), a-c unsure? a [9,25] vs c [29,31] apart -> 1, b-c 1
    assert agreement_with_confidence(unsure, human)["value"] == pytest.approx(2.5 / 3)
    assert agreement_with_confidence(flipped, human)["value"] == 0.0
    # no bootstrap replicates: variance from the 95 % interval; far-apart scores -> ~0 / ~1
    assert brier_score(same, human)["value"] < 1e-6
    assert brier_score(flipped, human)["value"] > 0.999
    r = bench_vs_human(same, human)
    assert r["spearman"] == 1.0 and r["kendall"] == 1.0 and r["models"] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="shared"):
        bench_vs_human(_table([("x", 1, 0, 2), ("y", 2, 1, 3)]), human)


def test_brier_matches_the_pairwise_formula_with_degenerate_variances() -> None:
    """Every pair of models (sorted by name) forecast as P(i below j) = Phi(-(m_i - m_j) /
    sqrt(v_i + v_j)), a zero or unknown spread forecasting the sign alone; written here
    with math.erf, one pair at a time, on tables whose models come in different orders."""
    import math

    from arena_assets.judging.metrics import ScoreTable

    rng = np.random.default_rng(3)
    names = [f"m{k:02d}" for k in range(30)]
    mean, var, human = rng.normal(size=30), rng.uniform(0, 0.2, 30), rng.normal(size=30)
    var[::5], var[3] = 0.0, np.nan  # zero spread, and an unknown one
    mean[7] = mean[8]  # a tie: no spread between equal means forecasts "not below"
    var[7] = var[8] = 0.0
    order = rng.permutation(30)
    bench = ScoreTable(
        [names[k] for k in order],
        mean[order],
        mean[order],
        mean[order] - 1,
        mean[order] + 1,
        var[order],
        "bench",
    )
    people = ScoreTable(names, human, human, human - 1, human + 1, np.ones(30), "human")
    errors = []
    for i in range(30):
        for j in range(i + 1, 30):
            sd = math.sqrt(var[i] + var[j]) if not math.isnan(var[i] + var[j]) else float("nan")
            diff = mean[i] - mean[j]
            p = 0.5 * (1 + math.erf(-diff / (sd * math.sqrt(2)))) if sd > 0 else float(diff < 0)
            errors.append((p - float(human[i] < human[j])) ** 2)
    got = brier_score(bench, people)
    assert got["pairs"] == len(errors) == 435
    assert got["value"] == pytest.approx(sum(errors) / len(errors), rel=1e-12)


# figures printed in arena-hard-auto's notebook/benchmark_statistics.ipynb (commit bd52a78)
PUBLISHED = {
    "arena_hard": {
        "agreement": 0.903954802259887,
        "spearman": 0.932330827067669,
        "brier": 0.07047865504650436,
        "separability": 0.8421,
        "map": "arena_to_arena_hard",
    },
    "mt_bench": {
        "agreement": 0.6949152542372882,
        "spearman": 0.8932330827067668,
        "brier": 0.10082905842501223,
        "separability": 0.3632,
        "map": "arena_to_mt_bench",
    },
}


@pytest.mark.parametrize("bench", sorted(PUBLISHED))
def test_published_bench_metrics(real_data, bench: str) -> None:
    pub = real_data / "published"
    want = PUBLISHED[bench]
    result = bench_vs_human(
        read_score_table(pub / f"bootstrap_stats_{bench}.jsonl"),
        read_score_table(pub / "arena_leaderboard_20240329.csv"),
        read_name_map(pub / f"{want['map']}.json"),
    )
    assert result["n_models"] == 20
    assert result["agreement_with_confidence"]["value"] == pytest.approx(
        want["agreement"], abs=1e-12
    )
    assert result["spearman"] == pytest.approx(want["spearman"], abs=1e-12)
    assert result["brier"]["value"] == pytest.approx(want["brier"], abs=1e-9)
    assert result["separability_bench"]["value"] == pytest.approx(want["separability"], abs=1e-4)
    # the human board on the same 20 models: 16 overlapping pairs of 190 in the notebook
    assert result["separability_human"]["separated_pairs"] == 190 - 16


def test_published_separability_whole_tables(real_data) -> None:
    pub = real_data / "published"
    # notebook: Arena Hard 28 models 76 overlapping pairs; MT Bench 25 models 197; arena 76 / 258
    for name, overlaps in (
        ("bootstrap_stats_arena_hard.jsonl", 76),
        ("bootstrap_stats_mt_bench.jsonl", 197),
        ("arena_leaderboard_20240329.csv", 258),
    ):
        s = separability(read_score_table(pub / name))
        assert s["pairs"] - s["separated_pairs"] == overlaps, name


def test_variance_from_bootstrap_results(tmp_path) -> None:
    rows = [{"model": "a", "score": 1.0, "lower": 0.5, "upper": 1.5, "results": [0.0, 2.0]}]
    p = tmp_path / "b.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    t = read_score_table(p)
    assert t.variance[0] == pytest.approx(np.var([0.0, 2.0]))


def test_bench_metrics_cli(real_data, capsys) -> None:
    pub = real_data / "published"
    rc = main(
        [
            "bench-metrics",
            str(pub / "bootstrap_stats_arena_hard.jsonl"),
            str(pub / "arena_leaderboard_20240329.csv"),
            "--map",
            str(pub / "arena_to_arena_hard.json"),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    for name in ("separability_bench", "agreement_with_confidence", "spearman", "kendall", "brier"):
        assert f"{name}:" in out
    assert "agreement_with_confidence: 0.9040" in out and "models (20):" in out
    assert (
        main(
            [
                "bench-metrics",
                str(pub / "bootstrap_stats_arena_hard.jsonl"),
                str(pub / "arena_to_arena_hard.json"),
            ]
        )
        == 1
    )
