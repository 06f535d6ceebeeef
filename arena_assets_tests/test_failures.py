"""Failures name what failed, in one line.

- a setting the registry refuses stops the code location's load (the Dagster CLI, a code
  server as `dagster dev` runs it, `arena-assets`), one line per setting;
- every asset and op of the code location fails on a known error with that error's one
  line as the failure's description: no traceback behind it unless ARENA_DEBUG=true;
- a damaged (truncated) partition, read by the next asset, and a lake folder that cannot
  be written name the partition, the file and ARENA_LAKE_ROOT, and the lake keeps what it
  had;
- an unreachable LLM base URL fails the labels step with its headline alone.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

ROOT = Path(__file__).resolve().parents[1]
MONTH = "2024-02"
BIN = Path(sys.executable).parent


def _dagster(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "dagster"), *args],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _ours(text: str) -> list[str]:
    """Output lines, without Dagster's own notices (supersession, temporary storage)."""
    noise = ("Supersession", "return callback", "temporary directory", "DAGSTER_HOME to")
    return [x for x in text.splitlines() if x.strip() and not any(n in x for n in noise)]


def _description(result) -> str:
    """The failed step's description: the UI's headline of the failure."""
    (event,) = result.get_step_failure_events()
    assert event.step_failure_data.error.cause is None  # no chained library traceback
    return event.step_failure_data.user_failure_data.description


def test_every_asset_and_op_fails_in_one_line():
    from arena_assets.definitions import defs as load_defs
    from arena_assets.defs.failures import MARK

    defs = load_defs()
    nodes = [a.op for a in defs.assets] + [
        node for job in defs.jobs or () if hasattr(job, "graph") for node in job.graph.node_defs
    ]
    assert len(nodes) > 20
    bare = [n.name for n in nodes if not getattr(n.compute_fn.decorated_fn, MARK, False)]
    assert not bare, f"@one_line_failures missing on {bare}"


def test_a_bad_setting_stops_the_load_in_one_line(arena_env, tmp_path):
    env = {**os.environ, "ARENA_LABELER_MAX_CONCURRENCY": "-3"}
    proc = _dagster(["asset", "list", "-m", "arena_assets.definitions"], env, tmp_path)
    assert proc.returncode != 0
    assert _ours(proc.stdout + proc.stderr) == [
        "error: ARENA_LABELER_MAX_CONCURRENCY='-3' is not allowed: expected a whole number "
        ">= 1: fix it in .env or the shell"
    ]


def test_several_bad_settings_are_listed_one_line_each(arena_env, tmp_path):
    (tmp_path / ".env").write_text("ARENA_BENCH_SIZE=many\n")  # .env is read too
    env = {**os.environ, "ARENA_ALLOW_EMPTY_MONTH": "maybe", "ARENA_PARTITIONS_END": "2023-06"}
    env.pop("ARENA_BENCH_SIZE")
    proc = _dagster(["asset", "list", "-m", "arena_assets.definitions"], env, tmp_path)
    lines = _ours(proc.stdout + proc.stderr)
    assert proc.returncode != 0 and len(lines) == 3, lines
    assert all(line.startswith("error: ") for line in lines)
    for said in (
        "ARENA_PARTITIONS_END=2023-06 is before ARENA_PARTITIONS_START=2024-01",
        "ARENA_ALLOW_EMPTY_MONTH='maybe' is not allowed: expected true or false",
        "ARENA_BENCH_SIZE='many' is not allowed: expected a whole number >= 1",
    ):
        assert any(said in line for line in lines), (said, lines)


def test_a_code_server_reports_a_bad_setting_as_the_locations_load_error(arena_env, tmp_path):
    """`definitions validate` loads the location as a code server does (`dagster dev`):
    the setting's line is the location's load error, not a dead server."""
    env = {**os.environ, "ARENA_LABELER_MAX_CONCURRENCY": "-3"}
    proc = _dagster(["definitions", "validate", "-m", "arena_assets.definitions"], env, tmp_path)
    out = proc.stdout + proc.stderr
    assert "Validation failed for code location arena_assets.definitions" in out, out[-3000:]
    assert "SettingError: error: ARENA_LABELER_MAX_CONCURRENCY='-3' is not allowed" in out


def test_commands_check_the_settings_first_and_print_known_errors_in_one_line(arena_env, tmp_path):
    env = {**os.environ, "ARENA_LABELER_MAX_CONCURRENCY": "-3"}
    proc = subprocess.run(
        [str(BIN / "arena-assets"), "summary"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "arena-assets summary: error: ARENA_LABELER_MAX_CONCURRENCY='-3' is not allowed: "
        "expected a whole number >= 1: fix it in .env or the shell"
    ]


@pytest.fixture
def month(arena_env):
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 40, seed=5)
    assert materialize(MONTH, "raw_logs,raw_rejects,conversations").success
    return Lake(arena_env["ARENA_LAKE_ROOT"])


def test_a_truncated_partition_read_by_the_next_asset_names_it(month):
    path = Path(month.partition_path("conversations", MONTH))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    line = _description(materialize(MONTH, "battles", raise_on_error=False))
    assert "\n" not in line
    assert line.startswith(f"conversations {MONTH} is damaged: {path} is not readable Parquet")
    assert f"ARENA_LAKE_ROOT={month.root}" in line, line
    assert line.endswith(f"rematerialize conversations for {MONTH}"), line
    assert not month.exists("battles", MONTH)


@contextlib.contextmanager
def _read_only(folder: Path):
    """``folder`` not writable for this process: a read-only bind mount for root (who
    writes through any mode), its mode for anyone else."""
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(mode)
        return
    bind = ["mount", "--bind", str(folder), str(folder)]
    if subprocess.run(bind, capture_output=True).returncode:
        pytest.skip("root without the right to mount: no way to make a folder read-only")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_read_only_lake_folder_names_the_partition_and_the_setting(month):
    before = month.read("conversations", MONTH)
    folder = Path(month.folder("conversations"))
    with _read_only(folder):
        line = _description(materialize(MONTH, "conversations", raise_on_error=False))
    assert "\n" not in line
    url = month.url("conversations", MONTH)
    assert line.startswith(f"conversations {MONTH} ({url}) not written: [Errno "), line
    assert f"at {folder}/_tmp" in line and f"(ARENA_LAKE_ROOT={month.root})" in line, line
    assert "point ARENA_LAKE_ROOT elsewhere; the previous version is kept" in line, line
    assert month.read("conversations", MONTH).equals(before)


def _dead_port() -> int:
    with socket.socket() as probe:  # a port nobody listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("debug", [False, True])
def test_an_unreachable_base_url_fails_labels_with_its_headline(
    month, arena_env, monkeypatch, tmp_path, debug
):
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    monkeypatch.setenv("ARENA_LABELER_BASE_URL", url)
    monkeypatch.setenv("ARENA_LLM_CACHE_ROOT", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("ARENA_DEBUG", "true" if debug else "false")
    description = _description(materialize(MONTH, "topic_labels", raise_on_error=False))
    headline = description.splitlines()[0]
    assert headline.startswith(f"cannot reach the LLM endpoint {url}"), headline
    assert "previous partition is intact" in headline
    if debug:
        assert "Traceback (most recent call last)" in description
        assert "LLMEndpointError" in description and "ConnectError" in description
    else:
        assert description == headline
    assert not month.exists("topic_labels", MONTH)


def test_the_lake_speaks_only_for_its_own_files(tmp_path):
    """Damaged is said of a file whose bytes are wrong, not of a column the caller asked
    for; a streamed write whose input fails keeps the input's own error."""
    import polars as pl
    import pyarrow as pa

    from arena_assets.storage import DamagedPartitionError

    lake = Lake(str(tmp_path / "lake"))
    lake.write("t", MONTH, pl.DataFrame({"x": [1, 2]}))
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        lake.read("t", MONTH, columns=["y"])
    path = Path(lake.partition_path("t", MONTH))
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(DamagedPartitionError, match=f"t {MONTH} is damaged: {path}"):
        lake.schema("t", MONTH)

    def batches():
        (tmp_path / "raw-file-that-vanished.jsonl").read_bytes()
        yield pl.DataFrame({"x": [3]})

    with pytest.raises(FileNotFoundError) as gone:
        lake.write_batches("u", MONTH, pa.schema([("x", pa.int64())]), batches())
    assert type(gone.value) is FileNotFoundError  # not said as the lake's
