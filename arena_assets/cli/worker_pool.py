"""A backfill's runs executed by a few long-lived worker processes, each with Dagster's
in-process executor: the parallelism of ``arena-assets backfill --parallel N`` (months that
do not depend on each other at once, ``backfill.plan_parallel``) without starting a process,
and importing Dagster and the code location (~5 CPU-s), for every run. ``make demo`` runs
its months this way.

Each run is the every-asset job restricted to the run's ops, recorded in the instance
(DAGSTER_HOME) with the job's name and the run's partition or range, as the CLI's runs
are, and tagged ``arena/executor=in_process``. The workers are spawned, not forked: the
parent has used polars already (the simulator), and a forked child of a process whose
polars thread pool runs can deadlock in its first parallel operation.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass

from arena_assets.cli.common import EVERY_ASSET_JOB
from arena_assets.pipeline.backfill import ParallelRun, PlannedRun

EXECUTOR_TAG = "arena/executor"  # execute_in_process records no executor in the run config
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}

_job = None
_instance = None


@dataclass(frozen=True)
class RunOutcome:
    success: bool
    run_id: str
    errors: str  # the failed steps' messages and errors, empty on success
    wall_s: float
    cpu_s: float  # the worker's CPU during the run


def _start_worker() -> None:
    """Once per worker: Dagster, the code location and the instance."""
    global _job, _instance
    import warnings

    import dagster as dg

    from arena_assets.definitions import defs

    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="dagster")
    _job = defs().resolve_job_def(EVERY_ASSET_JOB)
    # without DAGSTER_HOME the runs still write the lake, unrecorded (as `dagster job execute`)
    _instance = (
        dg.DagsterInstance.get()
        if os.environ.get("DAGSTER_HOME")
        else dg.DagsterInstance.ephemeral()
    )


def _ready() -> int:
    return os.getpid()


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _execute(ops: tuple[str, ...], months: tuple[str, ...]) -> RunOutcome:
    started, cpu = time.perf_counter(), _cpu()
    one = len(months) == 1  # one month: partition_key; a range: the range tags
    tags = {EXECUTOR_TAG: "in_process"} | ({} if one else PlannedRun((), months).partition_tags)
    result = _job.execute_in_process(
        run_config=QUIET,
        instance=_instance,
        op_selection=list(ops),
        partition_key=months[0] if one else None,
        tags=tags,
        raise_on_error=False,
    )
    return RunOutcome(
        result.success,
        result.run_id,
        failure_text(result),
        time.perf_counter() - started,
        _cpu() - cpu,
    )


def failure_text(result) -> str:
    """The failed steps' messages and errors of an in-process run's result ("" if none)."""
    errors = []
    for event in result.all_events:
        if event.is_step_failure or event.is_run_failure:
            errors.append(f"{event.step_key or 'run'}: {event.message}")
            error = getattr(event.event_specific_data, "error", None)
            if error is not None:
                errors.append(error.to_string()[-3000:])
    return "\n".join(errors)


@contextmanager
def cli_environment():
    """The CLI's settings for the runs (the shell wins over ``.env``), set in this
    process's environment, which spawned workers inherit; undone afterwards."""
    from arena_assets.envfile import dagster_workdir

    with dagster_workdir(".") as (_, env):
        saved = dict(os.environ)
        os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def job_ops(definitions) -> list[str]:
    """Every op of the every-asset job (assets, their checks, the freshness checks)."""
    return list(definitions.resolve_job_def(EVERY_ASSET_JOB).graph.node_dict)


def execute_runs(
    runs: list[ParallelRun],
    ops_of,
    workers: int,
    report=print,
    *,
    execute=_execute,
    initializer=_start_worker,
) -> list[ParallelRun]:
    """Execute ``runs`` (in plan order, each once what it waits for succeeded) with at most
    ``workers`` at once; ``ops_of(run)`` names the job's ops a run executes. ``report``
    gets one line per finished run. Returns the runs that failed or never started (they
    waited on a failed one); after a failure nothing new starts, started runs finish.
    ``execute(ops, months) -> RunOutcome`` and ``initializer`` run in the workers (module
    level, for spawn)."""
    spawn = multiprocessing.get_context("spawn")
    failed: list[ParallelRun] = []
    done: set = set()
    pending = list(runs)
    with ProcessPoolExecutor(workers, mp_context=spawn, initializer=initializer) as pool:
        for _ in range(workers):  # start the workers' imports now, in parallel
            pool.submit(_ready)
        running: dict[Future, ParallelRun] = {}
        while pending or running:
            while not failed and len(running) < workers:
                ready = next((r for r in pending if r.after <= done), None)
                if ready is None:
                    break
                pending.remove(ready)
                try:
                    running[pool.submit(execute, tuple(ops_of(ready)), ready.months)] = ready
                except BrokenProcessPool as exc:  # a worker died (killed, out of memory)
                    failed.append(ready)
                    report(f"  {ready.label}: {_short(ready.assets)} not started: {exc}")
            if not running:
                break  # what is left waits on a failed run
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                run = running.pop(future)
                try:
                    outcome = future.result()
                except Exception as exc:
                    outcome = RunOutcome(False, "-", f"the worker failed: {exc!r}", 0.0, 0.0)
                what = _short(run.assets)
                if outcome.success:
                    done.add(run.key)
                    report(
                        f"  {run.label}: {what} in {outcome.wall_s:.1f}s (CPU {outcome.cpu_s:.1f}s)"
                    )
                else:
                    failed.append(run)
                    report(f"  {run.label}: {what} FAILED (run {outcome.run_id})\n{outcome.errors}")
    for run in pending:
        report(f"  {run.label}: {_short(run.assets)} not started (it waits on a failed run)")
    return failed + pending


def _short(assets: tuple[str, ...]) -> str:
    return (
        ", ".join(assets)
        if len(assets) <= 3
        else f"{', '.join(assets[:3])} +{len(assets) - 3} more"
    )
