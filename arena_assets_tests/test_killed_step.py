"""A killed run's steps die with it, and cannot write after it.

`dagster job execute` (what `arena-assets backfill` runs) with the multiprocess executor
runs each step in a process of its own. The run process is killed with SIGKILL while its
`conversations` step holds, its temporary file complete, just before the rename
(``held_location.py``: a FIFO the test controls). Then:

- the step process is gone at once (its parent-death signal), and the partition is the
  one from before the run;
- with the parent-death signal off, the step wakes after the kill and tries to rename: the
  lake's write guard refuses (the run's process is gone), the step fails with that line,
  and the partition is the one from before the run.

And in process: a run marked failed while its step still runs has that step's write
refused (the guard asks the instance for the run's status).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import polars as pl
import psutil
import pytest
from dagster_duckdb import DuckDBResource

from arena_assets.defs.resources import ArenaStorage
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

ROOT = Path(__file__).resolve().parents[1]
MONTH = "2024-02"


def _wait(predicate, timeout: float, what: str) -> None:
    """Poll a condition (no fixed sleep decides anything: the loop ends when it holds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _partition(lake: Lake) -> tuple[int, str]:
    """(inode, digest) of the partition file: a rename into place changes the inode."""
    path = Path(lake.partition_path("conversations", MONTH))
    return path.stat().st_ino, hashlib.sha256(path.read_bytes()).hexdigest()


def _release(fifo: Path) -> bool:
    """Let a held step go on; False when no step is there to read (it died)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # no reader: the held step is gone
            return False
        raise
    with os.fdopen(fd, "w") as out:
        out.write("go")
    return True


@pytest.fixture
def killed_mid_step(arena_env, tmp_path, monkeypatch):
    """Run conversations 2024-02 through `dagster job execute` (multiprocess), hold its
    step just before the rename, SIGKILL the run process. Yields (step pid, lake, the
    partition before, the FIFO, the run's log file); an extra env may be set first with
    ``monkeypatch``."""

    def start(extra_env: dict[str, str]):
        simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 40, seed=3)
        assert materialize(MONTH, "raw_logs,raw_rejects,conversations").success
        lake = Lake(arena_env["ARENA_LAKE_ROOT"])
        before = _partition(lake)
        home = tmp_path / "home"
        home.mkdir()
        (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
        hold = tmp_path / "hold"
        hold.mkdir()
        os.mkfifo(hold / "release")
        work = tmp_path / "work"  # no .env here: the environment is the test's
        work.mkdir()
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DAGSTER_HOME": str(home),
            "HELD_LOCATION_DIR": str(hold),
            **extra_env,
        }
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        log = tmp_path / "run.log"
        run = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("dagster")),
                "job",
                "execute",
                "-m",
                "arena_assets_tests.held_location",
                "-j",
                "monthly_refresh",
                "-o",
                "conversations",
                "--tags",
                json.dumps({"dagster/partition": MONTH}),
            ],
            cwd=work,
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        held = hold / "held"
        try:
            _wait(lambda: held.exists() or run.poll() is not None, 600, "the step to hold")
            assert run.poll() is None, "the run ended first: " + log.read_text()[-3000:]
            step = int(held.read_text())
            assert step != run.pid and _alive(step)  # the step is a process of its own
            os.kill(run.pid, signal.SIGKILL)  # the run process only, as `kill -9 <pid>` does
        finally:
            run.wait(timeout=60)
        steps.append(step)
        return step, lake, before, hold / "release", log

    steps: list[int] = []
    yield start
    for step in steps:  # a step that outlived its run is ours to stop
        if _alive(step):
            os.kill(step, signal.SIGKILL)


def test_a_killed_runs_step_process_dies_with_it(killed_mid_step):
    step, lake, before, fifo, _log = killed_mid_step({})
    _wait(lambda: not _alive(step), 30, "the step process to die with its run")
    assert not _release(fifo)  # nobody was left to read it
    assert _partition(lake) == before


@pytest.mark.slow
def test_the_write_guard_refuses_a_step_that_outlived_its_run(killed_mid_step):
    step, lake, before, fifo, _log = killed_mid_step({"HELD_LOCATION_NO_DEATH_SIGNAL": "1"})
    assert _alive(step)  # without its death signal the step outlives the run
    assert _release(fifo)
    _wait(lambda: not _alive(step), 120, "the step to finish")
    assert _partition(lake) == before
    with dg.DagsterInstance.get() as instance:
        (run,) = instance.get_runs()
        failures = [
            record.event_log_entry.dagster_event.step_failure_data.user_failure_data.description
            for record in instance.get_records_for_run(
                run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE
            ).records
        ]
    assert len(failures) == 1, failures
    assert failures[0].startswith(f"conversations {MONTH} not written: the process that started")
    assert "is left as it was" in failures[0] and "\n" not in failures[0]


def test_a_run_marked_ended_cannot_write(tmp_path):
    """The guard's other half, in a real run: once the run is marked failed (as run
    monitoring, Cancel or `arena-assets recover` leave a run whose worker they think dead)
    a step still running is refused its write."""

    @dg.asset
    def probe(context, storage: ArenaStorage) -> None:
        context.instance.report_run_failed(context.run)
        storage.lake().write("probe", MONTH, pl.DataFrame({"x": [1]}))

    storage = ArenaStorage(
        catalog=DuckDBResource(database=str(tmp_path / "catalog.duckdb")),
        lake_root=str(tmp_path / "lake"),
    )
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(
            [probe], resources={"storage": storage}, instance=instance, raise_on_error=False
        )
    (event,) = result.get_step_failure_events()
    said = event.step_failure_data.error.cause.message
    assert f"probe {MONTH} not written: its run {result.run_id} is FAILURE" in said, said
    assert not Lake(str(tmp_path / "lake")).exists("probe", MONTH)
