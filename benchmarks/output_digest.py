"""Digest of a simulated month's ingest + clean outputs, to show a speed change kept the rows.

    .venv/bin/python benchmarks/output_digest.py --sessions 20000 > before.txt
    ... change the code ...
    .venv/bin/python benchmarks/output_digest.py --sessions 20000 > after.txt
    diff before.txt after.txt

Prints, per table (raw_logs, raw_rejects, conversations), the row count and a SHA-256 over
the rows' canonical JSON sorted, so row order within the files does not matter but every
value does. The simulator plants junk lines (``malformed_rate``), so reject paths are
exercised. ``--skip`` names columns left out of
the digest (e.g. ``conversations.prompt_tokens`` when comparing token counters).
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

import orjson

MONTH = "2024-05"
OUT = Path(__file__).parent / "out"


def digest(frame, skip: set[str]) -> str:
    rows = [
        orjson.dumps(row, option=orjson.OPT_SORT_KEYS, default=str)
        for row in frame.drop([c for c in frame.columns if c in skip]).iter_rows(named=True)
    ]
    rows.sort()
    return hashlib.sha256(b"\n".join(rows)).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip", nargs="*", default=[], help="table.column to leave out")
    args = parser.parse_args()

    from arena_assets.ingest import load_model_registry
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.pipeline.ingest import ingest_month
    from arena_assets.simulator import simulate_months
    from arena_assets.storage import Lake

    raw = OUT / f"digest-raw-{args.sessions}"
    if not (raw / MONTH).is_dir():
        simulate_months(str(raw), [MONTH], args.sessions, seed=7)
    with tempfile.TemporaryDirectory(prefix="arena-digest-") as tmp:
        lake = Lake(tmp)
        ingest_month(
            lake,
            str(raw),
            MONTH,
            salt="digest",
            known_models=load_model_registry(str(raw)),
            workers=args.workers,
        )
        clean_month(lake, MONTH)
        for table in ("raw_logs", "raw_rejects", "conversations"):
            skip = {s.split(".", 1)[1] for s in args.skip if s.startswith(table + ".")}
            frame = lake.read(table, MONTH)
            print(f"{table}\t{frame.height}\t{digest(frame, skip)}")


if __name__ == "__main__":
    main()
