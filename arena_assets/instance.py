"""One machine's Dagster instance: noticing runs whose process died, freeing what they held,
and stopping the steps they left running.

A run killed mid-step (SIGKILL, OOM, a closed terminal, a reboot) never writes its failure:
it stays STARTED and keeps the pool slots its steps claimed, so the next run of the stage
waits at "Step blocked by limit for pool ..." for good. Dagster's run
monitoring is the cure, but it asks the run launcher whether a run's worker is alive, and
the default launcher cannot say. ``LocalRunLauncher`` (the root ``dagster.yaml``) is the
default launcher plus that answer for runs on this host: the worker's pid is in the run's
own event log (the executor's "Executing steps ... (pid: N)" / "Started process for run"
events), and a pid that is gone, or now belongs to a process started after that event, is
a dead worker. The monitoring daemon then marks the run failed and frees its slots after
``free_slots_after_run_end_seconds``; ``terminate`` (Cancel in the UI) of a dead run cancels
it at once instead of waiting for a worker that will never answer.

Without the daemon (runs started from the shell only), :func:`reap_dead_runs` does the same
in one call: ``arena-assets recover`` runs it, and so does every run ``arena-assets``
starts. Only for one host: on an instance shared by several hosts a pid means nothing
elsewhere, so ``deploy/dagster.yaml`` keeps a launcher that checks its own workers (the
Kubernetes one) and this class is not used there.

A run's steps in processes of their own (the multiprocess executor) must not outlive it:
:func:`die_with_parent_process` (armed by every step, ``defs/failures.py``) and
:func:`stale_writer` (asked by the lake before each rename) see to it, on any host.
"""

from __future__ import annotations

import os

from dagster import DagsterInstance, DagsterRunStatus
from dagster._core.events import DagsterEventType
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, WorkerStatus
from dagster._core.storage.dagster_run import DagsterRun, RunsFilter

# a process started this long after the pid was recorded is another process (pid reuse)
START_SLACK_S = 2.0


def worker_pid(instance: DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """(pid, when it was recorded) of the run's worker process: the latest run-level engine
    event that carries a pid (step-level ones are the steps' own processes)."""
    records = instance.get_records_for_run(
        run_id, of_type=DagsterEventType.ENGINE_EVENT, ascending=False, limit=200
    ).records
    for record in records:
        entry = record.event_log_entry
        event = entry.dagster_event
        if event is None or event.step_key is not None:
            continue
        meta = getattr(event.event_specific_data, "metadata", None) or {}
        pid = meta.get("pid")
        if pid is not None and str(pid.value).isdigit():
            return int(pid.value), entry.timestamp
    return None


def worker_alive(instance: DagsterInstance, run: DagsterRun) -> bool | None:
    """True / False, or None when the run recorded no worker pid yet (starting)."""
    import psutil

    found = worker_pid(instance, run.run_id)
    if found is None:
        return None
    pid, recorded = found
    try:
        process = psutil.Process(pid)
        started = process.create_time()
        return process.status() != psutil.STATUS_ZOMBIE and started <= recorded + START_SLACK_S
    except psutil.NoSuchProcess:
        return False


class LocalRunLauncher(DefaultRunLauncher):
    """The default run launcher, able to tell run monitoring when a worker died."""

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        alive = worker_alive(self._instance, run)
        if alive is False:
            return CheckRunHealthResult(WorkerStatus.FAILED, "the run's worker process is gone")
        if alive is None:
            return CheckRunHealthResult(WorkerStatus.UNKNOWN, "no worker pid recorded yet")
        return CheckRunHealthResult(WorkerStatus.RUNNING)

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished and worker_alive(self._instance, run) is False:
            self._instance.report_run_canceling(run)
            self._instance.report_run_canceled(run, "the run's worker process was already gone")
            self._instance.event_log_storage.free_concurrency_slots_for_run(run_id)
            return True
        return super().terminate(run_id)


def reap_dead_runs(instance: DagsterInstance) -> list[str]:
    """Fail (or, when cancelling, cancel) every run of this host whose worker is gone, and
    free the pool slots it held; returns their ids. Safe to call any time: a live or
    starting run is left alone."""
    reaped = []
    runs = instance.get_runs(
        RunsFilter(statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING])
    )
    for run in runs:
        if worker_alive(instance, run) is not False:
            continue
        if run.status == DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run, "the run's worker process was gone")
        else:
            instance.report_run_failed(
                run,
                "the run's worker process died (killed?); marked failed and its pool slots freed",
            )
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        reaped.append(run.run_id)
    # slots of runs that ended without giving them back (a step killed after its run ended)
    if instance.event_log_storage.supports_global_concurrency_limits:
        for run_id in instance.event_log_storage.get_concurrency_run_ids():
            run = instance.get_run_by_id(run_id)
            if (run is None or run.is_finished) and (
                instance.event_log_storage.free_concurrency_slots_for_run(run_id)
            ):
                reaped.append(run_id)
    return sorted(set(reaped))


# -- a step process whose run died --------------------------------------------------------
# The multiprocess executor runs each step in a process of its own, started by the run's
# process. A run process killed with SIGKILL cannot stop them: they were reparented and
# went on writing the lake after the kill. Two guards: the step process dies with the
# process that started it (the kernel's parent-death signal, Linux), and a lake write
# asks, just before its rename, whether its run may still write (``stale_writer``).

_PR_SET_PDEATHSIG = 1
_armed: list[int] = []  # the pid this process armed its parent-death signal in


def _prctl():
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None


def die_with_parent_process() -> None:
    """In a step's own process (one the multiprocess executor, or a worker pool, started
    with ``multiprocessing``): have the kernel SIGKILL it the moment the process that
    started it dies, and die now if that process is already gone (it may have died before
    the signal was armed). In the run's own process (the in-process executor) there is
    nothing to do: the step is the run. Once per process; Linux only (elsewhere the
    write guard, ``stale_writer``, is what stops the writes)."""
    import multiprocessing
    import signal

    parent = multiprocessing.parent_process()
    if parent is None or os.getpid() in _armed:
        return
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        _armed.append(os.getpid())
    if not parent.is_alive():  # the sentinel: closed when the starting process is gone
        os.kill(os.getpid(), signal.SIGKILL)


def stale_writer(instance: DagsterInstance | None, run_id: str | None) -> str | None:
    """Why a step may no longer write (the process that started its process is gone, or
    its run has ended or is being cancelled), or None when it may. Asked by the lake just
    before a write is renamed into place (``storage.Lake.guard``)."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is not None and not parent.is_alive():
        return (
            f"the process that started this step (pid {parent.pid}, its run's) is gone, "
            "so the run was killed"
        )
    if instance is None or not run_id:
        return None
    run = instance.get_run_by_id(run_id)
    if run is not None and (run.is_finished or run.status == DagsterRunStatus.CANCELING):
        return f"its run {run_id} is {run.status.value}: it ended while this step went on"
    return None
