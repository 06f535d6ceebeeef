"""Throughput of PII redaction (`redact_frame`) and of the `no_raw_pii` check; prints texts/s, MB/s.

    .venv/bin/python benchmarks/bench_pii.py [--sessions 20000] [--corpus-copies 200] [--repeats 3]

Two inputs: every message text of a simulated month (`simulate_months`, pii_rate 0.03 as in
the default world: mostly clean text, the common case), and the hand-written evaluation
corpus (`arena_assets_tests/data/pii_corpus.jsonl`, nearly every line a candidate: the worst
case for the Python validators), repeated to a measurable size. Median over repeats.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import polars as pl

from arena_assets.clean.pii import contains_pii, redact_frame
from arena_assets.simulator import simulate_months

CORPUS = Path(__file__).resolve().parents[1] / "arena_assets_tests" / "data" / "pii_corpus.jsonl"


def _contents(node, out: list[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "content" and isinstance(value, str):
                out.append(value)
            else:
                _contents(value, out)
    elif isinstance(node, list):
        for value in node:
            _contents(value, out)


def simulated_texts(sessions: int, seed: int = 3) -> list[str]:
    """Every message content of one simulated month (each logged state once)."""
    texts: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        simulate_months(tmp, ["2024-03"], sessions, seed=seed)
        for path in sorted(Path(tmp, "2024-03").glob("*.jsonl")):
            for line in path.open(encoding="utf-8", errors="replace"):
                try:
                    _contents(json.loads(line), texts)
                except ValueError:
                    continue  # the simulator's planted malformed lines
    return list(dict.fromkeys(texts))  # states repeat earlier turns: keep each text once


def corpus_texts(copies: int) -> list[str]:
    """The corpus `copies` times, each copy made distinct (redaction detects a text once)."""
    lines = [json.loads(line)["text"] for line in CORPUS.open(encoding="utf-8")]
    return [f"{text} (#{i})" for i in range(copies) for text in lines]


def bench(name: str, texts: list[str], repeats: int) -> None:
    frame = pl.DataFrame({"content": texts}, schema={"content": pl.String})
    megabytes = frame["content"].str.len_bytes().sum() / 1e6
    times, check = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        out = redact_frame(frame, "content")
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        left = out.select(contains_pii(pl.col("content")).sum()).item()
        check.append(time.perf_counter() - start)
    t, c = statistics.median(times), statistics.median(check)
    replaced = sum(int(out[col].sum()) for col in out.columns if col.startswith("pii_"))
    print(
        f"{name:10s} {len(texts):>9,} texts {megabytes:7.1f} MB | redact {t:6.2f}s "
        f"{len(texts) / t:>10,.0f} texts/s {megabytes / t:6.1f} MB/s | check {c:6.2f}s "
        f"{len(texts) / c:>10,.0f} texts/s | replaced {replaced:,}, left {left:,}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--corpus-copies", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sim = simulated_texts(args.sessions)
    bench("simulated", sim, args.repeats)
    if CORPUS.exists():
        bench("corpus", corpus_texts(args.corpus_copies), args.repeats)
    print(f"(median of {args.repeats}; shared 2-core machine, figures vary ~20 %)")


if __name__ == "__main__":
    main()
