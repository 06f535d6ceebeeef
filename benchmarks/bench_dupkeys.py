"""Cost of the duplicate-key check on the ingest hot path (``ingest/dupkeys.py``).

Usage: .venv/bin/python benchmarks/bench_dupkeys.py [--conversations 10000] [--repeats 7]

On the synthetic month of ``bench_ingest_parse.py`` (seeded), prints the CPU time per line
of the prefilter, of orjson's decode and of the whole ``parse_lines`` (medians), the
prefilter's share of the parse, and how many lines went past the cheap steps.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).parent))
from bench_ingest_parse import synth_month

from arena_assets.ingest import parse_lines
from arena_assets.ingest.dupkeys import conflicting_key, native_keys


def cpu_median(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    lines = synth_month(args.conversations, args.seed)
    objs = [orjson.loads(x) for x in lines]
    n = len(lines)
    check = cpu_median(lambda: [conflicting_key(x, o) for x, o in zip(lines, objs)], args.repeats)
    decode = cpu_median(lambda: [orjson.loads(x) for x in lines], args.repeats)
    parse = cpu_median(
        lambda: parse_lines(lines, "2024-05/x.jsonl", "2024-05", salt="s"),
        max(3, args.repeats // 2),
    )
    past = sum(1 for x, o in zip(lines, objs) if x.count(b":") > native_keys(o))
    print(f"{n:,} lines, {sum(map(len, lines)) // n:,} bytes each on average")
    print(
        f"duplicate-key check {check / n * 1e6:.2f} us/line; orjson decode "
        f"{decode / n * 1e6:.2f} us/line; parse_lines {parse / n * 1e6:.2f} us/line"
    )
    print(f"check = {check / parse * 100:.1f}% of the parse; lines past the colon count: {past}")


if __name__ == "__main__":
    main()
