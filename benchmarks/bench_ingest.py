"""Ingest + clean throughput and peak memory on one simulated month.

    .venv/bin/python benchmarks/bench_ingest.py --conversations 200000 --repeats 3
    .venv/bin/python benchmarks/bench_ingest.py --conversations 1000000 --repeats 1

`--conversations` counts simulator sessions (one or more conversations each; battles log
two); the figures are per *conversation row produced*. Each repeat runs in a fresh child
process, so its peak RSS (ru_maxrss) is that of ingest + clean alone. The simulated month
is generated once under benchmarks/out/ and reused.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).parent / "out"
MONTH = "2024-05"


class TreeRss:
    """Peak of the summed RSS of this process and its children (the parse workers),
    sampled every 100 ms in a background thread; ru_maxrss only sees one process."""

    def __init__(self) -> None:
        import threading

        import psutil

        self.peak = 0
        self._stop = threading.Event()
        self._me = psutil.Process()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import psutil

        while not self._stop.wait(0.1):
            total = 0
            for proc in [self._me, *self._me.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.NoSuchProcess:
                    pass
            self.peak = max(self.peak, total)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def run_once(raw_root: str, lake_root: str, workers: int) -> dict:
    from arena_assets.ingest import load_model_registry
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.pipeline.ingest import ingest_month
    from arena_assets.storage import Lake

    tree = TreeRss()
    lake = Lake(lake_root)
    t0 = time.perf_counter()
    ingest = ingest_month(lake, raw_root, MONTH, salt="bench",
                          known_models=load_model_registry(raw_root), workers=workers)
    t1 = time.perf_counter()
    clean = clean_month(lake, MONTH)
    t2 = time.perf_counter()
    return {"lines": ingest.lines_read, "conversations": clean.conversations,
            "tree_rss_mb": tree.stop() / 2**20,
            "ingest_s": t1 - t0, "clean_s": t2 - t1, "total_s": t2 - t0,
            "conserved": ingest.conserved and clean.states_in == clean.states_folded}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="parse processes")
    parser.add_argument("--child", nargs=3, metavar=("RAW", "LAKE", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_once(args.child[0], args.child[1], int(args.child[2]))))
        return

    from arena_assets.simulator import simulate_months

    raw = OUT / f"raw-{args.conversations}"
    if not (raw / MONTH).is_dir():
        t = time.perf_counter()
        simulate_months(str(raw), [MONTH], args.conversations, seed=1)
        print(f"simulated {args.conversations:,} sessions in {time.perf_counter() - t:.1f}s")
    size = sum(p.stat().st_size for p in (raw / MONTH).iterdir())
    results, rss = [], []
    for i in range(args.repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(raw), str(OUT / f"lake-{i}"), str(args.workers)],
            capture_output=True, text=True, check=True)
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        # RUSAGE_CHILDREN keeps the largest child so far; repeats are the same size
        rss.append(max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024)
    med = {k: statistics.median(r[k] for r in results) for k in ("ingest_s", "clean_s", "total_s")}
    r0 = results[0]
    print(f"month: {size / 1e6:,.0f} MB raw JSONL, {r0['lines']:,} lines, "
          f"{r0['conversations']:,} conversations; parse workers={args.workers}")
    print(f"ingest  {med['ingest_s']:6.2f}s  {r0['lines'] / med['ingest_s']:>10,.0f} lines/s")
    print(f"clean   {med['clean_s']:6.2f}s  {r0['conversations'] / med['clean_s']:>10,.0f} conv/s")
    print(f"total   {med['total_s']:6.2f}s  {r0['conversations'] / med['total_s']:>10,.0f} conv/s "
          f"(median of {args.repeats}); counts conserved: {all(r['conserved'] for r in results)}")
    print(f"peak RSS of a run: {max(rss):,.0f} MB in one process, "
          f"{max(r['tree_rss_mb'] for r in results):,.0f} MB summed over it and its workers")


if __name__ == "__main__":
    main()
