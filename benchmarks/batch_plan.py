"""A production month's LLM bill in both modes, and the client's CPU per item in each (run
by hand).

    .venv/bin/python benchmarks/batch_plan.py [--conversations 500000] [--out benchmarks/out/batch_plan]
        [--cpu-items 20000] [--repeats 3] [--skip-plan] [--skip-cpu]

**The plan.** Simulates the month (as ``full_month.py`` does: ``--conversations``, 120
models, its seed), materializes what the LLM assets read first (``raw_logs``,
``conversations``, ``battles``; one `dagster asset materialize` run), then runs `arena-assets plan
--json` with every LLM task at OpenAI's base URL (``https://api.openai.com/v1``: nothing is
called, the batch prices default to half) at ``full_month.py``'s prices, and prints per
LLM asset the calls and cost online, the requests, Batch-API jobs and cost in batch mode,
and the month's total. The bench's assets are projected (no bench yet): their figures
are the plan's projection, as `arena-assets plan` prints it.

**The client's CPU per item.** ``--cpu-items`` distinct labelling requests (the month's
first prompts, the criteria prompt) answered by the simulated arena in its own process
(`arena-sim serve`, no latency), once online (concurrency 64) and once in batch mode (one
job, answered at once), each into an empty cache, alternating, ``--repeats`` times: the
client process's CPU seconds (every thread: ``time.process_time``) per item, medians.
Online, that is building, sending and decoding one HTTP call per item; in batch mode,
building the request lines, one upload, the polls, one download and reading the output
lines. Parsing and caching are the same in both.
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
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dagster_runs import BIN, PROJECT, base_env, materialize_cmd, measured
from full_month import CANDIDATE_PRICE, MONTHS, PRICES, month_arguments, simulate

OPENAI = "https://api.openai.com/v1"


def plan_env(out: Path, args) -> dict[str, str]:
    candidates = [
        {
            "name": f"candidate-{i}",
            "base_url": OPENAI,
            "model": f"candidate-{i}",
            "params": {
                "max_tokens": 1024,
                "price_input_per_1m": CANDIDATE_PRICE[0],
                "price_output_per_1m": CANDIDATE_PRICE[1],
            },
        }
        for i in range(args.candidates)
    ]
    over = {
        "ARENA_CANDIDATES": json.dumps(candidates),
        "ARENA_BENCH_BASELINE": "candidate-0",
        "ARENA_BENCH_SIZE": str(args.bench_size),
        "ARENA_BENCH_VISION_SIZE": "0",
        "ARENA_SIM_WORLD_SEED": str(args.seed),
    }
    for task, (pin, pout) in PRICES.items():
        over |= {
            f"ARENA_{task}_BASE_URL": OPENAI,
            f"ARENA_{task}_API_KEY": "sk-plan-only",
            f"ARENA_{task}_PRICE_INPUT_PER_1M": pin,
            f"ARENA_{task}_PRICE_OUTPUT_PER_1M": pout,
        }
    return base_env(out, MONTHS[0], MONTHS[0], **over)


def month_plan(out: Path, args) -> None:
    simulate(out, args, [MONTHS[0]])
    env = plan_env(out, args)
    if not (out / "lake" / "conversations" / f"{MONTHS[0]}.parquet").exists():
        run = measured(
            materialize_cmd(
                "raw_logs,raw_rejects,conversations,battles", ["--partition", MONTHS[0]]
            ),
            env,
            PROJECT,
        )
        assert run.returncode == 0, run.tail
        print(f"ingest + clean: {run.wall:.0f} s wall")
    t = time.perf_counter()
    cmd = [str(BIN / "arena-assets"), "plan", "--month", MONTHS[0], "--json"]
    proc = subprocess.run(cmd, env=env, cwd=PROJECT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plans = json.loads(proc.stdout)
    print(f"plan made in {time.perf_counter() - t:.0f} s\n")
    head = (
        f"{'asset':22} {'online calls':>13} {'online $':>10} {'batch requests':>15} "
        f"{'jobs':>5} {'batch $':>10}"
    )
    print(head + "\n" + "-" * len(head))
    total = dict.fromkeys(("calls", "requests", "jobs", "online", "batch"), 0.0)
    for p in plans:
        calls = sum(b["calls"] for b in p["batches"])
        requests = sum(b["requests"] for b in p["batches"])
        jobs = sum(b["batch_jobs"] for b in p["batches"])
        mark = "" if p["exact"] else " *"
        print(
            f"{p['asset']:22} {calls:>13,} {p['cost_online']:>10.2f} {requests:>15,} "
            f"{jobs:>5,} {p['cost_batch']:>10.2f}{mark}"
        )
        for k, v in zip(total, (calls, requests, jobs, p["cost_online"], p["cost_batch"])):
            total[k] += v
    print(
        f"{'month':22} {total['calls']:>13,.0f} {total['online']:>10.2f} "
        f"{total['requests']:>15,.0f} {total['jobs']:>5,.0f} {total['batch']:>10.2f}"
    )
    print(
        "* projected (inputs not in the lake yet); output at the max_tokens bound where no "
        "answer is cached: an upper bound in both modes alike (`plan --pilot`)"
    )


def client_cpu(out: Path, args) -> None:
    from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
    from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, run_batch

    texts = _texts(out, args.cpu_items)
    reqs = [
        LLMRequest(f"p{i}", criteria_messages(t), CRITERIA_VERSION) for i, t in enumerate(texts)
    ]
    server = subprocess.Popen(
        [str(BIN / "arena-sim"), "serve", "--port", "0", "--world-seed", str(args.seed)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().split(" at ", 1)[1].split()[0]
        online = LLMTask("sim-labeler-large", url, max_concurrency=64, batch_poll_s=0.05)
        tasks = {"online": online, "batch": replace(online, mode="batch")}
        per_item: dict[str, list[float]] = {m: [] for m in tasks}
        for r in range(args.repeats):
            for mode, task in tasks.items():
                with tempfile.TemporaryDirectory(prefix="batch-plan-") as cache:
                    cpu, wall = time.process_time(), time.perf_counter()
                    _, report = run_batch(task, reqs, ResponseCache(cache, "c"), parse_criteria)
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                assert report.statuses["ok"] == len(reqs), report.statuses
                per_item[mode].append(cpu / len(reqs))
                print(
                    f"  {mode:6} run {r + 1}: {cpu:.2f} CPU-s, {wall:.2f} s wall, "
                    f"{report.calls:,} calls, {report.batches_submitted} jobs, "
                    f"load {os.getloadavg()[0]:.1f}"
                )
        for mode, values in per_item.items():
            print(
                f"client CPU per item, {mode}: median {statistics.median(values) * 1e3:.3f} ms "
                f"({', '.join(f'{v * 1e3:.3f}' for v in values)}) over {len(reqs):,} items"
            )
    finally:
        server.terminate()
        server.wait()


def _texts(out: Path, n: int) -> list[str]:
    """``n`` distinct first prompts of the simulated month (cut at 4,000 characters)."""
    import polars as pl

    path = out / "lake" / "conversations" / f"{MONTHS[0]}.parquet"
    if path.exists():
        prompts = pl.read_parquet(path, columns=["first_prompt"])["first_prompt"].unique()
        texts = [t[:4000] for t in prompts.drop_nulls().to_list()[:n]]
        if len(texts) == n:
            return texts
    return [f"Explain topic {i} with a worked example in python" for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    month_arguments(ap)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/batch_plan"))
    ap.add_argument("--cpu-items", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-plan", action="store_true")
    ap.add_argument("--skip-cpu", action="store_true")
    args = ap.parse_args()
    args.completions = 0  # the plan does not read Copilot Arena's pairs
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"load before: {os.getloadavg()[0]:.1f}")
    if not args.skip_plan:
        month_plan(out, args)
    if not args.skip_cpu:
        client_cpu(out, args)


if __name__ == "__main__":
    main()
