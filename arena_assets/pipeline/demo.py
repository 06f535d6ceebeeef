"""`arena-assets demo`: simulate an arena, materialize every asset of every month, print
the summary. The runs go through Dagster against the project's instance (DAGSTER_HOME), as
the UI's do, so `make ui` shows them afterwards: by default a parallel backfill's runs
executed by two in-process workers (``worker_pool.py``); ``--workers 1``: one run per
month in this process."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from arena_assets.pipeline.cli import (
    EVERY_ASSET_JOB,
    _children_cpu,
    _env_setting,
    _is_url,
    _remove,
    _storage_options,
    materialize,
    summary,
)
from arena_assets.pipeline.worker_pool import cli_environment

DEMO_MONTHS = ("2024-01", "2024-02", "2024-03")
DEMO_CONVERSATIONS_PER_MONTH = 3000
DEMO_SEED = 7


def materialize_months_parallel(months: list[str], workers: int) -> None:
    """The months as a parallel backfill (``backfill.plan_parallel``: months that do not
    depend on each other at once), its runs executed by ``workers`` long-lived in-process
    workers (``pipeline/worker_pool.py``), then each month's publishing runs (the release,
    the site and the job's remaining checks), in month order. Same tables as the
    month-by-month runs of ``materialize_months_here`` (test_demo_s3)."""
    with cli_environment():
        _execute_parallel(months, workers)


def _execute_parallel(months: list[str], workers: int) -> None:
    from arena_assets.definitions import defs
    from arena_assets.pipeline.backfill import ParallelRun, run_ops
    from arena_assets.pipeline.cli import _reap_dead_runs, backfill_plan
    from arena_assets.pipeline.parallel_backfill import parallel_backfill_plan
    from arena_assets.pipeline.worker_pool import execute_runs, job_ops

    _reap_dead_runs()  # runs of an earlier demo killed mid-run hold pool slots
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

    from arena_assets.definitions import defs
    from arena_assets.instance import reap_dead_runs
    from arena_assets.pipeline.worker_pool import EXECUTOR_TAG, QUIET, failure_text

    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    job = defs().get_job_def(EVERY_ASSET_JOB)
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

    fs, root = fsspec.core.url_to_fs(url, **_storage_options(url))
    for path in sorted(Path(local).rglob("*")):
        if path.is_file():
            fs.put_file(str(path), f"{root.rstrip('/')}/{path.relative_to(local).as_posix()}")


def run_demo(args: argparse.Namespace) -> int:
    from arena_assets.simulator import simulate_months

    raw_root = _env_setting("ARENA_RAW_ROOT", "./data/raw")
    lake_root = _env_setting("ARENA_LAKE_ROOT", "./data/lake")
    catalog = _env_setting("ARENA_CATALOG", "./data/arena.duckdb")
    months = list(args.months)
    started = time.perf_counter()
    if args.fresh:
        for path in (raw_root, lake_root, catalog):
            _remove(path)
    print(f"Simulating {len(months)} months x {args.per_month} conversations into {raw_root} ...")
    if _is_url(raw_root):
        # the simulator writes local files; the platform's raw logs then live in the bucket
        with tempfile.TemporaryDirectory(prefix="arena-raw-") as local:
            simulate_months(
                local,
                months,
                args.per_month,
                seed=args.seed,
                completions_per_month=args.per_month // 2,
            )
            _upload(local, raw_root)
    else:
        # Copilot Arena pairs too (their own random stream: the chat logs do not change)
        simulate_months(
            raw_root,
            months,
            args.per_month,
            seed=args.seed,
            completions_per_month=args.per_month // 2,
        )
    print(f"  simulated in {time.perf_counter() - started:.1f}s")
    parallel = args.executor == "in_process" and args.workers > 1 and _parallel_ok(months)
    how = (
        f"a parallel backfill's runs, {args.workers} in-process workers"
        if parallel
        else f"{args.executor} executor, month by month"
    )
    print(f"Materializing every asset through Dagster ({EVERY_ASSET_JOB} job, {how}) ...")
    with _demo_arena(raw_root):
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


# the LLM tasks whose base URL may be `simulated` (.env.example)
SIMULATED_TASK_URLS = (
    "ARENA_LABELER_BASE_URL",
    "ARENA_EMBED_BASE_URL",
    "ARENA_JUDGE_BASE_URL",
    "ARENA_REWARD_BASE_URL",
)


@contextmanager
def _demo_arena(raw_root: str):
    """Every LLM task set to ``simulated`` goes to one simulated arena in a child process
    for the whole demo (``simulator/child.py``: a third less CPU than a server inside each
    run), through ``ARENA_SIM_BASE_URL``: the tasks keep saying ``simulated``, so the lake
    and the metadata do not record a port that is gone when the demo ends. Not when the raw
    logs are on object storage (the in-process arena reads their truth with the lake's
    credentials), nor when no task is ``simulated`` or ARENA_SIM_BASE_URL already names an
    arena."""
    from arena_assets.llm.simulated import SIMULATED
    from arena_assets.simulator.child import arena_process, child_environment_ok

    wanted = any(_env_setting(name, "").strip() == SIMULATED for name in SIMULATED_TASK_URLS)
    if (
        _is_url(raw_root)
        or not wanted
        or not child_environment_ok()
        or _env_setting("ARENA_SIM_BASE_URL", "").strip()
    ):
        yield
        return
    latency = _env_setting("ARENA_SIM_LATENCY", "").strip()
    with arena_process(
        int(_env_setting("ARENA_SIM_WORLD_SEED", "7")), raw_root, float(latency) if latency else 0.0
    ) as url:
        saved = os.environ.get("ARENA_SIM_BASE_URL")
        os.environ["ARENA_SIM_BASE_URL"] = url  # the runs' environment: the shell wins over .env
        print(f"  the simulated arena serves the LLM tasks at {url} (a child process)")
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("ARENA_SIM_BASE_URL", None)
            else:
                os.environ["ARENA_SIM_BASE_URL"] = saved


def _cpu_seconds() -> str:
    """CPU seconds of this process (with the in-process executor: the runs) and of its
    children (the simulated arena; with ``--executor multiprocess``, the runs too): figures
    a busy machine changes less than wall time."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    return (
        f"CPU {own.ru_utime + own.ru_stime:.0f}s in this process + {_children_cpu():.0f}s in "
        "child processes"
    )
