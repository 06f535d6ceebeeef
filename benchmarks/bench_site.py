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

import numpy as np
import polars as pl

LANGUAGES = (("en", 0.55), ("zh", 0.12), ("ru", 0.08), ("es", 0.07), ("de", 0.06),
             ("fr", 0.06), ("ja", 0.06))
# share of battles with each label (roughly LMArena's category sizes)
LABEL_RATES = {"hard": 0.25, "code": 0.18, "math": 0.08, "creative_writing": 0.10,
               "is_vision": 0.08}


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def make_lake(lake, month: str, battles: int, models: int, seed: int) -> None:
    from arena_assets.ranking.synthetic import sample_bt_battles

    rng = np.random.default_rng(seed)
    ratings = rng.normal(1000, 120, models)
    frame = sample_bt_battles(ratings, battles, seed, tie_rate=0.15,
                              style_coef={"sum_assistant_tokens": 0.3, "header_count": 0.05},
                              popularity=np.exp(rng.normal(0, 0.6, models)))
    codes, shares = zip(*LANGUAGES)
    reasons = np.array([None, "identity_leak", "anomalous_voter", "daily_cap", "top_prompt_dedup"],
                       dtype=object)
    removed = rng.choice(len(reasons), battles, p=[0.9, 0.02, 0.03, 0.03, 0.02])
    conv = np.arange(battles)
    frame = frame.with_columns(
        keep=pl.Series(removed == 0), removed_reason=pl.Series(reasons[removed].tolist(), dtype=pl.String),
        language=pl.Series(np.array(codes)[rng.choice(len(codes), battles, p=shares)]),
        conv_id_a=pl.Series([f"c{i}a" for i in conv]), conv_id_b=pl.Series([f"c{i}b" for i in conv]),
        turn=pl.Series(1 + (rng.random(battles) < 0.15).astype(np.int64)))
    lake.write("battles", month, frame)
    labels = {"conv_id": frame["conv_id_a"], "refusal": rng.random(battles) < 0.05,
              "if_score": rng.integers(0, 6, battles).astype(np.int32),
              "prompt_chars": np.where(rng.random(battles) < 0.08, 3000, 300).astype(np.int32)}
    for name, rate in LABEL_RATES.items():
        labels[name] = rng.random(battles) < rate
    vision = labels["is_vision"]
    for name in ("captioning", "ocr", "entity_recognition", "humor", "homework", "diagram",
                 "creative_writing"):
        labels[f"vision_{name}"] = vision & (rng.random(battles) < 0.3)
    lake.write("topic_labels", month, pl.DataFrame(labels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0, help="figure processes (0 = as the asset)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    from arena_assets.defs.site.resources import SiteSettings
    from arena_assets.pipeline.leaderboards import (arena_leaderboard_month, battle_cells_month,
                                                    leaderboard_history_month)
    from arena_assets.pipeline.site import leaderboard_site_month
    from arena_assets.ranking.boards import board_options
    from arena_assets.site.publish import SiteRoot
    from arena_assets.storage import Lake

    work = Path(tempfile.mkdtemp(prefix="bench-site-"))
    lake = Lake(str(work / "lake"))
    month = "2024-06"
    started = time.perf_counter()
    make_lake(lake, month, args.battles, args.models, args.seed)
    print(f"lake: {args.battles:,} battles, {args.models} models in {time.perf_counter() - started:.1f}s")
    started, cpu = time.perf_counter(), _cpu()
    battle_cells_month(lake, month)
    step = arena_leaderboard_month(lake, month, board_options(bootstrap_rounds=200, min_battles=300),
                                   min_category_battles=1000)
    leaderboard_history_month(lake, month)
    print(f"leaderboards (battle_cells, arena_leaderboard, history; not in the target): "
          f"{time.perf_counter() - started:.1f}s wall, {_cpu() - cpu:.1f} CPU-s, "
          f"{step.boards['board'].n_unique()} boards")
    options = SiteSettings(figure_workers=args.workers).options()
    walls, cpus, result = [], [], None
    for r in range(args.repeats):
        root = SiteRoot(str(work / f"site-{r}"))
        load = os.getloadavg()[0]
        started, cpu = time.perf_counter(), _cpu()
        result = leaderboard_site_month(lake, month, root, registry={}, min_votes=300,
                                        options=options)
        walls.append(time.perf_counter() - started)
        cpus.append(_cpu() - cpu)
        print(f"  site run {r + 1}: {walls[-1]:.2f}s wall, {cpus[-1]:.1f} CPU-s "
              f"(load {load:.1f}); {result.seconds}")
    print(f"site: median {statistics.median(walls):.2f}s wall, {statistics.median(cpus):.1f} CPU-s "
          f"over {args.repeats} runs (target 10 s); {len(result.boards)} boards, "
          f"{result.files} files, {result.bytes_written / 1e6:.1f} MB, {result.models} model pages, "
          f"{options.workers} figure processes; load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
