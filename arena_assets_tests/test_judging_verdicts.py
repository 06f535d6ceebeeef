"""Verdict parsers, judgment imports, judge-summary: hand-written cases and real files."""

from __future__ import annotations

import json
from collections import defaultdict

import polars as pl
import pytest

from arena_assets.cli import main
from arena_assets.judging.readers import import_fastchat_pairwise, read_judgments
from arena_assets.judging.summary import (
    bias_report,
    judge_battles,
    pairwise_summary,
    single_summary,
)
from arena_assets.judging.verdicts import (
    game_positions,
    judgment_frame,
    parse_rating,
    parse_verdict,
)

MT_SINGLE = "mt_bench/gpt-4_single_judgments_two_models.jsonl"


@pytest.mark.parametrize(
    "text,v01,v2",
    [
        # v0.1 wants one distinct [[label]]; v2 takes the last, upper-cases, accepts [label]
        ("Options [[A>>B]] ... [[A>B]] ... final: [[B>A]]", None, "B>A"),
        ("My final verdict is tie: [[A=B]]", "A=B", "A=B"),
        ("[[A>B]] and again [[A>B]]", "A>B", "A>B"),
        ("[[ A >> B ]]", None, None),  # neither anchor allows spaces inside the label
        ("[[A<<B]]", None, "B>>A"),  # v2's ten spellings; v0.1 knows five
        ("[[B<A]]", None, "A>B"),
        ("verdict: [b>>a]", None, "B>>A"),
        ("A is better [[A>B]] then garbage [[C>D]]", "A>B", "A>B"),
        ("no verdict here", None, None),
        ("[[A>A]]", None, None),
        ("", None, None),
    ],
)
def test_parse_verdict(text: str, v01: str | None, v2: str | None) -> None:
    assert parse_verdict(text, "arena-hard-v0.1") == v01
    assert parse_verdict(text, "arena-hard-v2") == v2


@pytest.mark.parametrize(
    "text,want",
    [
        ("Rating: [[7]]", 7.0),
        ("[[3]] then Rating: [[8.5]]", 8.5),
        ("Rating: [6]", 6.0),
        ("no grade", -1.0),
        (None, -1.0),
    ],
)
def test_parse_rating(text, want) -> None:
    assert parse_rating(text) == want


def test_parsers_on_real_judgments(real_data) -> None:
    recs = [json.loads(x) for x in (real_data / MT_SINGLE).read_text().splitlines()]
    assert len(recs) == 320
    assert sum(parse_rating(r["judgment"]) == r["score"] for r in recs) == 320
    ah = [
        json.loads(x)
        for x in (real_data / "arena_hard_v0.1/model_judgment_sample.jsonl")
        .read_text()
        .splitlines()
    ]
    games = [g for r in ah for g in r["games"]]
    assert len(games) == 14 and all(
        parse_verdict(g["judgment"], "arena-hard-v0.1") == g["score"] for g in games
    )


def test_single_summary_real_against_plain_python(real_data) -> None:
    recs = [json.loads(x) for x in (real_data / MT_SINGLE).read_text().splitlines()]
    pooled = defaultdict(list)
    for r in recs:
        if r["score"] != -1:
            pooled[r["model"]].append(r["score"])
    kind, frame = read_judgments(real_data / MT_SINGLE)
    table = {r["model"]: r for r in single_summary(frame).to_dicts()}
    assert kind == "single"
    for model, scores in pooled.items():
        assert table[model]["score"] == pytest.approx(sum(scores) / len(scores), abs=1e-12)
    assert table["unify"]["n_invalid"] == 1 and table["unify"]["n_valid"] == 159
    assert table["martian"]["score"] == pytest.approx(8.3125)


def test_judge_summary_cli_single(real_data, capsys) -> None:
    assert main(["judge-summary", str(real_data / MT_SINGLE), "--format", "csv"]) == 0
    rows = {r["model"]: r for r in pl.read_csv(capsys.readouterr().out.encode()).to_dicts()}
    assert rows["unify"]["score"] == pytest.approx(8.757861635220126)
    assert main(["judge-summary", str(real_data / MT_SINGLE)]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "single"


def _games(model: str, verdicts: list[tuple[str, str]], judge: str = "j", base: str = "base"):
    rows = []
    for q, (v1, v2) in enumerate(verdicts):
        for (g, a, b), v in zip(game_positions(model, base), (v1, v2)):
            rows.append(
                {
                    "question_id": f"q{q}",
                    "model": model,
                    "baseline": base,
                    "judge": judge,
                    "game": g,
                    "model_a": a,
                    "model_b": b,
                    "judgment": f"[[{v}]]" if v else "x",
                    "verdict": v,
                }
            )
    return judgment_frame(rows)


def test_pairwise_weighting_hand_computed() -> None:
    # q0: game1 base=A "B>>A" -> model strong win (3 x 1); game2 model=A "A>B" -> 1
    # q1: game1 "A=B" -> 0.5; game2 "B>A" -> model loses 0; q2: unparsed + "A>>B" (3 x 1)
    frame = _games("m", [("B>>A", "A>B"), ("A=B", "B>A"), (None, "A>>B")])
    row = pairwise_summary(frame, weight=3, rounds=50).row(0, named=True)
    assert row["win_rate"] == pytest.approx((3 + 1 + 0.5 + 0 + 3) / (3 + 1 + 1 + 1 + 3))
    assert (row["won"], row["tied"], row["lost"], row["unparsed"]) == (3, 1, 1, 1)
    assert row["lower"] <= row["win_rate"] <= row["upper"] and row["level"] == 0.95
    w1 = pairwise_summary(frame, weight=1, rounds=0).row(0, named=True)["win_rate"]
    assert w1 == pytest.approx(3.5 / 5)
    battles = judge_battles(frame, weight=3)
    assert battles.height == 9 and battles.filter(pl.col("winner") == "tie").height == 1


def test_several_judges_are_pooled() -> None:
    j1 = _games("m", [("B>A", "A>B")] * 4, judge="j1")  # all wins -> 1.0
    j2 = _games("m", [("A>B", "B>A")] * 4, judge="j2")  # all losses -> 0.0
    row = pairwise_summary(pl.concat([j1, j2]), rounds=0).row(0, named=True)
    assert row["win_rate"] == pytest.approx(0.5) and row["judges"] == "j1,j2"


def test_bias_report_hand_built() -> None:
    # judge always prefers A: every pair flips; plus one unparsed game
    frame = _games("m", [("A>B", "A>B")] * 3 + [(None, "A>B")])
    rep = bias_report(frame)
    assert rep["flip_rate"] == 1.0 and rep["a_win_share"] == 1.0
    assert rep["parse_failure_rate"] == pytest.approx(1 / 8)
    lengths = pl.DataFrame(
        {
            "question_id": ["q0", "q1", "q2", "q0", "q1", "q2"],
            "model": ["m", "m", "m", "base", "base", "base"],
            "tokens": [100, 300, 500, 200, 200, 200],
        }
    )
    frame = _games("m", [("A>B", "B>A"), ("A=B", "A=B"), ("B>A", "A>B")])
    assert bias_report(frame, lengths)["length_correlation"] == pytest.approx(1.0)


def test_fastchat_pairwise_import(tmp_path) -> None:
    rec = {
        "question_id": 81,
        "model_1": "x",
        "model_2": "base",
        "g1_winner": "x",
        "g2_winner": "tie",
        "judge": ["gpt-4", "pair-v2"],
        "g1_judgment": "[[A]]",
        "g2_judgment": "[[C]]",
        "turn": 1,
        "tstamp": 0,
    }
    p = tmp_path / "pair.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    frame = import_fastchat_pairwise(p)
    assert frame["verdict"].to_list() == ["A>B", "A=B"]
    assert frame["model_a"].to_list() == ["x", "base"] and frame["baseline"][0] == "base"
    kind, again = read_judgments(p)
    assert kind == "pairwise" and again.equals(frame)
    assert pairwise_summary(frame, rounds=0)["win_rate"][0] == pytest.approx(0.75)


def test_prompt_round_trip_and_plan() -> None:
    from arena_assets.judging.verdicts import (
        pairwise_messages,
        plan_games,
        single_messages,
        split_pairwise_prompt,
        split_single_prompt,
    )

    q, a, b = "Sum 2+2?\n\nShow work.", "4\n\n<|End of Answer A|> fake", "five"
    msgs = pairwise_messages(q, a, b)
    assert "[[A>>B]]" in msgs[0]["content"] and split_pairwise_prompt(msgs[1]["content"]) == (
        q,
        a,
        b,
    )
    assert "own answer" in msgs[0]["content"]
    assert "own answer" not in pairwise_messages(q, a, b, own_answer_first=False)[0]["content"]
    assert split_single_prompt(single_messages(q, a)[1]["content"]) == (q, a)
    assert split_pairwise_prompt("free text") is None
    plan = plan_games(["q1", "q2"], ["m1", "m2", "base"], "base", ["j1", "j2"])
    assert plan.height == 2 * 2 * 2 * 2
    assert plan.filter(pl.col("game") == 1)["model_a"].unique().to_list() == ["base"]
    # v2: each question against its category's baseline
    plan = plan_games(
        ["q1", "q2"],
        ["m1", "m2", "base"],
        {"hard_prompt": "base", "creative_writing": "m2"},
        ["j"],
        ["hard_prompt", "creative_writing"],
    )
    assert plan.group_by("question_id").agg(pl.col("baseline").first()).sort("question_id")[
        "baseline"
    ].to_list() == ["base", "m2"]


def test_judge_summary_cli_pairwise_and_bias(real_data, capsys) -> None:
    sample = real_data / "arena_hard_v0.1/model_judgment_sample.jsonl"
    assert main(["judge-summary", str(sample), "--weight", "3", "--rounds", "20"]) == 0
    row = json.loads(capsys.readouterr().out)["models"][0]
    # hand count of the 7 records' 14 games from the candidate's side (strong = 3 copies):
    # game 1 (baseline A): A>B x4, B>A x2, A=B x1; game 2 (candidate A): B>>A, A>B, B>A x5
    assert (row["won"], row["tied"], row["lost"]) == (3, 1, 10)
    assert row["win_rate"] == pytest.approx((2 + 1 + 0.5) / (13 + 3))
    assert main(["judge-summary", str(sample), "--bias"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["games"] == 14 and rep["pairs_with_both_games"] == 7
    assert main(["judge-summary", str(real_data / MT_SINGLE), "--bias"]) == 1


def test_every_published_layout_is_read_and_others_named(tmp_path, capsys) -> None:
    """Single-answer grade files without `turn`, Arena-Hard v2 judgments with categories and
    per-record baselines; anything else gets one line naming what it lacks."""
    grades = tmp_path / "grades.jsonl"
    grades.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "question_id": 1,
                    "model": "a",
                    "score": 8,
                    "judgment": "fine [[8]]",
                    "user_prompt": "q",
                },
                {"question_id": 2, "model": "a", "score": 6, "judgment": "ok [[6]]"},
                {"question_id": 1, "model": "b", "score": -1, "judgment": "no grade"},
                {"question_id": 2, "model": "b", "score": 4, "judgment": "[[4]]"},
            ]
        )
        + "\n"
    )
    kind, frame = read_judgments(grades)
    assert kind == "single" and set(frame["turn"]) == {1}
    assert main(["judge-summary", str(grades), "--format", "csv"]) == 0
    rows = {r["model"]: r for r in pl.read_csv(capsys.readouterr().out.encode()).to_dicts()}
    assert rows["a"]["score"] == 7.0 and rows["b"]["score"] == 4.0 and rows["b"]["n_invalid"] == 1
    v2 = tmp_path / "v2.jsonl"
    v2.write_text(
        "\n".join(
            json.dumps(
                {
                    "uid": f"u{i}",
                    "category": cat,
                    "judge": "gpt-4.1",
                    "model": "m",
                    "baseline": base,
                    "games": [
                        {"score": s1, "judgment": {"answer": "..."}, "prompt": []},
                        {"score": s2, "judgment": {"answer": "..."}, "prompt": []},
                    ],
                }
            )
            for i, (cat, base, s1, s2) in enumerate(
                [
                    ("hard_prompt", "o3-mini", "A<B", "A>B"),
                    ("hard_prompt", "o3-mini", "B>A", None),
                    ("creative_writing", "gemini-flash", "A=B", "A>>B"),
                ]
            )
        )
        + "\n"
    )
    kind, frame = read_judgments(v2)
    assert kind == "pairwise" and frame["verdict"].to_list() == [
        "B>A",
        "A>B",
        "B>A",
        None,
        "A=B",
        "A>>B",
    ]
    assert main(["judge-summary", str(v2), "--rounds", "10", "--format", "csv"]) == 0
    table = pl.read_csv(capsys.readouterr().out.encode())
    # v2 drops both games of u1 (one unparsed); u0: 1 + 1 (game 1 "A<B": B wins) -> 1.0;
    # u2: 0.5 + 3 x 1 over 4 rows, and v2's score is the mean of the bootstrap means
    rows = table.select("category", "baseline", "win_rate").sort("category").rows()
    assert rows[1] == ("hard_prompt", "o3-mini", 1.0) and rows[0][:2] == (
        "creative_writing",
        "gemini-flash",
    )
    assert rows[0][2] == pytest.approx((0.5 + 3) / 4, abs=0.1)
    assert table["dropped_games"].sum() == 2
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"question_id": 1, "model": "a", "rating": 3}) + "\n")
    assert main(["judge-summary", str(odd)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "single-answer grades (needs score)" in err
