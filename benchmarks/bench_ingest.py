"""Ingest + clean throughput and peak memory on one simulated month.

    .venv/bin/python benchmarks/bench_ingest.py --conversations 200000 --repeats 3
    .venv/bin/python benchmarks/bench_ingest.py --conversations 1000000 --repeats 1

`--conversations` counts simulator sessions (one or more conversations each; battles log
two); the figures are per *conversation row produced*. Each repeat runs in a fresh child
process, so its peak RSS (ru_maxrss) is that of ingest + clean alone. The simulated month
is generated once under benchmarks/out/ and reused.

The floor, measured in the same run on the same files: ``--workers`` processes that each
read their share of the files and ``orjson.loads`` every line, nothing else. The ratio
(ingest + clean) / floor is printed for wall time and for CPU seconds (user + sys of the
whole process tree, from getrusage); on a shared machine the CPU ratio is the figure to
trust, the wall one moves with the load.
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


def cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def tree_cpu() -> float:
    """CPU seconds of this process and of its finished, waited-for children."""
    return cpu_s(resource.RUSAGE_SELF) + cpu_s(resource.RUSAGE_CHILDREN)


def decode_files(paths: list[str]) -> int:
    import gzip

    import orjson

    lines = 0
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as fh:
            for line in fh.read().split(b"\n"):
                if line:
                    try:
                        orjson.loads(line)
                    except orjson.JSONDecodeError:
                        pass
                    lines += 1
    return lines


def floor_run(month_dir: Path, workers: int) -> dict:
    """Bare decode of every line of the month, files shared out by size among ``workers``
    fresh processes (spawned, as the parse pool is; start-up time excluded)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    files = sorted((p for p in month_dir.iterdir() if p.is_file()), key=lambda p: -p.stat().st_size)
    shares: list[list[str]] = [[] for _ in range(workers)]
    sizes = [0] * workers
    for path in files:  # greedy: the largest file to the lightest share
        i = sizes.index(min(sizes))
        shares[i].append(str(path))
        sizes[i] += path.stat().st_size
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(decode_files, [[] for _ in range(workers)]))  # start the workers
        c0, t0 = tree_cpu(), time.perf_counter()
        lines = sum(pool.map(decode_files, shares))
        wall = time.perf_counter() - t0
    # the pool's workers are reaped at shutdown, so their CPU is in RUSAGE_CHILDREN now
    return {"lines": lines, "wall_s": wall, "cpu_s": tree_cpu() - c0}


def run_once(raw_root: str, lake_root: str, workers: int) -> dict:
    from arena_assets.ingest import load_model_registry
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.pipeline.ingest import ingest_month
    from arena_assets.storage import Lake

    tree = TreeRss()
    lake = Lake(lake_root)
    c0, t0 = tree_cpu(), time.perf_counter()
    ingest = ingest_month(
        lake,
        raw_root,
        MONTH,
        salt="bench",
        known_models=load_model_registry(raw_root),
        workers=workers,
    )
    c1, t1 = tree_cpu(), time.perf_counter()
    ingest_rss, tree.peak = tree.peak, 0  # the clean's own peak from here
    clean = clean_month(lake, MONTH)
    c2, t2 = tree_cpu(), time.perf_counter()
    return {
        "lines": ingest.lines_read,
        "conversations": clean.conversations,
        "ingest_rss_mb": ingest_rss / 2**20,
        "clean_rss_mb": tree.stop() / 2**20,
        "tree_rss_mb": max(ingest_rss, tree.peak) / 2**20,
        "ingest_s": t1 - t0,
        "clean_s": t2 - t1,
        "total_s": t2 - t0,
        "ingest_cpu": c1 - c0,
        "clean_cpu": c2 - c1,
        "total_cpu": c2 - c0,
        "conserved": ingest.conserved and clean.states_in == clean.states_folded,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="parse processes")
    parser.add_argument(
        "--floor", nargs=2, metavar=("MONTH_DIR", "WORKERS"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--child", nargs=3, metavar=("RAW", "LAKE", "WORKERS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_once(args.child[0], args.child[1], int(args.child[2]))))
        return
    if args.floor:
        print(json.dumps(floor_run(Path(args.floor[0]), int(args.floor[1]))))
        return

    from arena_assets.simulator import simulate_months

    raw = OUT / f"raw-{args.conversations}"
    if not (raw / MONTH).is_dir():
        t = time.perf_counter()
        simulate_months(str(raw), [MONTH], args.conversations, seed=1)
        print(f"simulated {args.conversations:,} sessions in {time.perf_counter() - t:.1f}s")
    size = sum(p.stat().st_size for p in (raw / MONTH).iterdir())
    results, rss, floors = [], [], []

    def floor() -> None:
        proc = subprocess.run(
            [sys.executable, __file__, "--floor", str(raw / MONTH), str(args.workers)],
            capture_output=True,
            text=True,
            check=True,
        )
        floors.append(json.loads(proc.stdout.strip().splitlines()[-1]))

    for i in range(args.repeats):
        floor()  # interleaved with the runs, so both see the same machine load
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                str(raw),
                str(OUT / f"lake-{i}"),
                str(args.workers),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        # RUSAGE_CHILDREN keeps the largest child so far; repeats are the same size
        rss.append(max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024)
    floor()
    keys = ("ingest_s", "clean_s", "total_s", "ingest_cpu", "clean_cpu", "total_cpu")
    med = {k: statistics.median(r[k] for r in results) for k in keys}
    f_wall = statistics.median(f["wall_s"] for f in floors)
    f_cpu = statistics.median(f["cpu_s"] for f in floors)
    r0 = results[0]
    print(
        f"month: {size / 1e6:,.0f} MB raw JSONL, {r0['lines']:,} lines, "
        f"{r0['conversations']:,} conversations; parse workers={args.workers}"
    )
    print(
        f"floor   {f_wall:6.2f}s wall {f_cpu:7.2f} CPU-s  (bare orjson.loads of {floors[0]['lines']:,} "
        f"lines in {args.workers} processes; median of {len(floors)})"
    )
    print(
        f"ingest  {med['ingest_s']:6.2f}s wall {med['ingest_cpu']:7.2f} CPU-s "
        f"{r0['lines'] / med['ingest_s']:>10,.0f} lines/s"
    )
    print(
        f"clean   {med['clean_s']:6.2f}s wall {med['clean_cpu']:7.2f} CPU-s "
        f"{r0['conversations'] / med['clean_s']:>10,.0f} conv/s"
    )
    print(
        f"total   {med['total_s']:6.2f}s wall {med['total_cpu']:7.2f} CPU-s "
        f"{r0['conversations'] / med['total_s']:>10,.0f} conv/s wall, "
        f"{r0['conversations'] / med['total_cpu']:,.0f} conv per CPU-s "
        f"(median of {args.repeats}); counts conserved: {all(r['conserved'] for r in results)}"
    )
    print(
        f"ratio to the floor: {med['total_s'] / f_wall:.1f}x wall, {med['total_cpu'] / f_cpu:.1f}x CPU "
        f"(ingest {med['ingest_cpu'] / f_cpu:.1f}x, clean {med['clean_cpu'] / f_cpu:.1f}x); "
        f"at the CPU ratio, a quiet {args.workers}-core machine whose floor takes "
        f"{f_cpu / args.workers:.2f}s would do {r0['conversations'] * args.workers / med['total_cpu']:,.0f} conv/s"
    )
    print(
        f"peak RSS of a run: {max(rss):,.0f} MB in one process, "
        f"{max(r['tree_rss_mb'] for r in results):,.0f} MB summed over it and its workers "
        f"(ingest {max(r['ingest_rss_mb'] for r in results):,.0f} MB, "
        f"clean {max(r['clean_rss_mb'] for r in results):,.0f} MB)"
    )


if __name__ == "__main__":
    main()
