"""What the required steps of ingest + clean cost on their own, as multiples of the floor.

    .venv/bin/python benchmarks/bench_ingest.py --conversations 200000 --repeats 1   # makes the month
    .venv/bin/python benchmarks/cost_floor.py benchmarks/out/raw-200000/2024-05 benchmarks/out/lake-0

The floor is a bare ``orjson.loads`` of every line. This script times, one
process and one thread each (CPU seconds, user + sys), the steps no implementation of
ingest + clean can skip while it keeps what the tables promise, each at its cheapest
measured form: decoding every line, writing the month's ``raw_logs`` and reading it back
(the clean step is a separate asset), language id of the month's distinct detection texts,
the token count of every message, writing ``conversations``. Their sum, divided by the
floor, is a lower bound for the ratio ``bench_ingest.py`` prints: validation, the latest
snapshot, PII redaction and its check, the dedup key and the joins all come on top.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import sys
from pathlib import Path

os.environ.setdefault("POLARS_MAX_THREADS", "1")  # before polars loads: one thread, as stated

import polars as pl
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import decode_files

from arena_assets.clean.language import CachedDetector, FastTextLid, detection_text
from arena_assets.storage import PARQUET_COMPRESSION, ROW_GROUP_ROWS, dictionary_columns
from arena_assets.tokens import approx_tokens


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(label: str, fn, figures: dict) -> None:
    start = cpu()
    fn()
    figures[label] = cpu() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("month_dir", help="the raw month folder (JSONL files)")
    parser.add_argument("lake", help="a lake holding that month's raw_logs and conversations")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    # the floor exactly as bench_ingest.py measures it, in one process here
    files = sorted(str(p) for p in Path(args.month_dir).iterdir() if p.is_file())

    def decode() -> None:
        decode_files(files)

    timed("floor: orjson.loads of every line", decode, figures)
    month = next(Path(args.lake, "raw_logs").glob("*.parquet"))
    raw_logs = pq.read_table(month)
    buffer = io.BytesIO()
    timed(
        "write raw_logs (zstd Parquet, the lake's encoding)",
        lambda: pq.write_table(
            raw_logs,
            buffer,
            compression=PARQUET_COMPRESSION,
            row_group_size=ROW_GROUP_ROWS,
            use_dictionary=dictionary_columns(raw_logs.schema),
        ),
        figures,
    )
    data = buffer.getvalue()
    timed("read raw_logs back", lambda: pq.read_table(io.BytesIO(data), use_threads=False), figures)
    conversations = pl.read_parquet(next(Path(args.lake, "conversations").glob("*.parquet")))
    user_text = conversations.select(
        pl.col("messages")
        .list.eval(
            pl.element().filter(pl.element().struct.field("role") == "user").struct.field("content")
        )
        .list.join(" ")
        .alias("t")
    )["t"]
    texts = user_text.to_frame().select(detection_text(pl.col("t")))["t"].unique().to_list()
    detector = CachedDetector(FastTextLid())
    detector.detect(["warm up the model load"])
    timed(
        f"language id of {len(texts):,} distinct texts (fastText)",
        lambda: detector.detect(texts),
        figures,
    )
    contents = conversations.select(
        pl.col("messages").explode(empty_as_null=False).struct.field("content")
    )
    timed(
        f"token count of {contents.height:,} messages (one regex pass)",
        lambda: contents.select(approx_tokens(pl.col("content")).sum()),
        figures,
    )
    table = conversations.to_arrow()
    timed(
        "write conversations (zstd Parquet, the lake's encoding)",
        lambda: pq.write_table(
            table,
            io.BytesIO(),
            compression=PARQUET_COMPRESSION,
            row_group_size=ROW_GROUP_ROWS,
            use_dictionary=dictionary_columns(table.schema),
        ),
        figures,
    )
    floor = figures["floor: orjson.loads of every line"]
    for label, seconds in figures.items():
        print(f"{seconds:7.2f} CPU-s  {seconds / floor:5.2f}x  {label}")
    total = sum(figures.values())
    print(f"{total:7.2f} CPU-s  {total / floor:5.2f}x  sum: a lower bound for ingest + clean")


if __name__ == "__main__":
    main()
