"""`arena-assets leaderboard` end to end, as a user runs it from the shell (run by hand).

    .venv/bin/python benchmarks/bench_leaderboard_cli.py [--battles 1000000] [--models 100]
        [--rounds 1000] [--repeats 3] [--shapes uniform arena rare] [--seed 1] [--before CHECKOUT]

For each battle-graph shape (``arena_assets.ranking.synthetic.sample_shaped_battles``):
``uniform`` (every pair equally likely, 20 % ties), ``arena`` (a real month's graph: skewed
popularity, ~4,800 of 4,950 pairs met, ~740 of them fewer than 5 times, 20 % ties of both
kinds) and ``rare`` (``arena`` plus 5 models of 15-45 battles), writes the battles to
Parquet and prints: the shape's figures; how many bootstrap rounds kept every "beat or tied"
edge, lost edges but stayed strongly connected, or lost a model; the median wall and CPU
seconds of `arena-assets leaderboard FILE --out … --bootstrap N` in a fresh process
(imports, reading, fit, bootstrap, writing, printing) and of the same fit in-process; and
`arena-assets --help` as the floor of a fresh process, measured in the same run. Target:
the command <= 3 s wall on every shape. The load average is printed with the
figures: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from arena_assets.ranking import FitOptions, fit_bt, read_battles
from arena_assets.ranking.cells import encode_battles
from arena_assets.ranking.identify import rankable
from arena_assets.ranking.leaderboard import round_components
from arena_assets.ranking.synthetic import SHAPES, graph_shape, sample_shaped_battles

CLI = str(Path(sys.executable).with_name("arena-assets"))


def timed(cmd: list[str], repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds (children's user + sys) of a command."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def round_kinds(battles: pl.DataFrame, rounds: int, seed: int) -> dict[str, int]:
    """What the bootstrap's resamples look like on this graph (a sample of ``rounds``)."""
    agg, _ = rankable(encode_battles(battles).aggregate())
    draw = (
        np.random.default_rng(seed)
        .multinomial(agg.n_battles, agg.counts.ravel() / agg.n_battles, size=rounds)
        .reshape(rounds, -1, 3)
    )
    full_won = agg.counts[:, 0] + agg.counts[:, 2] > 0
    full_lost = agg.counts[:, 1] + agg.counts[:, 2] > 0
    intact = (
        ((draw[:, :, 0] + draw[:, :, 2] > 0) | ~full_won)
        & ((draw[:, :, 1] + draw[:, :, 2] > 0) | ~full_lost)
    ).all(axis=1)
    whole = round_components(agg, draw, intact).all(axis=1)
    return {
        "intact": int(intact.sum()),
        "edges_lost": int((whole & ~intact).sum()),
        "model_lost": int((~whole).sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--before",
        type=Path,
        default=None,
        help="a checkout of earlier code: its `leaderboard` command is timed too, "
        "alternating with this one, on the same files",
    )
    args = ap.parse_args()
    print(
        f"{args.battles:,} battles, {args.models} models, {args.rounds} bootstrap rounds; "
        f"median of {args.repeats}; load average before {os.getloadavg()[0]:.1f}"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        help_wall, help_cpu = timed([CLI, "--help"], args.repeats)
        for shape in args.shapes:
            battles = sample_shaped_battles(args.battles, args.models, args.seed, shape)
            path, out = Path(tmp) / f"{shape}.parquet", Path(tmp) / f"{shape}-board.parquet"
            battles.write_parquet(path)
            figures = graph_shape(battles)
            kinds = round_kinds(battles, 200, args.seed)
            cmd = [
                CLI,
                "leaderboard",
                str(path),
                "--out",
                str(out),
                "--bootstrap",
                str(args.rounds),
            ]
            before = None
            if args.before:  # alternated, so that both see the same load
                old = [
                    sys.executable,
                    "-c",
                    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                    "from arena_assets.cli import main; sys.exit(main())",
                    str(args.before.resolve()),
                    *cmd[1:],
                ]
                pairs = [(timed(old, 1), timed(cmd, 1)) for _ in range(args.repeats)]
                before = (
                    statistics.median(p[0][0] for p in pairs),
                    statistics.median(p[0][1] for p in pairs),
                )
                cli_wall = statistics.median(p[1][0] for p in pairs)
                cli_cpu = statistics.median(p[1][1] for p in pairs)
            else:
                cli_wall, cli_cpu = timed(cmd, args.repeats)
            options = FitOptions(ci="bootstrap", bootstrap_rounds=args.rounds)
            walls, cpus = [], []
            for _ in range(args.repeats):
                t, c = time.perf_counter(), time.process_time()
                fit_bt(read_battles(path), options)
                walls.append(time.perf_counter() - t)
                cpus.append(time.process_time() - c)
            board = pl.read_parquet(out)
            rows.append(
                (
                    shape,
                    figures,
                    kinds,
                    cli_wall,
                    cli_cpu,
                    statistics.median(walls),
                    statistics.median(cpus),
                    board.height,
                    before,
                )
            )
    print(f"floor: arena-assets --help  {help_wall:5.2f} s wall, {help_cpu:5.2f} CPU-s")
    for shape, fig, kinds, cli_wall, cli_cpu, fit_wall, fit_cpu, height, before in rows:
        lo, hi = fig["battles_per_model"]
        print(
            f"\n[{shape}] pairs met {fig['pairs_met']:,} of {fig['pairs_possible']:,}, "
            f"{fig['pairs_under_5']:,} under 5 battles; battles per model {lo:,}-{hi:,}; "
            f"ties {fig['tie_share']:.1%} + bothbad {fig['bothbad_share']:.1%}"
        )
        print(
            f"  resamples (200 drawn): {kinds['intact']} keep every edge, "
            f"{kinds['edges_lost']} lose edges but stay strongly connected, "
            f"{kinds['model_lost']} lose a model"
        )
        print(
            f"  arena-assets leaderboard (fresh process)  {cli_wall:5.2f} s wall "
            f"(target 3 s), {cli_cpu:5.2f} CPU-s; {height} models on the board"
        )
        print(
            f"  read + fit_bt in-process                  {fit_wall:5.2f} s wall, "
            f"{fit_cpu:5.2f} CPU-s"
        )
        if before:
            print(
                f"  the same command, --before code           {before[0]:5.2f} s wall, "
                f"{before[1]:5.2f} CPU-s: now {before[0] / cli_wall:.2f}x faster in wall, "
                f"{before[1] / cli_cpu:.2f}x in CPU"
            )
    print(f"\nload average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
