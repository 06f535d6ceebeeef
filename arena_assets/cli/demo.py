"""`arena-assets demo`: simulate an arena, materialize every asset of every month, print
the summary. The runs go through Dagster against the project's instance (DAGSTER_HOME), as
the UI's do, so `make ui` shows them afterwards: by default a parallel backfill's runs
executed by two in-process workers (``worker_pool.py``); ``--workers 1``: one run per
month in this process."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from arena_assets.cli.common import (
    EVERY_ASSET_JOB,
    children_cpu,
    env_setting,
    free_dead_runs,
    is_url,
    remove_path,
    storage_options,
)
from arena_assets.cli.runs import materialize, summary
from arena_assets.cli.worker_pool import cli_environment

DEMO_MONTHS = ("2024-01", "2024-02", "2024-03")
DEMO_CONVERSATIONS_PER_MONTH = 3000
DEMO_SEED = 7


def materialize_months_parallel(months: list[str], workers: int) -> None:
    """The months as a parallel backfill (``backfill.plan_parallel``: months that do not
    depend on each other at once), its runs executed by ``workers`` long-lived in-process
    workers (``cli/worker_pool.py``), then each month's publishing runs (the release,
    the site and the job's remaining checks), in month order. Same tables as the
    month-by-month runs of ``materialize_months_here`` (test_demo_s3)."""
    with cli_environment():
        _execute_parallel(months, workers)


def _execute_parallel(months: list[str], workers: int) -> None:
    from arena_assets.cli.backfill import backfill_plan, parallel_backfill_plan
    from arena_assets.cli.worker_pool import execute_runs, job_ops
    from arena_assets.definitions import defs
    from arena_assets.pipeline.backfill import ParallelRun, run_ops

    free_dead_runs()  # runs of an earlier demo killed mid-run hold pool slots
    plan = parallel_backfill_plan(months[0], months[-1])
    ops = backfill_plan(months[0], months[-1], None)[1]
    planned = set(ops.values())
    publishing = tuple(op for op in job_ops(defs()) if op not in planned)
    runs, before = list(plan), frozenset(r.key for r in plan)
    for month in months:  # publishing reads every stage of its month; months in order
        runs.append(ParallelRun(("publish", month), publishing, (month,), before))
        before = frozenset({("publish", month)})

    def ops_of(run: ParallelRun) -> list[str]:
        return list(run.assets) if run.key[0] == "publish" else run_ops(run.assets, ops)

    started = time.perf_counter()
    left = execute_runs(runs, ops_of, workers)
    if left:
        raise SystemExit(
            f"materialization failed: {len(left)} of {len(runs)} runs failed or did "
            "not start (the errors are above)"
        )
    print(f"  {len(runs)} runs, up to {workers} at once, in {time.perf_counter() - started:.1f}s")


def materialize_months_here(months: list[str]) -> None:
    """One run of the every-asset job per month, like ``materialize("*", month)``, but all
    executed in this process (the in-process executor): Dagster, the code location and the
    stages' libraries are imported once instead of once per month (~10 CPU-s a run on 2
    cores). The runs are recorded in the instance (DAGSTER_HOME) with the job's name, so
    ``make ui`` shows them as it shows launched ones; Dagster's event log goes to the
    instance, not the console. The settings are the CLI's: the shell wins over ``.env``."""
    with cli_environment():
        _execute_months(months)


def _execute_months(months: list[str]) -> None:
    import warnings

    import dagster as dg

    from arena_assets.cli.worker_pool import EXECUTOR_TAG, QUIET, failure_text
    from arena_assets.definitions import defs
    from arena_assets.instance import reap_dead_runs

    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    job = defs().resolve_job_def(EVERY_ASSET_JOB)
    instance = (
        dg.DagsterInstance.get()
        if os.environ.get("DAGSTER_HOME")
        else dg.DagsterInstance.ephemeral()
    )
    with instance:
        for month in months:
            # runs of an earlier demo killed mid-run hold pool slots: free them (on the
            # instance already open, not a second one per month)
            for run_id in reap_dead_runs(instance):
                print(f"  run {run_id}: its worker had died; marked ended, pool slots freed")
            started, cpu = time.perf_counter(), _own_cpu()
            result = job.execute_in_process(
                run_config=QUIET,
                instance=instance,
                partition_key=month,
                raise_on_error=False,
                tags={EXECUTOR_TAG: "in_process"},
            )
            if not result.success:
                sys.stderr.write(failure_text(result) + "\n")
                raise SystemExit(f"materialization of * for {month} failed (run {result.run_id})")
            print(
                f"  {month}: materialized * in {time.perf_counter() - started:.1f}s "
                f"(CPU {_own_cpu() - cpu:.1f}s)"
            )


def _own_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _upload(local: str, url: str) -> None:
    import fsspec

    fs, root = fsspec.core.url_to_fs(url, **storage_options(url))
    for path in sorted(Path(local).rglob("*")):
        if path.is_file():
            fs.put_file(str(path), f"{root.rstrip('/')}/{path.relative_to(local).as_posix()}")


def _simulate(out: str, months: list[str], per_month: int, seed: int) -> None:
    """The simulator's own program writes the months' raw logs (and Copilot Arena pairs, on
    their own random stream: the chat logs do not change), as a platform would."""
    from arena_assets.cli.arena_child import ARENA_SIM

    cmd = [str(ARENA_SIM), "simulate", "--out", out, "--months", *months]
    cmd += ["--per-month", str(per_month), "--seed", str(seed)]
    cmd += ["--completions", str(per_month // 2)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"arena-sim simulate failed (exit status {proc.returncode})")


def run_demo(args: argparse.Namespace) -> int:
    from arena_assets.cli.arena_child import simulated_arena_for_runs
    from arena_assets.cli.site_server import site_for_runs

    raw_root = env_setting("ARENA_RAW_ROOT", "./data/raw")
    lake_root = env_setting("ARENA_LAKE_ROOT", "./data/lake")
    catalog = env_setting("ARENA_CATALOG", "./data/arena.duckdb")
    months = list(args.months)
    started = time.perf_counter()
    if args.fresh:
        for path in (raw_root, lake_root, catalog):
            remove_path(path)
    print(f"Simulating {len(months)} months x {args.per_month} conversations into {raw_root} ...")
    with ExitStack() as stack:
        local = raw_root
        if is_url(raw_root):
            # the simulator writes local files; the platform's raw logs then live in the
            # bucket, and the arena reads its hidden truth from the local copy
            local = stack.enter_context(tempfile.TemporaryDirectory(prefix="arena-raw-"))
        _simulate(local, months, args.per_month, args.seed)
        if local != raw_root:
            _upload(local, raw_root)
        print(f"  simulated in {time.perf_counter() - started:.1f}s")
        parallel = args.executor == "in_process" and args.workers > 1 and _parallel_ok(months)
        how = (
            f"a parallel backfill's runs, {args.workers} in-process workers"
            if parallel
            else f"{args.executor} executor, month by month"
        )
        print(f"Materializing every asset through Dagster ({EVERY_ASSET_JOB} job, {how}) ...")
        url = stack.enter_context(simulated_arena_for_runs(env_setting, local, args.seed))
        if url:
            print(f"  the simulated arena serves the LLM tasks at {url} (arena-sim serve)")
        # the site's links in the runs' metadata: the address `arena-assets ui` serves it at
        site = stack.enter_context(site_for_runs(env_setting))
        if site:
            print(f"  the leaderboard site is served at {site}/ (`make ui` serves it afterwards)")
        if parallel:
            materialize_months_parallel(months, args.workers)
        elif args.executor == "in_process":
            materialize_months_here(months)
        else:
            for month in months:
                materialize("*", month, executor=args.executor)
    print()
    print(summary(catalog, lake_root, raw_root))
    print(f"\nDemo finished in {time.perf_counter() - started:.0f}s ({_cpu_seconds()}).")
    return 0


def _parallel_ok(months: list[str]) -> bool:
    """A parallel backfill covers a contiguous range of months, and its workers share the
    project's instance (an ephemeral one per worker would split the runs)."""
    from arena_assets.pipeline.backfill import MonthError, months_between

    try:
        return bool(os.environ.get("DAGSTER_HOME")) and months == months_between(
            months[0], months[-1]
        )
    except MonthError:  # a list in another order, or not months: the month-by-month path says
        return False


def _cpu_seconds() -> str:
    """CPU seconds of this process (with the in-process executor: the runs) and of its
    children (the simulated arena; with ``--executor multiprocess``, the runs too): figures
    a busy machine changes less than wall time."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    return (
        f"CPU {own.ru_utime + own.ru_stime:.0f}s in this process + {children_cpu():.0f}s in "
        "child processes"
    )


def register(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="simulate an arena and materialize every asset")
    demo.add_argument("--months", nargs="+", default=list(DEMO_MONTHS))
    demo.add_argument("--per-month", type=int, default=DEMO_CONVERSATIONS_PER_MONTH)
    demo.add_argument("--seed", type=int, default=DEMO_SEED)
    demo.add_argument(
        "--keep",
        dest="fresh",
        action="store_false",
        help="keep existing raw data, lake and catalog",
    )
    demo.add_argument(
        "--executor",
        choices=["in_process", "multiprocess"],
        default="in_process",
        help="the runs' executor: in_process (default; every month's run in "
        "this process, the steps one after another) or multiprocess (each month "
        "launched with `dg launch`, a process per step, as a run launched from "
        "the UI without run config)",
    )
    demo.add_argument(
        "--workers",
        type=int,
        default=2,
        help="in_process: runs at once, each in one of this many worker "
        "processes (months that do not depend on each other at once, as "
        "`backfill --parallel`); 1 = one run per month, one after another",
    )
    demo.set_defaults(func=run_demo)
