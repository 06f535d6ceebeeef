"""`arena-assets leaderboard` end to end, as a user runs it from the shell (run by hand).

    .venv/bin/python benchmarks/bench_leaderboard_cli.py [--battles 1000000] [--models 100]
        [--rounds 1000] [--repeats 3]

Writes synthetic pure-BT battles (string model names, 15 % ties) to a Parquet file, then
prints the median wall time of: `arena-assets --help`; `arena-assets leaderboard FILE --out
… --bootstrap N` in a fresh process (imports, reading, fit, 1,000 bootstrap rounds, writing,
printing); and the same fit in-process (read + fit_bt) for comparison. Target: the command
<= 3 s wall for 1M battles / 100 models / 1,000 rounds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from arena_assets.ranking import FitOptions, fit_bt, read_battles, sample_bt_battles

CLI = str(Path(sys.executable).with_name("arena-assets"))


def wall(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    battles = sample_bt_battles(rng.normal(1000, 120, args.models), args.battles, seed=1,
                                tie_rate=0.15)
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "battles.parquet", Path(tmp) / "board.parquet"
        battles.select("model_a", "model_b", "winner").write_parquet(path)
        help_s = wall([CLI, "--help"], args.repeats)
        cmd = [CLI, "leaderboard", str(path), "--out", str(out), "--bootstrap", str(args.rounds)]
        cli_s = wall(cmd, args.repeats)
        options = FitOptions(ci="bootstrap", bootstrap_rounds=args.rounds)
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            fit_bt(read_battles(path), options)
            times.append(time.perf_counter() - t)
        board = pl.read_parquet(out)
    print(f"{args.battles:,} battles, {args.models} models, {args.rounds} bootstrap rounds; "
          f"median of {args.repeats}")
    print(f"arena-assets --help                       {help_s:6.2f} s wall")
    print(f"arena-assets leaderboard (fresh process)  {cli_s:6.2f} s wall (target 3 s)")
    print(f"read + fit_bt in-process                  {statistics.median(times):6.2f} s")
    print(f"board: {board.height} models, top {board['model'][0]} at {board['rating'][0]:.1f}")


if __name__ == "__main__":
    main()
