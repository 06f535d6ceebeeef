"""A run killed mid-write does not stall its stage.

The real `dagster asset materialize` is killed (SIGKILL) inside the Parquet write of
`conversations`, against an instance made from the shipped dagster.yaml with the `clean`
pool at one slot. The run is left STARTED, holding the slot, with a half-written file in
`_tmp/`. Then: the instance's run launcher sees the dead worker; `arena-assets recover` (or
the daemon's run monitoring, slow test) fails the run and frees the slot; a new run of the
same stage completes, and its write deletes the orphaned temporary file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

ROOT = Path(__file__).resolve().parents[1]
MONTH = "2024-04"
IN_PROCESS = json.dumps({"execution": {"config": {"in_process": {}}}})
MATERIALIZE = [
    "asset",
    "materialize",
    "-m",
    "arena_assets.definitions",
    "--select",
    "conversations",
    "--partition",
    MONTH,
    "--config-json",
    IN_PROCESS,
]


def _wait(predicate, timeout: float, what: str) -> None:
    """Poll a condition (no fixed sleep decides anything: the loop ends when it holds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def killed(arena_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """(instance home, env, run id) after a run was killed inside its conversations write."""
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 40, seed=2)
    assert materialize(MONTH, "raw_logs,raw_rejects").success
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    work = tmp_path / "work"  # no .env here: the environment is the test's
    work.mkdir()
    monkeypatch.chdir(work)
    with dg.DagsterInstance.get() as instance:
        instance.event_log_storage.set_concurrency_slots("clean", 1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    marker = tmp_path / "in-the-write"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena_assets_tests.run_kill_child",
            str(marker),
            "conversations/_tmp",
            *MATERIALIZE,
        ],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "child.err").open("w"),
        start_new_session=True,
    )
    try:
        _wait(lambda: marker.exists() or child.poll() is not None, 300, "the write to start")
        assert child.poll() is None, (
            "the run ended before it was killed: " + (tmp_path / "child.err").read_text()[-3000:]
        )
        with dg.DagsterInstance.get() as instance:
            (run,) = instance.get_runs()
            # alive: the launcher sees the worker
            health = instance.run_launcher.check_run_worker_health(run)
            assert health.status.value == "RUNNING", health
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    return home, env, run.run_id


def _slots(instance: dg.DagsterInstance) -> int:
    return instance.event_log_storage.get_concurrency_info("clean").claimed_slots.__len__()


def test_killed_run_is_reaped_and_the_next_run_completes(killed, arena_env, capsys):
    from arena_assets.cli import main as cli_main

    _home, env, run_id = killed
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    tmp_dir = Path(lake.folder("conversations")) / "_tmp"
    assert list(tmp_dir.iterdir()), "the killed write left no temporary file"
    assert not lake.exists("conversations", MONTH)
    with dg.DagsterInstance.get() as instance:
        run = instance.get_run_by_id(run_id)
        assert run.status == dg.DagsterRunStatus.STARTED and _slots(instance) == 1
        assert instance.run_launcher.check_run_worker_health(run).status.value == "FAILED"

    assert cli_main(["recover"]) == 0
    out = capsys.readouterr().out
    assert f"run {run_id}" in out and "pool slots freed" in out
    assert "deleted orphaned temporary file" in out and not list(tmp_dir.iterdir())
    with dg.DagsterInstance.get() as instance:
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
        assert _slots(instance) == 0

    done = subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), *MATERIALIZE],
        cwd=Path.cwd(),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert lake.read("conversations", MONTH).height > 0


@pytest.mark.slow
def test_cancelling_a_dead_run_frees_its_slot_at_once(killed):
    _, _, run_id = killed
    with dg.DagsterInstance.get() as instance:
        assert instance.run_launcher.terminate(run_id)
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.CANCELED
        assert _slots(instance) == 0


@pytest.mark.slow
def test_daemon_run_monitoring_frees_the_stage(killed, arena_env):
    """The shipped dagster.yaml's run monitoring, in a real `dagster-daemon`: the dead run is
    failed and its slot freed without anyone calling recover; the next run completes."""
    _home, env, run_id = killed
    daemon = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("dagster-daemon")),
            "run",
            "-m",
            "arena_assets.definitions",
        ],
        cwd=Path.cwd(),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    started = time.monotonic()
    try:
        with dg.DagsterInstance.get() as instance:
            _wait(
                lambda: instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE,
                600,
                "run monitoring to fail the dead run",
            )
            _wait(lambda: _slots(instance) == 0, 300, "the slot to be freed")
        print(
            f"run monitoring freed the stage {time.monotonic() - started:.0f}s after the "
            "daemon started"
        )
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)
    done = subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), *MATERIALIZE],
        cwd=Path.cwd(),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert Lake(arena_env["ARENA_LAKE_ROOT"]).read("conversations", MONTH).height > 0
