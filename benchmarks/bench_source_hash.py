"""What the manifest's content hash costs ingest: SHA-256 of every raw file, against the
whole ingest step, in CPU seconds, on a simulated month plain and gzipped.

    .venv/bin/python benchmarks/bench_source_hash.py [--sessions 20000] [--repeats 3]

Per layout prints the stored bytes, the hash pass alone, the ingest step (which includes
it: listing, hashing, parsing, both tables, the manifest) and the hash's share, medians of
the repeats. CPU seconds, so a shared machine's load changes little; `uptime` is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from arena_assets.ingest.manifest import hash_files
from arena_assets.ingest.sources import scan_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake

MONTH = "2024-05"


def cpu(step, *args, **kwargs) -> float:
    started = time.process_time()
    step(*args, **kwargs)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"uptime: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-hash-") as tmp:
        for compress in (False, True):
            raw = Path(tmp) / f"raw-{'gz' if compress else 'plain'}"
            simulate_months(raw, [MONTH], args.sessions, seed=1, compress=compress)
            listing = scan_month(str(raw), MONTH)
            stored = sum(size for size, _ in listing.stats.values())
            hashed, ingested = [], []
            for i in range(args.repeats):
                hashed.append(cpu(hash_files, listing))
                lake = Lake(f"{tmp}/lake-{compress}-{i}")
                ingested.append(
                    cpu(ingest_month, lake, str(raw), MONTH, salt="s", known_models=None)
                )
            h, g = statistics.median(hashed), statistics.median(ingested)
            print(
                f"{'gzipped' if compress else 'plain JSONL'}: {len(listing.files)} files, "
                f"{stored / 1e6:.0f} MB stored; SHA-256 {h:.2f} CPU-s ({stored / 1e6 / h:.0f} "
                f"MB per CPU-s); ingest {g:.2f} CPU-s; the hash is {h / g:.1%} of ingest"
            )
    print(f"uptime after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
