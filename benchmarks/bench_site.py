"""The leaderboard site of a month of 100 models x 1M battles, on top of the boards.

    .venv/bin/python benchmarks/bench_site.py [--battles 1000000] [--models 100] [--repeats 3]

Builds a lake like a real month's (battles with keep / removal reasons, languages, style
features, conversation ids and turns; topic labels at real-traffic rates for every
category board, vision included), runs the leaderboards' month steps on it (timed, not
part of the target), then times the site step as the asset runs it (read the lake, build
every page and figure, write the folder and the root pages) into a fresh site root per
repeat. Prints wall and CPU seconds (median of the repeats), boards, files and bytes.
Target: <= 10 s wall on top of the leaderboard asset. The machine may be shared: the
load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path


def _cpu() -> float:
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--workers", type=int, default=0, help="figure processes (0 = as the asset)"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    from arena_assets.defs.resources import SiteSettings
    from arena_assets.pipeline.leaderboards import (
        arena_leaderboard_month,
        battle_cells_month,
        leaderboard_history_month,
    )
    from arena_assets.pipeline.site import leaderboard_site_month
    from arena_assets.ranking.boards import board_options
    from arena_assets.ranking.synthetic import synthetic_month
    from arena_assets.site.publish import SiteRoot
    from arena_assets.storage import Lake

    work = Path(tempfile.mkdtemp(prefix="bench-site-"))
    lake = Lake(str(work / "lake"))
    month = "2024-06"
    started = time.perf_counter()
    battles, labels = synthetic_month(args.battles, args.models, args.seed)
    lake.write("battles", month, battles)
    lake.write("topic_labels", month, labels)
    print(
        f"lake: {args.battles:,} battles, {args.models} models in {time.perf_counter() - started:.1f}s"
    )
    started, cpu = time.perf_counter(), _cpu()
    battle_cells_month(lake, month)
    step = arena_leaderboard_month(
        lake, month, board_options(bootstrap_rounds=200, min_battles=300), min_category_battles=1000
    )
    leaderboard_history_month(lake, month)
    print(
        f"leaderboards (battle_cells, arena_leaderboard, history; not in the target): "
        f"{time.perf_counter() - started:.1f}s wall, {_cpu() - cpu:.1f} CPU-s, "
        f"{step.boards['board'].n_unique()} boards"
    )
    options = SiteSettings(figure_workers=args.workers).options()
    walls, cpus, result = [], [], None
    for r in range(args.repeats):
        root = SiteRoot(str(work / f"site-{r}"))
        load = os.getloadavg()[0]
        started, cpu = time.perf_counter(), _cpu()
        result = leaderboard_site_month(
            lake, month, root, registry={}, min_votes=300, options=options
        )
        walls.append(time.perf_counter() - started)
        cpus.append(_cpu() - cpu)
        print(
            f"  site run {r + 1}: {walls[-1]:.2f}s wall, {cpus[-1]:.1f} CPU-s "
            f"(load {load:.1f}); {result.seconds}"
        )
    print(
        f"site: median {statistics.median(walls):.2f}s wall, {statistics.median(cpus):.1f} CPU-s "
        f"over {args.repeats} runs (target 10 s); {len(result.boards)} boards, "
        f"{result.files} files, {result.bytes_written / 1e6:.1f} MB, {result.models} model pages, "
        f"{options.workers} figure processes; load average now {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
