"""The bench release's answers and judge texts pass the same privacy rule as its prompts:
model-written text is new text nobody redacted, so it is redacted with the cleaning's own
rules and refused if the independent scanner still fires; the card says so. Hand-built
bench, answers and judgments."""

from __future__ import annotations

import json

import polars as pl

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
