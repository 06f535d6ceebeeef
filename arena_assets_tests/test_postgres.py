"""The deployment instance (`deploy/dagster.yaml`) against a real PostgreSQL server.

The test starts Debian's PostgreSQL (`apt-get install postgresql`; `.ci/run` installs it)
in a fresh data folder, points a DAGSTER_HOME holding `deploy/dagster.yaml` at it through
the DAGSTER_PG_* variables, materializes one month through the `dagster` CLI, and reads the
run and the asset materializations back from Postgres's own tables. Skips, saying why,
where no PostgreSQL binaries are installed.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena_assets.simulator import simulate_months

PROJECT = Path(__file__).resolve().parents[1]
MONTH = "2024-02"
DB = "dagster"
USER = "dagster"


def _pg_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    # Debian keeps the server binaries off PATH, one folder per major version
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3])
    )
    return Path(candidates[-1]).parent if candidates else None


def _as_server_user() -> list[str]:
    """Prefix that runs a command as a user PostgreSQL accepts (it refuses root)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root and there is no `postgres` user to start the server as")
    runuser = shutil.which("runuser")
    if not runuser:
        pytest.skip("running as root without `runuser` to start the server as `postgres`")
    return [runuser, "-u", "postgres", "--"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres() -> Iterator[dict[str, str]]:
    """A PostgreSQL server on loopback with an empty `dagster` database; DAGSTER_PG_* values."""
    pg_bin = _pg_bin()
    if pg_bin is None:
        pytest.skip("no PostgreSQL server binaries (initdb); `apt-get install postgresql`")
    prefix = _as_server_user()
    # its own folder under /tmp: pytest's tmp_path is private to root, and a socket path
    # must stay under ~100 characters
    base = Path(tempfile.mkdtemp(prefix="arena-pg-"))
    if prefix:
        shutil.chown(base, user="postgres")
    data = base / "data"
    run = lambda *args, **kw: subprocess.run(
        [*prefix, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )
    init = run(
        pg_bin / "initdb",
        "-D",
        data,
        "-A",
        "trust",
        "-U",
        USER,
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
    )
    assert init.returncode == 0, init.stderr
    # Postgres cannot bind port 0, so take a port the kernel just handed out and retry in
    # the rare case another process grabbed it in between
    for _attempt in range(5):
        port = _free_port()
        options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
        started = run(
            pg_bin / "pg_ctl",
            "-D",
            data,
            "-o",
            options,
            "-l",
            base / "server.log",
            "-w",
            "-t",
            "60",
            "start",
        )
        if started.returncode == 0:
            break
    else:
        log = (base / "server.log").read_text() if (base / "server.log").exists() else ""
        pytest.fail(f"PostgreSQL did not start: {started.stderr}\n{log[-2000:]}")
    try:
        import psycopg2

        con = psycopg2.connect(host="127.0.0.1", port=port, user=USER, dbname="postgres")
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute(f"create database {DB}")
        con.close()
        yield {
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(port),
            "DAGSTER_PG_USERNAME": USER,
            "DAGSTER_PG_PASSWORD": "",
            "DAGSTER_PG_DB": DB,
        }
    finally:
        run(pg_bin / "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_home(postgres, tmp_path, monkeypatch) -> Path:
    """A DAGSTER_HOME holding deploy/dagster.yaml, the DAGSTER_PG_* variables set."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT / "deploy" / "dagster.yaml", home / "dagster.yaml")
    for key, value in postgres.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


def _query(postgres: dict[str, str], sql: str) -> list[tuple]:
    import psycopg2

    con = psycopg2.connect(
        host=postgres["DAGSTER_PG_HOST"],
        port=int(postgres["DAGSTER_PG_PORT"]),
        user=postgres["DAGSTER_PG_USERNAME"],
        dbname=postgres["DAGSTER_PG_DB"],
    )
    try:
        with con.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    finally:
        con.close()


def test_partitioned_materialization_lands_in_postgres(arena_env, postgres, pg_home, tmp_path):
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 60, seed=3)
    dagster = str(Path(sys.executable).with_name("dagster"))
    proc = subprocess.run(
        [
            dagster,
            "asset",
            "materialize",
            "-m",
            "arena_assets.definitions",
            "--select",
            "raw_logs,raw_rejects",
            "--partition",
            MONTH,
        ],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    runs = _query(postgres, "select run_id, status, partition from runs")
    assert [(status, partition) for _, status, partition in runs] == [("SUCCESS", MONTH)]
    run_id = runs[0][0]
    materialized = _query(
        postgres,
        "select asset_key, partition from event_logs "
        f"where dagster_event_type = 'ASSET_MATERIALIZATION' and run_id = '{run_id}' order by 1",
    )
    assert materialized == [('["raw_logs"]', MONTH), ('["raw_rejects"]', MONTH)]
    checks = _query(
        postgres,
        "select count(*) from event_logs where dagster_event_type = 'ASSET_CHECK_EVALUATION'",
    )
    assert checks[0][0] >= 1  # the conservation check ran and was recorded there too
    keys = {k for (k,) in _query(postgres, "select asset_key from asset_keys")}
    assert {'["raw_logs"]', '["raw_rejects"]'} <= keys
    # nothing fell back to the local SQLite storage
    assert not list(pg_home.rglob("*.db")), list(pg_home.rglob("*.db"))
    assert (Path(arena_env["ARENA_LAKE_ROOT"]) / "raw_logs" / f"{MONTH}.parquet").is_file()


def test_sensor_ticks_against_postgres(arena_env, postgres, pg_home):
    """The raw-root sensor ticks twice against the Postgres-backed
    instance: the first tick requests the month that has raw files, the second (with the
    first tick's cursor) requests nothing new, and says why. A month the first test did not
    ingest: on its first tick the sensor adopts months already ingested in the instance."""
    import dagster as dg

    from arena_assets.definitions import defs as load_defs

    month = "2024-03"
    defs = load_defs()
    sensor = next(s for s in defs.sensors if s.name == "raw_root_sensor")
    simulate_months(arena_env["ARENA_RAW_ROOT"], [month], 20, seed=4)
    with dg.DagsterInstance.get() as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        with dg.build_sensor_context(
            instance=instance, resources=defs.resources, sensor_name=sensor.name
        ) as context:
            result = sensor(context)
        assert [r.partition_key for r in result.run_requests] == [month], result
        with dg.build_sensor_context(
            instance=instance,
            cursor=result.cursor,
            resources=defs.resources,
            sensor_name=sensor.name,
        ) as context:
            again = sensor(context)
        assert again.run_requests == []
        assert "no new or changed raw files" in again.skip_reason.skip_message
