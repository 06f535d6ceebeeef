"""Local <-> S3 is configuration only: the same assets against an S3-compatible server
(moto's standalone server on loopback, spoken to over HTTP by s3fs/botocore)."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake, duckdb_connect
from arena_assets_tests.harness import materialize, s3_bucket

MONTH = "2024-03"


def _upload_folder(client, bucket: str, folder: Path, prefix: str) -> int:
    count = 0
    for path in folder.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(folder).as_posix()}")
            count += 1
    return count


def test_raw_logs_and_lake_on_s3(arena_env, s3_endpoint, tmp_path, monkeypatch):
    local_raw = tmp_path / "local_raw"
    simulate_months(str(local_raw), [MONTH], 120, seed=3)
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="arena")
    assert _upload_folder(client, "arena", local_raw, "raw") > 0
    for key, value in {
        "ARENA_RAW_ROOT": "s3://arena/raw",
        "ARENA_LAKE_ROOT": "s3://arena/lake",
        "ARENA_S3_ENDPOINT_URL": s3_endpoint,
        "ARENA_S3_ACCESS_KEY_ID": "test",
        "ARENA_S3_SECRET_ACCESS_KEY": "test",
        "ARENA_S3_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)

    result = materialize(MONTH, "raw_logs,raw_rejects,conversations")
    assert result.success
    assert {c.check_name: c.passed for c in result.get_asset_check_evaluations()} == {
        "lines_conserved": True,
        "no_partial_files": True,
        "snapshots_conserved": True,
        "no_raw_pii": True,
        "required_columns_present": True,
        "month_over_month_drift": True,
    }

    listed = client.list_objects_v2(Bucket="arena", Prefix="lake/")["Contents"]
    keys = {o["Key"] for o in listed}
    assert {
        f"lake/{a}/{MONTH}.parquet" for a in ("raw_logs", "raw_rejects", "conversations")
    } <= keys
    assert not [k for k in keys if "/_tmp/" in k]  # the temporaries were renamed away

    options = {
        "key": "test",
        "secret": "test",
        "client_kwargs": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
    }
    lake = Lake("s3://arena/lake", options)
    convs = lake.read("conversations", MONTH)
    assert convs.height > 50 and convs["conv_id"].is_unique().all()
    # DuckDB reads the same objects through the lake's fsspec filesystem
    con = duckdb_connect(lake)
    n = con.execute(
        f"select count(*) from read_parquet('{lake.url('conversations', MONTH)}')"
    ).fetchone()[0]
    assert n == convs.height
    # the local run of the same month gives the same rows
    monkeypatch.setenv("ARENA_RAW_ROOT", str(local_raw))
    monkeypatch.setenv("ARENA_LAKE_ROOT", str(tmp_path / "local_lake"))
    assert materialize(MONTH, "raw_logs,raw_rejects,conversations").success
    local = Lake(str(tmp_path / "local_lake")).read("conversations", MONTH)
    assert local.equals(convs)


def test_filtered_reads_local_and_on_s3(s3_endpoint, tmp_path):
    """``Lake.read(filters=...)``: pyarrow's (column, op, value) triples, all true, with
    pyarrow's nulls (the rows ``pq.read_table(filters=...)`` gives, written out); the same rows from a local lake and from S3 (the scan reads the
    fsspec file either way); an unknown operator is one clear error."""
    import polars as pl

    options = s3_bucket(s3_endpoint, "filters")
    frame = pl.DataFrame(
        {
            "conv_id": ["a", "b", None, "d", "e"],
            "n": [1, 2, 3, None, 5],
            "tag": ["x", "", "y", None, "x"],
            "messages": [[{"role": "user", "content": c}] for c in "abcde"],
        }
    )
    cases = [
        ([("conv_id", "in", ["a", "d", "zz"])], [0, 3]),
        ([("tag", "!=", "")], [0, 2, 4]),
        ([("n", ">=", 2), ("tag", "==", "x")], [4]),
        ([("conv_id", "not in", ["a"])], [1, 2, 3, 4]),
        ([("conv_id", "in", [])], []),
        ([("tag", "in", ["x", None])], [0, 3, 4]),
        ([("tag", "not in", ["x", None])], [1, 2]),
        ([("n", "in", {2, 5})], [1, 4]),
    ]
    for lake in (Lake(str(tmp_path / "lake")), Lake("s3://filters/lake", options)):
        lake.write("conversations", MONTH, frame)
        for filters, rows in cases:
            got = lake.read("conversations", MONTH, ["conv_id", "messages"], filters)
            assert got.equals(frame[rows].select("conv_id", "messages")), (lake.root, filters)
        with pytest.raises(ValueError, match="unsupported filter operator 'like'"):
            lake.read("conversations", MONTH, None, [("tag", "like", "x")])
        with pytest.raises(ValueError, match="triples, all true"):
            lake.read("conversations", MONTH, None, [[("tag", "==", "x")], [("n", "==", 1)]])
