"""`make demo` against an S3-compatible server, by configuration only: the same
`arena-assets demo` (simulate, then every asset of every month through Dagster) once on
local folders with its default two workers (months that do not depend on each other at
once) and once with raw logs and lake on ``s3://`` (moto's server on loopback, spoken to
over HTTP) one month after another, gives the same rows in every table and month."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import boto3
import polars as pl
import pytest

from arena_assets.storage import Lake

PROJECT = Path(__file__).resolve().parents[1]
MONTHS = ["2024-01", "2024-02"]
S3_KEYS = {
    "ARENA_S3_ACCESS_KEY_ID": "test",
    "ARENA_S3_SECRET_ACCESS_KEY": "test",
    "ARENA_S3_REGION": "us-east-1",
}


def _demo(env: dict[str, str], home: Path, *extra: str) -> str:
    """`arena-assets demo` in a fresh instance; its printed summary."""
    home.mkdir()
    shutil.copy(PROJECT / "dagster.yaml", home / "dagster.yaml")
    cmd = [
        str(Path(sys.executable).with_name("arena-assets")),
        "demo",
        "--months",
        *MONTHS,
        "--per-month",
        "150",
        *extra,
    ]
    proc = subprocess.run(
        cmd, cwd=PROJECT, env={**env, "DAGSTER_HOME": str(home)}, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _fingerprints(lake: Lake) -> dict[tuple[str, str], tuple[int, str]]:
    """(asset, month) -> (rows, digest of the sorted row hashes): equal content in any order."""
    out = {}
    for asset in lake.assets():
        for month in lake.months(asset):
            frame = lake.read(asset, month)
            hashes = sorted(frame.select(pl.all()).hash_rows(seed=0).to_list())
            digest = hashlib.sha256(str(hashes).encode()).hexdigest()[:16]
            out[(asset, month)] = (frame.height, digest)
    return out


@pytest.mark.slow
def test_demo_on_s3_gives_the_local_rows(arena_env, s3_endpoint, tmp_path):
    env = {**os.environ, "ARENA_PARTITIONS_START": MONTHS[0]}
    local = _demo(env, tmp_path / "home_local")
    assert "Demo finished" in local and "up to 2 at once" in local
    # the parallel backfill's runs of the every-asset job, executed by in-process workers
    # (the runs carry it as a tag): every asset of every month materialized exactly once
    parallel_runs, parallel_done = _runs(tmp_path / "home_local")
    assert len(parallel_runs) > len(MONTHS) and {r.job_name for r in parallel_runs} == {
        "monthly_refresh"
    }
    assert all(r.tags.get("arena/executor") == "in_process" for r in parallel_runs)

    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="arena")
    s3_env = {
        **env,
        **S3_KEYS,
        "ARENA_S3_ENDPOINT_URL": s3_endpoint,
        "ARENA_RAW_ROOT": "s3://arena/raw",
        "ARENA_LAKE_ROOT": "s3://arena/lake",
        "ARENA_CATALOG": str(tmp_path / "s3_catalog.duckdb"),
    }
    remote = _demo(s3_env, tmp_path / "home_s3", "--workers", "1")
    assert "Lake (Parquet):  s3://arena/lake" in remote
    # one month after another: one run of the every-asset job per month
    serial_runs, serial_done = _runs(tmp_path / "home_s3")
    assert sorted(r.tags.get("dagster/partition") for r in serial_runs) == MONTHS
    assert {r.job_name for r in serial_runs} == {"monthly_refresh"}
    assert parallel_done == serial_done and len(serial_done) > 40

    keys = [
        o["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket="arena")
        for o in page.get("Contents", [])
    ]
    assert {f"raw/{m}" for m in MONTHS} <= {"/".join(k.split("/")[:2]) for k in keys}
    assert not [k for k in keys if "/_tmp/" in k]  # every write was renamed into place
    options = {
        "key": "test",
        "secret": "test",
        "client_kwargs": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
    }
    expected = _fingerprints(Lake(arena_env["ARENA_LAKE_ROOT"]))
    got = _fingerprints(Lake("s3://arena/lake", options))
    assert {a for a, _ in expected} >= {
        "raw_logs",
        "raw_rejects",
        "conversations",
        "battles",
        "arena_leaderboard",
        "leaderboard_history",
    }
    # every table and month was written; the upstream ones have rows (months this small
    # rank no model yet at ARENA_MIN_BATTLES, so the boards may be empty, and are compared)
    assert {
        (a, m)
        for a in (
            "raw_logs",
            "raw_rejects",
            "conversations",
            "battles",
            "arena_leaderboard",
            "leaderboard_history",
        )
        for m in MONTHS
    } <= set(expected)
    assert all(
        expected[(a, m)][0] > 0 for a in ("raw_logs", "conversations", "battles") for m in MONTHS
    ), expected
    assert got == expected
    # the summary read back through the S3 catalog's views: the same rows and rejects
    assert _summary_counts(remote) == _summary_counts(local)
    assert "conversations" in _summary_counts(local)


def _runs(home: Path) -> tuple[list, list[tuple[str, str]]]:
    """The instance's runs, and (asset, partition) of every materialization they recorded,
    sorted; a materialization written twice shows as a repeated pair."""
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
        done = sorted(
            (e.dagster_event.asset_key.to_user_string(), e.dagster_event.partition)
            for r in runs
            for e in instance.all_logs(r.run_id)
            if e.dagster_event is not None
            and e.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION
        )
    assert all(r.is_success for r in runs)
    return runs, done


def _summary_counts(stdout: str) -> str:
    """The demo summary's rows per asset and month and rejects by reason."""
    return stdout.split("Rows per asset and month:", 1)[1].split("Raw logs:", 1)[0]
