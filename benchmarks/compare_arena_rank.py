"""Side by side with arena-rank (LMArena's BT engine, PyPI `arena-rank`) — run by hand.

    .venv/bin/python benchmarks/compare_arena_rank.py [--battles 1000000] [--models 100]
        [--rounds 100] [--spread 120] [--zipf 0]

--zipf > 0 draws models by popularity ∝ rank^-zipf as arena traffic is; uneven pair
counts are where arena-rank's early-stopping L-BFGS lands farthest from the optimum.

arena-rank pins its own numpy and jax, so it lives in its own virtualenv
(benchmarks/.arena-rank-venv, created here on first use with `pip install arena-rank
pyarrow`; keep it out of git). The same battles go to it as Parquet; it runs in a separate
Python process (this script with --worker) whose multiprocessing start method is "spawn"
(its bootstrap uses a multiprocessing Pool, and fork after jax has started deadlocks).
Prints the speed ratios for the sandwich path and for 100 bootstrap rounds and the largest
rating difference between the two, and of each from a reference fit run to a vanishing
gradient (bench_ranking.reference_fit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".arena-rank-venv"


def worker(data: Path, out: Path, rounds: int, repeats: int) -> None:
    """Runs inside the arena-rank virtualenv: times its sandwich and bootstrap paths."""
    import multiprocessing as mp

    mp.set_start_method("spawn", force=True)
    import numpy as np
    import pandas as pd
    from arena_rank.models.bradley_terry import BradleyTerry
    from arena_rank.utils.data_utils import PairDataset

    df = pd.read_parquet(data)

    def sandwich():
        ds = PairDataset.from_pandas(df)  # aggregation is part of the path, as for us
        model = BradleyTerry(n_competitors=len(ds.competitors))
        res = model.compute_ratings_and_cis(ds, significance_level=0.05, ci_method="sandwich")
        return ds, res

    times = []
    t = time.perf_counter()
    ds, res = sandwich()  # first call includes jax compilation
    cold = time.perf_counter() - t
    for _ in range(repeats):
        t = time.perf_counter()
        ds, res = sandwich()
        times.append(time.perf_counter() - t)
    fit_only = []
    for _ in range(repeats):  # dataset built once: optimizer + sandwich alone
        t = time.perf_counter()
        BradleyTerry(n_competitors=len(ds.competitors)).compute_ratings_and_cis(
            ds, ci_method="sandwich"
        )
        fit_only.append(time.perf_counter() - t)
    t_boot, boot = float("nan"), {"rating_lower": []}
    if rounds > 0:
        t = time.perf_counter()
        model = BradleyTerry(n_competitors=len(ds.competitors))
        boot = model.compute_ratings_and_cis(
            PairDataset.from_pandas(df),
            ci_method="bootstrap",
            num_bootstrap=rounds,
            seed=0,
            n_jobs=os.cpu_count(),
        )
        t_boot = time.perf_counter() - t
    json.dump(
        {
            "competitors": list(res["competitors"]),
            "ratings": np.asarray(res["ratings"]).tolist(),
            "lower": np.asarray(res["rating_lower"]).tolist(),
            "boot_lower": np.asarray(boot["rating_lower"]).tolist(),
            "t_sandwich": statistics.median(times),
            "t_sandwich_cold": cold,
            "t_fit_only": statistics.median(fit_only),
            "t_bootstrap": t_boot,
        },
        out.open("w"),
    )


def ensure_venv() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "arena-rank", "pyarrow"], check=True
        )
    return python


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=100, help="bootstrap rounds (0: skip)")
    ap.add_argument("--spread", type=float, default=120.0, help="sd of the planted ratings")
    ap.add_argument(
        "--zipf", type=float, default=0.0, help="model popularity ∝ rank^-zipf (0: uniform pairs)"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--worker", nargs=2, type=Path, metavar=("DATA", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, rounds=args.rounds, repeats=args.repeats)
        return

    import numpy as np

    sys.path.insert(0, str(HERE))
    from bench_ranking import reference_fit

    from arena_assets.ranking import (
        aggregate,
        fit_bt,
        leaderboard_from_aggregated,
        sample_bt_battles,
    )

    python = ensure_venv()
    planted = np.random.default_rng(0).normal(1000, args.spread, args.models)
    popularity = 1.0 / np.arange(1, args.models + 1) ** args.zipf
    battles = sample_bt_battles(planted, args.battles, seed=1, tie_rate=0.15, popularity=popularity)
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp) / "battles.parquet", Path(tmp) / "arena_rank.json"
        battles.write_parquet(data)
        t = time.perf_counter()
        subprocess.run(
            [
                str(python),
                __file__,
                "--worker",
                str(data),
                str(out),
                "--rounds",
                str(args.rounds),
                "--repeats",
                str(args.repeats),
            ],
            check=True,
        )
        print(f"arena-rank process (start, import, all its runs): {time.perf_counter() - t:.1f} s")
        theirs = json.loads(out.read_text())

    def median_time(fn) -> tuple[float, object]:
        times, res = [], None
        for _ in range(args.repeats):
            t = time.perf_counter()
            res = fn()
            times.append(time.perf_counter() - t)
        return statistics.median(times), res

    t_sand, ours = median_time(lambda: fit_bt(battles))
    agg = aggregate(battles)
    t_fit, _ = median_time(lambda: leaderboard_from_aggregated(agg))
    t_boot = float("nan")
    if args.rounds > 0:
        t_boot, _ = median_time(
            lambda: fit_bt(battles, ci="bootstrap", bootstrap_rounds=args.rounds, seed=0)
        )
    mine = dict(zip(ours.table["model"], ours.table["rating"]))
    their = dict(zip(theirs["competitors"], theirs["ratings"]))
    names = sorted(mine)
    m = np.array([mine[n] for n in names])
    a = np.array([their[n] for n in names])
    a = a - a.mean() + 1000  # both mean 1000 (arena-rank's is ~1000 already)
    ref, grad = reference_fit(battles, sorted(mine))
    print(
        f"{args.battles:,} battles, {args.models} models (rating sd {args.spread:g}, popularity zipf {args.zipf:g}, 15 % ties), "
        f"{os.cpu_count()} CPUs; medians of {args.repeats}"
    )
    print(
        f"sandwich path (aggregate + fit + CI): ours {t_sand:.3f} s, arena-rank {theirs['t_sandwich']:.3f} s "
        f"(first call incl. jit {theirs['t_sandwich_cold']:.3f} s) -> {theirs['t_sandwich'] / t_sand:.1f}x"
    )
    print(
        f"fit + sandwich on already aggregated data: ours {t_fit:.3f} s, arena-rank {theirs['t_fit_only']:.3f} s "
        f"-> {theirs['t_fit_only'] / t_fit:.1f}x"
    )
    if args.rounds > 0:
        print(
            f"{args.rounds} bootstrap rounds (incl. fit): ours {t_boot:.3f} s, "
            f"arena-rank {theirs['t_bootstrap']:.3f} s -> {theirs['t_bootstrap'] / t_boot:.1f}x"
        )
    print(f"max |ours - arena-rank| = {np.abs(m - a).max():.3g} rating points")
    print(
        f"max |ours - reference| = {np.abs(m - ref).max():.2e}, "
        f"max |arena-rank - reference| = {np.abs(a - ref).max():.3g} (reference max |grad| {grad:.1e})"
    )


if __name__ == "__main__":
    main()
