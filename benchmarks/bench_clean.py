"""Throughput of `build_conversations` on synthetic raw_logs; prints conversations/s.

    .venv/bin/python benchmarks/bench_clean.py [--conversations 200000] [--repeats 3]

raw_logs are generated here directly in RAW_LOGS_SCHEMA (the simulator/ingest pair is
benchmarked by their owners): each conversation is logged 1-3 times as it grows (chat
events), a third of them also appear in a vote event beside another conversation, ~3 %
of prompts carry planted PII, prompts in 8 languages, answers ~600 chars.
Reports the median over repeats of the whole call and of its parts.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import polars as pl

from arena_assets.clean.conversations import clean_conversations
from arena_assets.clean.language import FastTextLid, detect_languages
from arena_assets.clean.snapshots import latest_snapshots
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA

PROMPTS = [
    "Can you explain how {x} works in simple terms?",
    "Write a short poem about {x}.",
    "Erkläre mir bitte, wie {x} funktioniert.",
    "Écris un court poème sur {x}.",
    "¿Puedes explicarme cómo funciona {x}?",
    "请解释一下{x}是如何工作的。",
    "Объясни, пожалуйста, как работает {x}.",
    "{x}について簡単に説明してください。",
]
TOPICS = ["photosynthesis", "a hash map", "the stock market", "quantum computing", "rain"]
PII = [
    "my email is anna42@example.com",
    "call me at +1 415-555-1234",
    "ship to 742 Evergreen Terrace",
    "card 4111 1111 1111 1111",
    "server 10.2.3.4",
]
ANSWER = (
    "Sure! Here is a detailed answer with several points. First, the basic idea. "
    "Second, an example: `x = 42`. Third, a summary of what matters most. "
) * 3


def synthetic_raw_logs(n_conversations: int, seed: int = 0) -> pl.DataFrame:
    rng = random.Random(seed)
    start = datetime(2024, 5, 1, tzinfo=UTC)
    rows: dict[str, list] = {c: [] for c in RAW_LOGS_SCHEMA}

    def add(conv_a, model_a, msgs_a, conv_b=None, model_b=None, msgs_b=None, kind="chat"):
        n = len(rows["event_id"])
        rows["month"].append("2024-05")
        rows["event_id"].append(f"e-{n}")
        rows["source_file"].append("2024-05/events.jsonl")
        rows["line_no"].append(n + 1)
        rows["tstamp"].append(start + timedelta(seconds=n))
        rows["type"].append(kind)
        rows["anony"].append(conv_b is not None)
        rows["user_hash"].append(f"u{rng.randrange(5000)}")
        for side, (c, m, msgs) in zip("ab", ((conv_a, model_a, msgs_a), (conv_b, model_b, msgs_b))):
            rows[f"conv_id_{side}"].append(c)
            rows[f"model_{side}"].append(m)
            rows[f"messages_{side}"].append(msgs)
        rows["source_format"].append("native")

    conversations = []
    for i in range(n_conversations):
        # a request id keeps prompts distinct, so language id sees realistic variety
        prompt = rng.choice(PROMPTS).format(x=rng.choice(TOPICS)) + f" (#{i})"
        if rng.random() < 0.03:
            prompt += " " + rng.choice(PII)
        msgs: list[dict] = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            msgs = msgs + [
                {"role": "user", "content": prompt, "images": []},
                {"role": "assistant", "content": ANSWER, "images": None},
            ]
            add(f"c-{i:07d}", f"model-{i % 20}", msgs)
        conversations.append((f"c-{i:07d}", f"model-{i % 20}", msgs))
    for j in range(0, len(conversations) - 1, 6):  # a third of conversations in a vote
        a, b = conversations[j], conversations[j + 1]
        add(a[0], a[1], a[2], b[0], b[1], b[2], kind="leftvote")
    return pl.DataFrame(rows, schema=RAW_LOGS_SCHEMA)


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    t0 = time.perf_counter()
    raw = synthetic_raw_logs(args.conversations)
    print(
        f"generated {raw.height:,} events for {args.conversations:,} conversations "
        f"in {time.perf_counter() - t0:.1f}s"
    )
    detector = FastTextLid()
    detector.detect(["warm up the model"])
    t_latest, snaps = timed(lambda: latest_snapshots(raw), args.repeats)
    t_clean, out = timed(
        lambda: clean_conversations(snaps, language_detector=detector), args.repeats
    )
    user_text = out.get_column("first_prompt").fill_null("")
    t_lang, _ = timed(lambda: detect_languages(user_text, detector), args.repeats)
    n = out.height
    total = t_latest + t_clean
    print(f"rows out: {n:,}; languages: {out['language'].value_counts(sort=True).head(8).rows()}")
    print(f"latest_snapshots     {t_latest:7.2f}s  {n / t_latest:>10,.0f} conv/s")
    print(f"clean_conversations  {t_clean:7.2f}s  {n / t_clean:>10,.0f} conv/s")
    print(
        f"  of which language  {t_lang:7.2f}s  ({t_lang / t_clean:.0%} of clean; "
        f"{user_text.n_unique():,} distinct texts)"
    )
    print(
        f"build_conversations  {total:7.2f}s  {n / total:>10,.0f} conv/s (median of {args.repeats})"
    )


if __name__ == "__main__":
    main()
