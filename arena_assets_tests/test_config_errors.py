"""Configuration mistakes end in one line naming what to fix, and the catalog
never stalls a run.

- ARENA_PARTITIONS_END before START (or a month that is not YYYY-MM): the real Dagster CLI
  prints one line, no traceback of the code location's import;
- a lake on s3:// with no server behind ARENA_S3_ENDPOINT_URL: the step fails at once with
  one line naming ARENA_LAKE_ROOT and the endpoint;
- selecting raw_logs without raw_rejects: one line naming the asset to add;
- a catalog held by another process's write lock: the run warns within about a second and
  goes on (it waited ~103 s);
- catalog views name the lake relative to the project, so a copied checkout reads its own;
- a write that runs out of space names the partition, the file and ARENA_LAKE_ROOT.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from arena_assets.definitions import defs as load_defs
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import failure_lines, materialize

ROOT = Path(__file__).resolve().parents[1]
MONTH = "2024-02"
DAGSTER = str(Path(sys.executable).with_name("dagster"))


def _cli_lines(env: dict[str, str], cwd: Path) -> list[str]:
    proc = subprocess.run(
        [
            DAGSTER,
            "asset",
            "materialize",
            "-m",
            "arena_assets.definitions",
            "--select",
            "raw_logs,raw_rejects",
            "--partition",
            MONTH,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    # Dagster's own deprecation notice for `asset materialize` is not ours
    return [
        line
        for line in (proc.stdout + proc.stderr).splitlines()
        if line.strip() and "Supersession" not in line and "return callback" not in line
    ]


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        (
            "ARENA_PARTITIONS_END",
            "2023-06",
            "ARENA_PARTITIONS_END=2023-06 is before ARENA_PARTITIONS_START=2024-01",
        ),
        (
            "ARENA_PARTITIONS_START",
            "2024-13",
            "ARENA_PARTITIONS_START='2024-13' is not allowed: expected a month, YYYY-MM",
        ),
    ],
)
def test_partition_range_mistake_is_one_line(arena_env, tmp_path, name, value, says):
    env = {**os.environ, "ARENA_PARTITIONS_START": "2024-01", name: value}
    lines = _cli_lines(env, tmp_path)
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("error: "), lines


def test_s3_lake_without_a_server_fails_at_once_in_one_line(arena_env, monkeypatch):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 10, seed=1)
    monkeypatch.setenv("ARENA_LAKE_ROOT", "s3://arena-lake/lake")
    monkeypatch.setenv("ARENA_S3_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("ARENA_S3_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("ARENA_S3_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("ARENA_S3_REGION", "us-east-1")
    result = materialize(MONTH, "raw_logs,raw_rejects", raise_on_error=False)
    (line,) = failure_lines(result)
    assert (
        f"cannot reach s3://arena-lake/lake (ARENA_LAKE_ROOT; S3 endpoint "
        f"http://127.0.0.1:{port} from ARENA_S3_ENDPOINT_URL)" in line
    ), line


def test_raw_logs_selected_without_raw_rejects_names_the_asset_to_add(arena_env):
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 10, seed=1)
    result = materialize(MONTH, "raw_logs", raise_on_error=False)
    (line,) = failure_lines(result)
    assert "add raw_rejects to the selection" in line
    assert not Lake(arena_env["ARENA_LAKE_ROOT"]).exists("raw_logs", MONTH)


def test_a_held_catalog_warns_at_once_and_the_run_goes_on(arena_env, tmp_path):
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 10, seed=1)
    ready = tmp_path / "holding"
    holder = subprocess.Popen(  # another process keeps the catalog's write lock
        [
            sys.executable,
            "-c",
            "import duckdb, sys, pathlib, threading; "
            "c = duckdb.connect(sys.argv[1]); c.execute('create table t(x int)'); "
            "pathlib.Path(sys.argv[2]).write_text('1'); threading.Event().wait()",
            arena_env["ARENA_CATALOG"],
            str(ready),
        ],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert time.monotonic() < deadline and holder.poll() is None
            time.sleep(0.1)
        defs = load_defs()
        with dg.DagsterInstance.ephemeral() as instance:
            started = time.monotonic()
            result = dg.materialize(
                list(defs.assets),
                resources=defs.resources,
                instance=instance,
                partition_key=MONTH,
                selection=dg.AssetSelection.assets("raw_logs", "raw_rejects"),
            )
            took = time.monotonic() - started
            warnings = [e.user_message for e in instance.all_logs(result.run_id)]
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    assert any("catalog" in w and "not updated for 'raw_logs'" in w for w in warnings)
    assert result.success and Lake(arena_env["ARENA_LAKE_ROOT"]).read("raw_logs", MONTH).height
    # not a speed target: DuckDBResource's retries made this step wait ~100 s per view
    assert took < 60, took


def test_catalog_views_are_relative_so_a_copied_checkout_reads_its_own_lake(
    arena_env, tmp_path, monkeypatch
):
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    for name, rel in (
        ("ARENA_RAW_ROOT", "data/raw"),
        ("ARENA_LAKE_ROOT", "data/lake"),
        ("ARENA_CATALOG", "data/arena.duckdb"),
    ):
        monkeypatch.setenv(name, f"./{rel}")
    simulate_months("./data/raw", [MONTH], 10, seed=1)
    assert materialize(MONTH, "raw_logs,raw_rejects").success
    # as `arena-assets ui / demo` run Dagster: from another folder, absolute settings, the
    # project named by ARENA_PROJECT_DIR: the views are still relative to the project
    (project / "data" / "arena.duckdb").unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for name, rel in (
        ("ARENA_RAW_ROOT", "data/raw"),
        ("ARENA_LAKE_ROOT", "data/lake"),
        ("ARENA_CATALOG", "data/arena.duckdb"),
    ):
        monkeypatch.setenv(name, str(project / rel))
    monkeypatch.setenv("ARENA_PROJECT_DIR", str(project))
    assert materialize(MONTH, "raw_logs,raw_rejects").success
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    # the original's lake changes; the copy must still read its own
    Lake(str(project / "data" / "lake")).write(
        "raw_logs",
        MONTH,
        pl.read_parquet(project / "data/lake/raw_logs" / f"{MONTH}.parquet").head(1),
    )
    monkeypatch.chdir(copy)
    with duckdb.connect("data/arena.duckdb", read_only=True) as con:
        copied = con.execute("select count(*) from raw_logs").fetchone()[0]
        sql = con.execute("select sql from duckdb_views() where view_name = 'raw_logs'").fetchone()[
            0
        ]
    assert copied == Lake(str(copy / "data" / "lake")).read("raw_logs", MONTH).height > 1
    assert str(tmp_path) not in sql and "data/lake/raw_logs/*.parquet" in sql


def test_a_full_disk_names_the_file_and_the_lake(tmp_path):
    """A file-size limit (RLIMIT_FSIZE) makes the kernel refuse the write as a full disk
    does (EFBIG instead of ENOSPC, the same path through the code); the message names the
    partition, the temporary file and the lake, and the old partition is kept."""
    lake = tmp_path / "lake"
    Lake(str(lake)).write("t", MONTH, pl.DataFrame({"x": ["old"]}))
    code = (
        "import resource, signal, sys, polars as pl; from arena_assets.storage import Lake; "
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000)); "
        "big = pl.DataFrame({'x': [str(i) * 50 for i in range(200000)]}); "
        "Lake(sys.argv[1]).write('t', '2024-02', big)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(lake)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "File too large" in last, proc.stderr[-2000:]
    assert f"t {MONTH} ({lake}/t/{MONTH}.parquet) not written" in last, last
    assert f"at {lake}/t/_tmp/{MONTH}." in last and f"(ARENA_LAKE_ROOT={lake})" in last, last
    assert pl.read_parquet(lake / "t" / f"{MONTH}.parquet")["x"].to_list() == ["old"]
