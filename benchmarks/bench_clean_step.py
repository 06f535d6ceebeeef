"""CPU seconds of the cleaning step alone (``clean_month``) on an existing lake's raw_logs.

    .venv/bin/python benchmarks/bench_clean_step.py --lake benchmarks/out/lake-0 --repeats 3
    .venv/bin/python benchmarks/bench_clean_step.py --lake ... --stage snapshots   # the snapshot step
    .venv/bin/python benchmarks/bench_clean_step.py --lake ... --stage read        # reads only

The month's raw_logs file is copied into a temporary lake once (``--rewrite`` re-encodes it
with the lake's current Parquet settings, as today's ingest would write it), then each
repeat runs in a fresh child process (so ru_maxrss is that step's own peak) and prints CPU
seconds (user + sys, all threads) and wall time; the median is printed at the end. On a
shared machine the CPU figure is the one to compare.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MONTH = "2024-05"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(lake_root: str, stage: str, threads: int) -> dict:
    from arena_assets.clean.snapshots import iter_latest_snapshots
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.storage import Lake

    lake = Lake(lake_root)
    # imports (fastText, polars, duckdb) are left out of the figure
    cpu0, wall0 = _cpu(), time.perf_counter()
    if stage == "clean":
        rows = clean_month(lake, MONTH, threads=threads).conversations
    elif stage == "snapshots":
        rows = sum(b.height for b in iter_latest_snapshots(lake, MONTH))
    else:  # read: the raw_logs file through DuckDB and through polars
        import duckdb
        import polars as pl

        url = lake.url("raw_logs", MONTH)
        t0 = _cpu()
        with duckdb.connect() as con:
            rows = con.execute(f"select * from read_parquet('{url}')").to_arrow_table().num_rows
        t1 = _cpu()
        rows_pl = pl.read_parquet(url).height
        t2 = _cpu()
        assert rows == rows_pl
        return {
            "rows": rows,
            "duckdb_cpu": t1 - t0,
            "polars_cpu": t2 - t1,
            "cpu": t2 - t0,
            "wall": time.perf_counter() - wall0,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    return {
        "rows": rows,
        "cpu": _cpu() - cpu0,
        "wall": time.perf_counter() - wall0,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", required=True, help="a lake holding raw_logs/2024-05.parquet")
    parser.add_argument("--stage", choices=("clean", "snapshots", "read"), default="clean")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=3)
    parser.add_argument(
        "--rewrite",
        action="store_true",
        help="re-encode raw_logs with the lake's current Parquet settings",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.stage, args.threads)))
        return

    with tempfile.TemporaryDirectory(prefix="arena-bench-clean-") as tmp:
        source = Path(args.lake) / "raw_logs" / f"{MONTH}.parquet"
        (Path(tmp) / "raw_logs").mkdir()
        if args.rewrite:
            import pyarrow.parquet as pq

            from arena_assets.storage import Lake

            pf = pq.ParquetFile(source)
            Lake(tmp).write_batches(
                "raw_logs",
                MONTH,
                pf.schema_arrow,
                (pf.read_row_group(i) for i in range(pf.num_row_groups)),
            )
        else:
            shutil.copy(source, Path(tmp) / "raw_logs" / source.name)
        size = (Path(tmp) / "raw_logs" / source.name).stat().st_size
        print(f"raw_logs {size / 1e6:.1f} MB ({'rewritten' if args.rewrite else 'copied'})")
        runs = []
        for _ in range(args.repeats):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--lake",
                    args.lake,
                    "--stage",
                    args.stage,
                    "--threads",
                    str(args.threads),
                    "--child",
                    tmp,
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            run = json.loads(out.strip().splitlines()[-1])
            runs.append(run)
            print(
                " ".join(
                    f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in run.items()
                )
            )
        for key in ("cpu", "duckdb_cpu", "polars_cpu", "wall", "rss_mb"):
            if key in runs[0]:
                print(f"median {key:10s} {statistics.median(r[key] for r in runs):8.2f}")


if __name__ == "__main__":
    main()
