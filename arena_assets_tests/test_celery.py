"""The Celery executor option (arena_assets/celery_location.py, deploy/celery-worker.yaml):
a month's steps run in a real Celery worker started from the deploy config.

The broker and result backend are SQLite files through Kombu's SQLAlchemy transport and
Celery's database backend, so no RabbitMQ or Redis is needed; in a deployment only the two
ARENA_CELERY_* URLs change.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake

PROJECT = Path(__file__).resolve().parents[1]
MONTH = "2024-03"
pytest.importorskip("dagster_celery", reason="the `deploy` extra (dagster-celery) is not installed")


def test_celery_location_uses_the_celery_executor():
    from arena_assets import celery_location, definitions

    defs = celery_location.defs()
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.executor_def.name == "arena_celery_executor"
    # the same assets and checks as the plain code location
    plain = definitions.defs().resolve_asset_graph().get_all_asset_keys()
    assert defs.resolve_asset_graph().get_all_asset_keys() == plain


def test_workers_take_a_step_only_when_free(tmp_path, monkeypatch):
    """The runs' executor and the workers started from deploy/celery-worker.yaml both
    acknowledge a step when it ends, one step a process: the module dagster-celery writes
    for a worker from the yaml (its own code) sets it, so a busy worker reserves nothing."""
    import runpy

    import yaml
    from dagster_celery.cli import get_config_dir

    from arena_assets.celery_location import CELERY_SETTINGS

    worker_yaml = PROJECT / "deploy" / "celery-worker.yaml"
    assert (
        yaml.safe_load(worker_yaml.read_text())["execution"]["config"]["config_source"]
        == CELERY_SETTINGS
    )
    assert CELERY_SETTINGS == {"worker_prefetch_multiplier": 1, "task_acks_late": True}
    home = tmp_path / "dagster_home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("ARENA_CELERY_BROKER_URL", f"sqla+sqlite:///{tmp_path}/broker.sqlite")
    monkeypatch.setenv("ARENA_CELERY_BACKEND_URL", f"db+sqlite:///{tmp_path}/results.sqlite")
    written = runpy.run_path(
        str(Path(get_config_dir(str(worker_yaml))) / "dagster_celery_config.py")
    )
    assert written["task_acks_late"] is True and written["worker_prefetch_multiplier"] == 1
    assert written["broker_url"] == f"sqla+sqlite:///{tmp_path}/broker.sqlite"
    # the runs' side: the executor's config as Dagster resolves it for a run
    from arena_assets import celery_location

    executor = celery_location.defs().resolve_implicit_global_asset_job_def().executor_def
    resolved = executor.apply_config_mapping({})
    assert resolved.success, resolved.errors
    assert resolved.value["config"]["config_source"] == CELERY_SETTINGS


@pytest.mark.slow
def test_month_steps_run_in_a_celery_worker(arena_env, tmp_path, monkeypatch):
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 60, seed=6)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((PROJECT / "dagster.yaml").read_text())
    bin_dir = Path(sys.executable).parent
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ARENA_CELERY_BROKER_URL", f"sqla+sqlite:///{tmp_path}/broker.sqlite")
    monkeypatch.setenv("ARENA_CELERY_BACKEND_URL", f"db+sqlite:///{tmp_path}/results.sqlite")
    env = dict(os.environ)
    subprocess.run(
        [str(bin_dir / "dagster"), "instance", "migrate"],
        env=env,
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    worker_log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        [
            str(bin_dir / "dagster-celery"),
            "worker",
            "start",
            "-A",
            "dagster_celery.app",
            "-y",
            str(PROJECT / "deploy" / "celery-worker.yaml"),
            "--",
            "--concurrency=1",
        ],
        cwd=tmp_path,
        env=env,
        stdout=worker_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own group: the celery child process ends with it
    )
    try:
        proc = subprocess.run(
            [
                str(bin_dir / "dagster"),
                "asset",
                "materialize",
                "-m",
                "arena_assets.celery_location",
                "--select",
                "raw_logs,raw_rejects,conversations",
                "--partition",
                MONTH,
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=60)
        worker_log.close()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.SUCCESS
        events = [e for e in instance.all_logs(run.run_id) if e.dagster_event]
        engine = [
            e for e in events if e.dagster_event.event_type == dg.DagsterEventType.ENGINE_EVENT
        ]
        in_worker = {e.step_key for e in engine if "in celery worker" in (e.message or "")}
        assert {"raw_logs", "conversations"} <= {k.split(".")[0] for k in in_worker if k}
        steps = [
            e for e in events if e.dagster_event.event_type == dg.DagsterEventType.STEP_SUCCESS
        ]
        # compared as enums: the stored value of RUN_START is still the legacy "PIPELINE_START"
        run_pid = {
            e.dagster_event.pid
            for e in events
            if e.dagster_event.event_type == dg.DagsterEventType.RUN_START
        }
        # the steps ran in the worker's processes, not in the process that launched the run
        assert run_pid and steps and not {e.dagster_event.pid for e in steps} & run_pid
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    assert lake.read("conversations", MONTH).height > 0
