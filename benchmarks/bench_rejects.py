"""PII redaction of a month's rejected lines: bounded to what is kept, against the whole line.

    .venv/bin/python benchmarks/bench_rejects.py benchmarks/out/raw-200000/2024-05 [--repeats 3]

The month folder is one that `benchmarks/bench_ingest.py` simulated. Its lines are parsed
as ingest parses them; the rejected ones are blanked of their identity fields as ingest
does, then redacted two ways: `redact_rejects` (each detector's scan bounded by what can
reach the kept 2,000 characters, only those candidates validated) and the whole line
redacted, then cut. Prints the CPU seconds of each (median over repeats) and checks that
the two keep the same text for every line.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import polars as pl

from arena_assets.clean.pii import scrub_raw_line
from arena_assets.clean.rejects import blank_reject_line, redact_rejects
from arena_assets.contracts import REJECT_RAW_CHARS
from arena_assets.ingest import parse_lines


def rejected_lines(month: Path) -> tuple[list[str], list[str]]:
    """(details, texts) of every rejected line, blanked as ingest blanks them."""
    details, texts = [], []
    for path in sorted(month.glob("*.jsonl")):
        lines = path.read_bytes().split(b"\n")
        lines = lines[:-1] if lines and not lines[-1] else lines
        part = parse_lines(lines, f"{month.name}/{path.name}", month.name, salt="bench")
        for line_no, detail in part.rejects.select("line_no", "detail").iter_rows():
            detail, text, _ = blank_reject_line(lines[line_no - 1], detail)
            details.append(detail)
            texts.append(text)
    return details, texts


def whole_then_cut(texts: list[str]) -> list[str]:
    frame = pl.Series("text", texts, dtype=pl.String).to_frame()
    done = frame.select(scrub_raw_line(pl.col("text"))).to_series().to_list()
    return [t[:REJECT_RAW_CHARS] for t in done]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("month", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    details, texts = rejected_lines(args.month)
    long = sum(len(t) > 100_000 for t in texts)
    print(
        f"{len(texts):,} rejected lines, {long} over 100,000 characters, "
        f"{sum(map(len, texts)) / 1e6:.1f} M characters"
    )
    timings: dict[str, list[float]] = {"bounded": [], "whole line, then cut": []}
    for _ in range(args.repeats):
        start = time.process_time()
        bounded = redact_rejects(details, texts)[1]
        timings["bounded"].append(time.process_time() - start)
        start = time.process_time()
        whole = whole_then_cut(texts)
        timings["whole line, then cut"].append(time.process_time() - start)
    for name, values in timings.items():
        print(f"{name:22s} {statistics.median(values):6.2f} CPU-s (median of {args.repeats})")
    differ = sum(a != b for a, b in zip(bounded, whole, strict=True))
    print(f"lines whose kept text differs between the two: {differ}")


if __name__ == "__main__":
    main()
