"""The simulated answers and judge (arena_assets.simulator.judge) through the protocol."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from scipy import stats

from arena_assets.judging.summary import bias_report, bt_leaderboard, pairwise_summary
from arena_assets.judging.verdicts import (
    game_positions,
    judgment_frame,
    parse_rating,
    parse_verdict,
)
from arena_assets.simulator.judge import (
    JudgeBias,
    answer_quality,
    judge_rating,
    judge_verdict,
    simulate_answer,
)

KEY = b"endpoint-secret"
SKILLS = {"base": 0.0, "m-strong": 180.0, "m-good": 90.0, "m-weak": -90.0, "m-poor": -180.0}
STYLE = {
    "base": (1.0, 0.3),
    "m-strong": (0.7, 0.2),
    "m-good": (1.6, 0.9),
    "m-weak": (1.0, 0.5),
    "m-poor": (2.0, 0.8),
}  # (verbosity, markdown)


def _answers(n_prompts: int = 150, criteria: int | None = None) -> dict:
    out = {}
    for q in range(n_prompts):
        c = criteria if criteria is not None else 1 + q % 7
        for m, s in SKILLS.items():
            v, md = STYLE[m]
            out[(f"q{q}", m)] = (
                c,
                simulate_answer(
                    key=KEY,
                    model=m,
                    prompt=f"prompt {q}",
                    skill_elo=s,
                    criteria=c,
                    verbosity=v,
                    markdown=md,
                ),
            )
    return out


def _judge(answers: dict, bias: JudgeBias) -> pl.DataFrame:
    rows = []
    questions = sorted({q for q, _ in answers})
    for q in questions:
        for m in SKILLS:
            if m == "base":
                continue
            for g, a, b in game_positions(m, "base"):
                text, _ = judge_verdict(
                    key=KEY,
                    question=q,
                    answer_a=answers[(q, a)][1].text,
                    answer_b=answers[(q, b)][1].text,
                    bias=bias,
                )
                rows.append(
                    {
                        "question_id": q,
                        "model": m,
                        "baseline": "base",
                        "judge": "sim",
                        "game": g,
                        "model_a": a,
                        "model_b": b,
                        "judgment": text,
                        "verdict": parse_verdict(text),
                    }
                )
    return judgment_frame(rows)


def _lengths(answers: dict) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {"question_id": q, "model": m, "tokens": len(a.text.split())}
            for (q, m), (_, a) in answers.items()
        ]
    )


def test_hidden_quality_needs_the_key() -> None:
    a = simulate_answer(key=KEY, model="m", prompt="p", skill_elo=100, criteria=6)
    again = simulate_answer(key=KEY, model="m", prompt="p", skill_elo=100, criteria=6)
    assert a == again
    assert answer_quality(a.text, KEY) == pytest.approx(a.quality, abs=1e-5)
    assert answer_quality(a.text, b"another key") is None
    assert f"{a.quality:.2f}" not in a.text
    tag_at = a.text.rindex("[ref:") + 5
    flipped = (
        a.text[: tag_at + 14] + ("0" if a.text[tag_at + 14] != "0" else "1") + a.text[tag_at + 15 :]
    )
    assert answer_quality(flipped, KEY) is None
    assert parse_rating(judge_rating(key=KEY, question="p", answer=a.text)) in range(1, 11)


def test_protocol_recovers_skills_and_cancels_position_bias() -> None:
    answers = _answers()
    fair = _judge(answers, JudgeBias())
    biased = _judge(answers, JudgeBias(position_bias=0.3))
    rep_fair, rep_biased = bias_report(fair), bias_report(biased)
    # the planted bias shows: A wins far more often and the swapped games disagree more
    assert rep_biased["a_win_share"] > 0.58 > rep_fair["a_win_share"] > 0.42
    assert rep_biased["flip_rate"] > rep_fair["flip_rate"] + 0.05
    assert rep_fair["parse_failure_rate"] == 0.0
    # both position orders pooled: each model's win rates agree within their intervals
    s_fair = pairwise_summary(fair, rounds=200, seed=1).sort("model")
    s_biased = pairwise_summary(biased, rounds=200, seed=1).sort("model")
    one_order = pairwise_summary(biased.filter(pl.col("game") == 2), rounds=0).sort("model")
    outside = 0
    for f, b, g in zip(
        s_fair.iter_rows(named=True), s_biased.iter_rows(named=True), one_order["win_rate"]
    ):
        assert f["lower"] < b["upper"] and b["lower"] < f["upper"], f["model"]
        outside += not f["lower"] <= g <= f["upper"]
    # judged in one order only (candidate always A) the bias would show for most models
    assert outside >= 3
    truth = [SKILLS[m] for m in s_fair["model"]]
    assert stats.spearmanr(s_fair["win_rate"], truth).statistic == pytest.approx(1.0)
    board = bt_leaderboard(fair, rounds=50, seed=0)
    rating = dict(zip(board.table["model"], board.table["rating"]))
    assert stats.spearmanr(
        [rating[m] for m in SKILLS], list(SKILLS.values())
    ).statistic == pytest.approx(1.0)


def test_length_bias_shows_in_the_report() -> None:
    answers = _answers(100)
    plain = bias_report(_judge(answers, JudgeBias()), _lengths(answers))
    long_fond = bias_report(
        _judge(answers, JudgeBias(length_bias=1.5, length_scale=150)), _lengths(answers)
    )
    assert long_fond["length_correlation"] > plain["length_correlation"] + 0.15


def test_hard_prompts_separate_models_more() -> None:
    spreads = {}
    for c in (1, 7):
        s = pairwise_summary(_judge(_answers(80, criteria=c), JudgeBias()), rounds=0)
        spreads[c] = float(np.ptp(s["win_rate"].to_numpy()))
    assert spreads[7] > spreads[1] + 0.1


def test_style_control_removes_planted_length_bias() -> None:
    from arena_assets.judging.answers import answer_features
    from arena_assets.judging.summary import style_controlled_leaderboard

    answers = _answers(150)
    feats = answer_features(
        pl.DataFrame(
            [
                {"question_id": q, "model": m, "answer": a.text, "reasoning": ""}
                for (q, m), (_, a) in answers.items()
            ]
        )
    )
    truth = list(SKILLS.values())

    def order_fit(board) -> float:
        rating = dict(zip(board.table["model"], board.table["rating"]))
        return stats.spearmanr([rating[m] for m in SKILLS], truth).statistic

    fair = _judge(answers, JudgeBias())
    fond = _judge(answers, JudgeBias(length_bias=1.5, length_scale=150))
    length = {}
    for name, games in (("fair", fair), ("fond", fond)):
        styled = style_controlled_leaderboard(games, feats)
        row = styled.coefficients.filter(pl.col("feature") == "sum_assistant_tokens").row(
            0, named=True
        )
        length[name] = row
        assert order_fit(styled) == pytest.approx(1.0), name
    assert length["fair"]["lower"] < 0 < length["fair"]["upper"]
    assert length["fond"]["lower"] > 0.5
    # without style control the verbose models overtake: the order breaks
    assert order_fit(bt_leaderboard(fond, rounds=0)) < 0.9


def test_bench_metrics_on_our_own_tables(tmp_path, capsys) -> None:
    """Judge win rates (published bootstrap layout) against a human BT board, via the CLI."""
    from arena_assets.cli import main
    from arena_assets.judging.metrics import (
        bench_vs_human,
        leaderboard_score_table,
        read_score_table,
        write_bootstrap_stats,
    )
    from arena_assets.ranking import fit_bt, sample_bt_battles

    games = _judge(_answers(120), JudgeBias(position_bias=0.2))
    summary = pairwise_summary(games, rounds=100, include_baseline=True, keep_bootstrap=True)
    assert (
        summary.height == len(SKILLS)
        and summary.filter(pl.col("model") == "base")["lower"][0] == 0.5
    )
    bench_path = tmp_path / "bench.jsonl"
    write_bootstrap_stats(summary, bench_path)
    human_board = fit_bt(
        sample_bt_battles(SKILLS, 6000, seed=3), ci="bootstrap", bootstrap_rounds=50, seed=0
    )
    human_path = tmp_path / "human.parquet"
    human_board.table.write_parquet(human_path)
    from_file = bench_vs_human(read_score_table(bench_path), read_score_table(human_path))
    in_memory = bench_vs_human(read_score_table(bench_path), leaderboard_score_table(human_board))
    assert from_file["spearman"] == in_memory["spearman"] == pytest.approx(1.0)
    assert from_file["agreement_with_confidence"]["value"] == 1.0
    assert from_file["brier"]["value"] < 0.05
    assert main(["bench-metrics", str(bench_path), str(human_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["models"] == sorted(SKILLS) and out["kendall"] == pytest.approx(1.0)


@pytest.mark.slow
def test_benchbuilder_bench_separates_more_than_a_random_one() -> None:
    """Arena-Hard's finding on the simulated judge: same models, judge and size."""
    from arena_assets.bench.builder import BenchOptions, build_bench
    from arena_assets.bench.schema import CRITERIA
    from arena_assets.judging.metrics import score_table, separability
    from arena_assets_tests.test_bench_builder import prompts_frame

    skills = {"base": 0, "a": 60, "b": 45, "c": 30, "d": 15, "e": -15, "f": -30, "g": -45}
    frame = (
        prompts_frame(3000, 100)
        .filter(~pl.col("has_image"))
        .with_columns(quality=pl.sum_horizontal(pl.col(c).cast(pl.Int64) for c in CRITERIA))
    )

    def separated(prompts: pl.DataFrame) -> int:
        rows = []
        for pid, text, q in prompts.select("prompt_id", "prompt", "quality").iter_rows():
            ans = {
                m: simulate_answer(
                    key=KEY,
                    model=m,
                    prompt=text,
                    skill_elo=s,
                    criteria=q,
                    base_gap=0.2,
                    difficulty_gain=1.6,
                ).text
                for m, s in skills.items()
            }
            for m in skills:
                for g, a, b in game_positions(m, "base") if m != "base" else ():
                    t, _ = judge_verdict(key=KEY, question=text, answer_a=ans[a], answer_b=ans[b])
                    rows.append(
                        {
                            "question_id": pid,
                            "model": m,
                            "baseline": "base",
                            "judge": "j",
                            "game": g,
                            "model_a": a,
                            "model_b": b,
                            "judgment": t,
                            "verdict": parse_verdict(t),
                        }
                    )
        table = pairwise_summary(judgment_frame(rows), rounds=200, include_baseline=True)
        return separability(score_table(table))["separated_pairs"]

    bench = build_bench(frame, BenchOptions(size=120), month="m").prompts
    assert bench.height == 120
    # measured: 25 of 28 pairs separated on the bench, 20 on the random draw
    assert separated(bench) >= separated(frame.sample(120, seed=1)) + 3


def test_bench_leaderboard_table() -> None:
    from arena_assets.judging.answers import answer_features
    from arena_assets.judging.metrics import bench_leaderboard

    answers = _answers(60)
    feats = answer_features(
        pl.DataFrame(
            [
                {"question_id": q, "model": m, "answer": a.text, "reasoning": ""}
                for (q, m), (_, a) in answers.items()
            ]
        )
    )
    board = bench_leaderboard(_judge(answers, JudgeBias()), feats, rounds=30)
    assert board["model"].to_list() == ["m-strong", "m-good", "base", "m-weak", "m-poor"]
    assert board.filter(pl.col("model") == "base")["win_rate"][0] == 0.5
    assert board["bt_rank"].to_list() == [1, 2, 3, 4, 5]
    assert board["style_rating"].null_count() == 0 and (board["level"] == 0.95).all()
    verbose = board.filter(pl.col("model") == "m-poor")["avg_tokens"][0]
    terse = board.filter(pl.col("model") == "m-strong")["avg_tokens"][0]
    assert verbose > 2 * terse  # verbosity 2.0 vs 0.7
