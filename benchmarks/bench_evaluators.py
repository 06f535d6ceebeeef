"""What the evaluators and the completions stage cost.

    .venv/bin/python benchmarks/bench_evaluators.py [--sessions 6000] [--sample 1000] \
        [--latency 0.2] [--concurrency 16] [--pairs 100000]

1. judge_human_agreement: a simulated month (upstream materialized through Dagster, not
   timed), then the month step with an LLM judge and a reward model on the simulated arena
   at ``--latency`` seconds a call and ``--concurrency`` parallel calls, fresh cache: wall
   time against the ideal (calls x latency / concurrency), then a cached rerun (0 calls).
2. completion_battles, copilot_leaderboard (both fits) and copilot_user_boards on
   ``--pairs`` simulated Copilot Arena pairs:
   wall and CPU seconds of each step, pairs per CPU-second.

Prints ``uptime``'s load beside the figures (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load() -> str:
    return (
        subprocess.run(["uptime"], capture_output=True, text=True)
        .stdout.strip()
        .split("load average:")[-1]
    )


def bench_agreement(tmp: Path, args: argparse.Namespace) -> None:
    import dataclasses

    from arena_assets.evaluators.judges import parse_judges
    from arena_assets.llm import LLMTask, ResponseCache
    from arena_assets.pipeline.evaluators import judge_human_agreement_month
    from arena_assets.simulator import simulate_months
    from arena_assets.simulator.faults import Faults
    from arena_assets.simulator.shared import simulated_endpoint
    from arena_assets.storage import Lake
    from arena_assets_tests.harness import materialize

    raw, lake_root = tmp / "raw", tmp / "lake"
    env = {
        line.split("=", 1)[0]: line.split("=", 1)[1].strip("'")
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#") and "=" in line
    }
    env |= {
        "ARENA_RAW_ROOT": str(raw),
        "ARENA_LAKE_ROOT": str(lake_root),
        "ARENA_CATALOG": str(tmp / "c.duckdb"),
        "ARENA_MIN_BATTLES": "10",
        "ARENA_MIN_CATEGORY_BATTLES": "100",
    }
    os.environ.update(env)
    simulate_months(raw, ["2024-01"], args.sessions, seed=7)
    assert materialize("2024-01", "raw_logs,raw_rejects,conversations,topic_labels,battles").success
    ep = simulated_endpoint(f"{raw}/_truth", 7, 0.0)
    base = LLMTask(
        model="sim-judge", base_url=ep.base_url, max_concurrency=args.concurrency, max_tokens=512
    )
    specs = parse_judges("sim-judge,reward:sim-reward,longer,markdown")
    cache_root = tmp / "cache"

    def run() -> tuple[float, float, int]:
        before = ep.call_count()
        t0, c0 = time.perf_counter(), cpu()
        judge_human_agreement_month(
            Lake(str(lake_root)),
            "2024-01",
            specs,
            size=args.sample,
            seed=0,
            judge_task=base,
            reward_task=dataclasses.replace(base, model="sim-reward"),
            cache_of=lambda ns: ResponseCache(str(cache_root), ns),
        )
        return time.perf_counter() - t0, cpu() - c0, ep.call_count() - before

    ep.set_faults(Faults(latency=args.latency))
    wall, used, calls = run()
    ideal = calls * args.latency / args.concurrency
    print(
        f"judge_human_agreement, {args.sample} battles, 4 judges (LLM judge 2 games, reward model 2 sides, "
        f"2 baselines): {calls} calls at {args.latency} s, concurrency {args.concurrency}: {wall:.1f} s wall "
        f"(ideal {ideal:.1f} s, ratio {wall / ideal:.2f}), {used:.1f} CPU-s; load {load()}"
    )
    ep.set_faults(Faults())
    wall, used, calls = run()
    print(f"  cached rerun: {calls} calls, {wall:.1f} s wall, {used:.1f} CPU-s")


def bench_completions(tmp: Path, args: argparse.Namespace) -> None:
    from arena_assets.completions.board import CopilotBoardOptions
    from arena_assets.pipeline.completions import (
        completion_battles_month,
        copilot_leaderboard_month,
        copilot_user_boards_month,
    )
    from arena_assets.simulator import World
    from arena_assets.simulator.completions import generate_completions
    from arena_assets.storage import Lake

    t0 = time.perf_counter()
    summary = generate_completions(World.build(seed=7), tmp / "raw2", "2024-01", args.pairs)
    print(
        f"simulated {summary['pairs']} pairs ({summary['records']} records) in {time.perf_counter() - t0:.1f} s"
    )
    lake = Lake(str(tmp / "lake2"))
    t0, c0 = time.perf_counter(), cpu()
    step = completion_battles_month(
        lake, str(tmp / "raw2" / "_completions"), "2024-01", salt="bench"
    )
    wall, used = time.perf_counter() - t0, cpu() - c0
    print(
        f"completion_battles: {step.records_read} records -> {step.battles.height} pairs + "
        f"{step.rejects.height} rejects in {wall:.1f} s wall, {used:.1f} CPU-s "
        f"({step.battles.height / used:,.0f} pairs per CPU-s); load {load()}"
    )
    for fit in ("copilot-arena", "bt"):
        t0, c0 = time.perf_counter(), cpu()
        options = CopilotBoardOptions(bootstrap_rounds=200, fit=fit)
        board = copilot_leaderboard_month(lake, "2024-01", options)
        print(
            f"copilot_leaderboard, fit {fit} (200 bootstrap rounds, "
            f"{board.figures['accepted_pairs']} accepted pairs, {len(board.figures['boards'])} "
            f"boards): {time.perf_counter() - t0:.1f} s wall, {cpu() - c0:.1f} CPU-s"
        )
    t0, c0 = time.perf_counter(), cpu()
    users = copilot_user_boards_month(lake, "2024-01")
    print(
        f"copilot_user_boards: {users.users} boards of {users.users_seen} users: "
        f"{time.perf_counter() - t0:.1f} s wall, {cpu() - c0:.1f} CPU-s; load {load()}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=6000)
    ap.add_argument("--sample", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--skip", choices=("agreement", "completions"), default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-evaluators-") as tmp:
        if args.skip != "agreement":
            bench_agreement(Path(tmp), args)
        if args.skip != "completions":
            bench_completions(Path(tmp), args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
