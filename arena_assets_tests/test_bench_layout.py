"""The bench in Arena-Hard-Auto's file layout, both ways: the published v0.1 files read and
written back field for field; a month of ours (simulated arena, the own wording under both
versions' rules) exported and imported to the same frames and the same board; the
release's bench dataset in that layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from arena_assets.cli import main
from arena_assets.judging.layout import read_layout, write_layout
from arena_assets.storage import Lake
from arena_assets_tests.test_bench_protocol import (
    MODELS,
    MONTH,
    answers_frame,
    bench_frame,
    sim_task,
)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_published_v01_files_read_and_written_back(real_data, tmp_path) -> None:
    src = tmp_path / "published"
    shutil.copytree(real_data / "arena_hard_v0.1" / "model_answer", src / "model_answer")
    shutil.copy(real_data / "arena_hard_v0.1" / "question.jsonl", src / "question.jsonl")
    (src / "model_judgment" / "gemini-1.5-pro-api-preview").mkdir(parents=True)
    shutil.copy(
        real_data / "arena_hard_v0.1" / "model_judgment_sample.jsonl",
        src / "model_judgment" / "gemini-1.5-pro-api-preview" / "phi-3-medium-4k-instruct.jsonl",
    )
    questions, answers, judgments = read_layout(src)
    assert questions.height == 500 and answers.height == 4 * 500 and judgments.height == 14
    out = tmp_path / "again"
    write_layout(str(out), questions, answers, judgments, protocol="arena-hard-v0.1")
    assert _jsonl(out / "question.jsonl") == _jsonl(src / "question.jsonl")
    for f in sorted((src / "model_answer").glob("*.jsonl")):
        assert _jsonl(out / "model_answer" / f.name) == _jsonl(f), f.name
    # a judgment record: the file's games (verdicts, judge texts) come back; user_prompt is
    # rebuilt in our judge's template (the answers of phi-3 are not published)
    got = _jsonl(out / "model_judgment/gemini-1.5-pro-api-preview/phi-3-medium-4k-instruct.jsonl")
    want = _jsonl(src / "model_judgment/gemini-1.5-pro-api-preview/phi-3-medium-4k-instruct.jsonl")
    assert [(r["question_id"], r["model"], r["judge"]) for r in got] == [
        (r["question_id"], r["model"], r["judge"]) for r in want
    ]
    assert [[(g["judgment"], g["score"]) for g in r["games"]] for r in got] == [
        [(g["judgment"], g["score"]) for g in r["games"]] for r in want
    ]


@pytest.mark.parametrize("protocol", ["arena-assets-pairwise", "arena-assets-pairwise-v2"])
def test_a_month_of_ours_round_trips(protocol, tmp_path, capsys) -> None:
    from arena_assets.judging.protocol import get_protocol
    from arena_assets.pipeline.bench import bench_leaderboard_month, judgments_month
    from arena_assets.simulator import start_endpoint
    from arena_assets.simulator.endpoint import Faults

    ep = start_endpoint(seed=7)
    try:
        lake = Lake(str(tmp_path / "lake"))
        bench_frame(lake, 9)
        answers_frame(lake, ep, tmp_path, max_tokens=4096)
        ep.set_faults(Faults(rate_garbage=0.4, seed=2))  # some games stay unparsed
        judgments_month(
            lake,
            MONTH,
            [("sim-judge", sim_task(ep, "sim-judge"))],
            "atlas-8b-preview",
            cache_root=str(tmp_path / "c"),
            protocol=protocol,
        )
    finally:
        ep.set_faults(Faults())
        ep.stop()
    prompts, answers, judged = (
        lake.read(t, MONTH) for t in ("bench_prompts", "model_answers", "judgments")
    )
    out = tmp_path / "export"
    write_layout(str(out), prompts, answers, judged, protocol=protocol, month=MONTH)
    questions, back_answers, back_judged = read_layout(out)
    assert questions.select("question_id", "prompt").equals(
        prompts.select(question_id="prompt_id", prompt="prompt")
    )
    cols = ["question_id", "model", "answer"]
    assert back_answers.select(cols).sort(cols).equals(answers.select(cols).sort(cols))
    assert back_answers["token_len"].sort().to_list() == answers["answer_tokens"].sort().to_list()
    keys = [
        "question_id",
        "category",
        "model",
        "baseline",
        "judge",
        "game",
        "model_a",
        "model_b",
        "verdict",
        "parsed",
    ]
    assert back_judged.select(keys).sort(keys).equals(judged.select(keys).sort(keys))
    assert not back_judged["parsed"].all()  # the unparsed games travel as null scores
    # the same board from the exported folder as from the lake
    board = bench_leaderboard_month(lake, MONTH, protocol=protocol, rounds=30).board
    rules = get_protocol(protocol).rules  # a file is read by its version's rules
    assert (
        main(
            [
                "judge-summary",
                str(out / "model_judgment"),
                "--rounds",
                "30",
                "--format",
                "csv",
                "--protocol",
                rules,
            ]
        )
        == 0
    )
    table = pl.read_csv(capsys.readouterr().out.encode())
    ours = board.filter(pl.col("model") != pl.col("baseline")).select(
        "category", "model", "win_rate", "lower"
    )
    assert (
        table.select(ours.columns).sort("category", "model").equals(ours.sort("category", "model"))
    )
    # the folder itself: style control from its answers, as the board
    assert (
        main(["judge-summary", str(out), "--rounds", "30", "--format", "csv", "--protocol", rules])
        == 0
    )
    table = pl.read_csv(capsys.readouterr().out.encode())
    sc = board.select("category", "model", "sc_win_rate").sort("category", "model")
    assert table.select(sc.columns).sort("category", "model").equals(sc)
    # the CLI's export of the lake writes the same files
    assert (
        main(
            [
                "bench-export",
                "--lake",
                str(tmp_path / "lake"),
                "--month",
                MONTH,
                "--out",
                str(tmp_path / "cli"),
            ]
        )
        == 0
    )
    assert all(
        (tmp_path / "cli" / p.relative_to(out)).read_bytes() == p.read_bytes()
        for p in out.rglob("*.jsonl")
    )
    # a rerun writes the same bytes
    again = tmp_path / "export-again"
    write_layout(str(again), prompts, answers, judged, protocol=protocol, month=MONTH)
    assert all(
        (again / p.relative_to(out)).read_bytes() == p.read_bytes() for p in out.rglob("*.jsonl")
    )
    assert sorted(p.name for p in (out / "model_answer").iterdir()) == sorted(
        f"{m}.jsonl" for m in MODELS
    )
    # the release's bench dataset: the same layout, its card on top, read back alike
    from arena_assets.release import bench_release_from_lake, parse_card, write_bench_dataset

    release = bench_release_from_lake(lake, MONTH)
    assert release.protocol == protocol
    prompts_out, _files = write_bench_dataset(str(tmp_path / "rel"), release, MONTH, "cc-by-4.0")
    _, rel_answers, rel_judged = read_layout(tmp_path / "rel")
    assert rel_answers.height == answers.height and rel_judged.select(keys).sort(keys).equals(
        judged.select(keys).sort(keys)
    )
    header, body = parse_card((tmp_path / "rel" / "README.md").read_text())
    assert header["configs"][0]["data_files"][0]["path"] == "question.jsonl"
    assert f"- prompts: {prompts_out.height}" in body and f"fields of `{protocol}`" in body
    assert f"- answers: {answers.height} from {len(MODELS)} models" in body


def _v2_record(uid: str, model: str, baseline: str, s1: str | None, s2: str | None) -> dict:
    return {
        "uid": uid,
        "category": "hard_prompt",
        "judge": "j",
        "model": model,
        "baseline": baseline,
        "games": [
            {"score": s, "judgment": {"answer": f"[[{s}]]" if s else "none"}, "prompt": []}
            for s in (s1, s2)
        ],
    }


def test_judge_summary_baseline_keeps_only_the_games_against_it(tmp_path, capsys) -> None:
    """--baseline: a v2 file's and an MT-Bench pairwise file's records against another
    model are left out (a pairwise record without the baseline is not a game against it);
    a v0.1 file does not name its baseline: there the option names it."""
    v2 = tmp_path / "v2.jsonl"
    v2.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                _v2_record("q1", "m", "b1", "B>A", "A>B"),
                _v2_record("q2", "m", "b1", "B>A", "A=B"),
                _v2_record("q1", "m", "b2", "A>B", "B>A"),
                _v2_record("q1", "n", "b2", "A>B", "B>A"),
            ]
        )
    )
    assert main(["judge-summary", str(v2), "--baseline", "b1", "--rounds", "0"]) == 0
    models = json.loads(capsys.readouterr().out)["models"]
    assert [(r["model"], r["baseline"], r["games"]) for r in models] == [("m", "b1", 4)]
    assert main(["judge-summary", str(v2), "--baseline", "b3", "--rounds", "0"]) == 1
    assert "no games against b3: the file's baselines are b1, b2" in capsys.readouterr().err
    pair = tmp_path / "pair.jsonl"
    pair.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {
                    "question_id": 1,
                    "model_1": "x",
                    "model_2": "base",
                    "g1_winner": "x",
                    "g2_winner": "x",
                    "turn": 1,
                },
                {
                    "question_id": 1,
                    "model_1": "x",
                    "model_2": "y",
                    "g1_winner": "y",
                    "g2_winner": "y",
                    "turn": 1,
                },
                {
                    "question_id": 2,
                    "model_1": "base",
                    "model_2": "z",
                    "g1_winner": "base",
                    "g2_winner": "tie",
                    "turn": 1,
                },
            ]
        )
    )
    assert main(["judge-summary", str(pair), "--baseline", "base", "--rounds", "0"]) == 0
    models = {r["model"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert (
        set(models) == {"x", "z"}
        and models["x"]["win_rate"] == 1.0
        and models["z"]["win_rate"] == 0.25
    )


def test_judge_summary_reads_a_bench_folder_by_the_protocol_asked(tmp_path, capsys) -> None:
    """--protocol reaches the folder reader: a v2 spelling (``B<A``) in a v0.1-layout
    folder is unparsed by v0.1's rule and a verdict by v2's."""
    root = tmp_path / "bench"
    (root / "model_judgment" / "j").mkdir(parents=True)
    (root / "question.jsonl").write_text(
        json.dumps({"uid": "q1", "category": "arena-hard-v0.1", "cluster": "c", "prompt": "p"})
        + "\n"
    )
    (root / "model_judgment" / "j" / "m.jsonl").write_text(
        json.dumps(
            {
                "question_id": "q1",
                "model": "m",
                "judge": "j",
                "games": [
                    {"user_prompt": "", "judgment": "[[B<A]]", "score": "B<A"},
                    {"user_prompt": "", "judgment": "[[A>B]]", "score": "A>B"},
                ],
            }
        )
        + "\n"
    )
    got = {}
    for protocol in ("arena-hard-v0.1", "arena-hard-v2"):
        assert main(["judge-summary", str(root), "--rounds", "0", "--protocol", protocol]) == 0
        got[protocol] = json.loads(capsys.readouterr().out)["models"][0]["unparsed"]
    assert got == {"arena-hard-v0.1": 1, "arena-hard-v2": 0}
