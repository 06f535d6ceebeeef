"""Throughput and peak memory of generating one simulated month.

    .venv/bin/python benchmarks/bench_simulate.py --sessions 200000 [--repeats 1] [--gzip]

Each repeat runs in a fresh subprocess so that peak RSS (ru_maxrss) is per run; prints
the median sessions/s, events/s, MB written and peak RSS. ``--trend`` runs several sizes
to show whether RSS grows with N (it should stay flat: the month is streamed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, shutil, sys, tempfile, time
from arena_assets.simulator import WorldConfig, simulate_months
n, compress = int(sys.argv[1]), sys.argv[2] == "1"
out = tempfile.mkdtemp(prefix="bench_sim_")
t0 = time.perf_counter()
s = simulate_months(out, ["2024-06"], n, seed=7, config=WorldConfig(), compress=compress)
dt = time.perf_counter() - t0
m = s.months[0]
print(json.dumps({"seconds": dt, "sessions": m.sessions, "events": m.events, "bytes": m.bytes,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
shutil.rmtree(out)
"""


def run_once(n: int, compress: bool) -> dict:
    res = subprocess.run(
        [sys.executable, "-c", CHILD, str(n), "1" if compress else "0"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def report(n: int, repeats: int, compress: bool) -> None:
    runs = [run_once(n, compress) for _ in range(repeats)]
    sec = statistics.median(r["seconds"] for r in runs)
    r0 = runs[0]
    print(
        f"sessions={n:>9,} gzip={compress!s:5} median {sec:7.1f} s  "
        f"{n / sec:9,.0f} sessions/s  {r0['events'] / sec:9,.0f} events/s  "
        f"{r0['bytes'] / 1e6:8.1f} MB  peak RSS {max(r['rss_mb'] for r in runs):6.0f} MB"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--trend", action="store_true", help="also run N/8, N/4, N/2 for the RSS trend")
    args = ap.parse_args()
    sizes = [args.sessions // 8, args.sessions // 4, args.sessions // 2] if args.trend else []
    for n in sizes + [args.sessions]:
        report(n, args.repeats, args.gzip)


if __name__ == "__main__":
    main()
