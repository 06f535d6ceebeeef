"""The bench release's answers and judge texts pass the same privacy rule as its prompts:
model-written text is new text nobody redacted, so it is redacted with the cleaning's own
rules and refused if the independent scanner still fires; the card says so. The bench's
three kinds of file load as three configurations with `datasets`, offline. Hand-built
bench, answers and judgments."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pytest

from arena_assets.judging.verdicts import game_positions, judgment_frame
from arena_assets.release import BenchRelease, parse_card, write_bench_dataset

MONTH = "2024-06"
EMAIL, PHONE = "jane.doe@example.org", "+1 415 555 0134"


def _release() -> BenchRelease:
    prompts = pl.DataFrame(
        {
            "prompt_id": ["q1", "q2"],
            "prompt": ["Write a cover letter.", "Plan a trip."],
            "category": ["other", "other"],
            "language": ["en", "en"],
        }
    )
    answers = pl.DataFrame(
        {
            "question_id": ["q1", "q1", "q2", "q2"],
            "model": ["base", "m", "base", "m"],
            "answer": [
                f"Dear team, reach me at {EMAIL}.",
                "Dear hiring manager, ...",
                "Day 1: Rome.",
                f"Call the hotel at {PHONE}.",
            ],
            "reasoning": ["", f"The user may want {EMAIL} in it.", "", ""],
            "status": ["ok"] * 4,
            "answer_tokens": [12, 8, 4, 9],
        }
    )
    rows = []
    for q in ("q1", "q2"):
        for g, a, b in game_positions("m", "base"):
            rows.append(
                {
                    "question_id": q,
                    "category": "arena-hard-v0.1",
                    "model": "m",
                    "baseline": "base",
                    "judge": "j",
                    "game": g,
                    "model_a": a,
                    "model_b": b,
                    "verdict": "A=B",
                    "judgment": f"Assistant A gives {EMAIL}; both fine. [[A=B]]"
                    if q == "q1"
                    else "[[A=B]]",
                }
            )
    judged = judgment_frame(rows).with_columns(status=pl.lit("ok"))
    return BenchRelease(prompts, answers, judged, "arena-hard-v0.1")


def test_answers_and_judge_texts_are_redacted_before_release(tmp_path) -> None:
    out = tmp_path / "bench"
    write_bench_dataset(str(out), _release(), MONTH, "cc-by-4.0")
    text = "".join(p.read_text() for p in out.rglob("*.jsonl"))
    assert EMAIL not in text and "415 555 0134" not in text
    answers = {
        r["model_id"]: r
        for r in map(json.loads, (out / "model_answer" / "m.jsonl").read_text().splitlines())
        if r["question_id"] == "q2"
    }
    assert answers["m"]["choices"][0]["turns"][0]["content"] == "Call the hotel at <PHONE>."
    judged = [
        json.loads(x) for x in (out / "model_judgment" / "j" / "m.jsonl").read_text().splitlines()
    ]
    q1 = next(r for r in judged if r["question_id"] == "q1")
    assert q1["games"][0]["judgment"] == "Assistant A gives <EMAIL>; both fine. [[A=B]]"
    assert (
        "<EMAIL>" in q1["games"][0]["user_prompt"]
    )  # the judge's prompt quotes the redacted answer
    _, body = parse_card((out / "README.md").read_text())
    assert (
        "answers and judge texts" in body
        and "3 answer texts and 2 judge texts had PII replaced" in body
    )


def _with_an_unjudged_model(release: BenchRelease, protocol: str) -> BenchRelease:
    """``release`` plus a candidate whose games were all unparsed (every score null), its
    files named to come first, where a reader inferring types would meet them first."""
    extra = release.answers.filter(pl.col("model") == "m").with_columns(
        model=pl.lit("a-unjudged"), reasoning=pl.lit("")
    )
    rows = [
        {
            "question_id": q,
            "category": "hard_prompt" if protocol == "arena-hard-v2" else protocol,
            "model": "a-unjudged",
            "baseline": "base",
            "judge": "j",
            "game": g,
            "model_a": a,
            "model_b": b,
            "verdict": None,
            "judgment": "no label here",
        }
        for q in ("q1", "q2")
        for g, a, b in game_positions("a-unjudged", "base")
    ]
    judged = release.judgments
    if protocol == "arena-hard-v2":
        judged = judged.with_columns(category=pl.lit("hard_prompt"))
    unparsed = judgment_frame(rows).with_columns(status=pl.lit("ok"))
    return BenchRelease(
        release.prompts,
        pl.concat([release.answers, extra]),
        pl.concat([judged, unparsed], how="diagonal_relaxed"),
        protocol,
    )


@pytest.mark.parametrize("protocol", ["arena-hard-v0.1", "arena-hard-v2"])
def test_bench_configurations_load_offline_with_datasets(tmp_path, protocol) -> None:
    """The card declares one configuration per kind of file: `load_dataset(folder)` gives
    the questions, "answers" and "judgments" the other two, offline, in a fresh process;
    a judgment file of null scores read first does not fix the score's type."""
    out = tmp_path / "bench"
    release = _with_an_unjudged_model(_release(), protocol)
    write_bench_dataset(str(out), release, MONTH, "cc-by-4.0")
    header, body = parse_card((out / "README.md").read_text())
    assert [c["config_name"] for c in header["configs"]] == ["default", "answers", "judgments"]
    assert 'load_dataset(folder, "judgments")' in body
    judged = sorted((out / "model_judgment" / "j").iterdir())
    assert judged[0].name == "a-unjudged.jsonl"
    assert all(g["score"] is None for r in _lines(judged[0]) for g in r["games"])
    script = (
        "import json, sys, datasets\n"
        "out = {}\n"
        "for config in ('default', 'answers', 'judgments'):\n"
        "    d = datasets.load_dataset(sys.argv[1], config, split='train')\n"
        "    out[config] = [d.num_rows, d.column_names]\n"
        "    if config == 'judgments':\n"
        "        out['scores'] = sorted({str(g['score']) for r in d for g in r['games']})\n"
        "print(json.dumps(out))\n"
    )
    env = {
        **os.environ,
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    proc = subprocess.run(
        [sys.executable, "-c", script, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    # counted from the files themselves, not from the writer
    assert loaded["default"][0] == len(_lines(out / "question.jsonl")) == 2
    answers = sum(len(_lines(p)) for p in (out / "model_answer").glob("*.jsonl"))
    assert loaded["answers"][0] == answers == 6
    judgments = sum(len(_lines(p)) for p in judged)
    assert loaded["judgments"][0] == judgments == 4
    assert loaded["scores"] == ["A=B", "None"]
    ids = "uid" if protocol == "arena-hard-v2" else "question_id"
    assert ids in loaded["judgments"][1] and "games" in loaded["judgments"][1]


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
