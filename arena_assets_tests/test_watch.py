"""The raw-root watcher behind the sensor: months listed with their files, a cursor across
ticks, exactly the changed months requested, folders without raw files skipped; on a local
folder and on an S3-compatible server (moto's, over HTTP on loopback)."""

from __future__ import annotations

import gzip
import json
import os
import uuid

import boto3
import pytest

from arena_assets.ingest.watch import (
    changed_months,
    dumps_cursor,
    list_raw_root,
    loads_cursor,
)


def _tick(cursor, root, storage_options=None):
    """One sensor tick: list, compare, and store the cursor as a string as Dagster does."""
    months, new_cursor, skipped = changed_months(cursor, list_raw_root(root, storage_options))
    return months, dumps_cursor(new_cursor), skipped


def test_local_root_across_ticks(tmp_path):
    root = tmp_path / "raw"
    (root / "2024-01").mkdir(parents=True)
    (root / "2024-01" / "events-2024-01-01.jsonl").write_text('{"type": "chat"}\n')
    (root / "2024-01" / "_tmp").mkdir()
    (root / "2024-01" / "_tmp" / "upload.jsonl").write_text("partial")
    (root / "2024-02").mkdir()  # created, nothing uploaded yet
    (root / "_truth").mkdir()
    (root / "_truth" / "2024-03.jsonl").write_text("{}")
    (root / "models.json").write_text("[]")
    (root / "notes").mkdir()

    listing = list_raw_root(str(root))
    assert list(listing) == ["2024-01", "2024-02"]
    assert [f.name for f in listing["2024-01"]] == ["2024-01/events-2024-01-01.jsonl"]
    assert listing["2024-01"][0].size == len('{"type": "chat"}\n')

    months, cursor, skipped = _tick(None, str(root))
    assert (months, skipped) == (["2024-01"], ["2024-02"])
    assert json.loads(cursor)["months"].keys() == {"2024-01"}
    # nothing changed: nothing requested
    assert _tick(cursor, str(root))[0] == []

    # a new month arrives, and a sidecar that is not raw data lands in an old one
    (root / "2024-02" / "day1.jsonl.gz").write_bytes(gzip.compress(b'{"type": "chat"}\n'))
    (root / "2024-01" / "README.txt").write_text("not raw data")
    months, cursor, skipped = _tick(cursor, str(root))
    assert (months, skipped) == (["2024-02"], [])

    # a file of an old month is rewritten with the same size: its mtime changes
    path = root / "2024-01" / "events-2024-01-01.jsonl"
    stat = path.stat()
    path.write_text('{"type": "vote"}\n')
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert path.stat().st_size == stat.st_size
    months, cursor, _ = _tick(cursor, str(root))
    assert months == ["2024-01"]

    # a second file in the same month, and an upload in progress that stays invisible
    (root / "2024-01" / "events-2024-01-02.parquet").write_bytes(b"PAR1")
    (root / "2024-02" / ".day2.jsonl.swp").write_text("x")
    months, cursor, _ = _tick(cursor, str(root))
    assert months == ["2024-01"]
    assert _tick(cursor, str(root))[0] == []

    # every file of a month removed: skipped and forgotten; when data comes back, requested
    for f in (root / "2024-02").glob("*.gz"):
        f.unlink()
    months, cursor, skipped = _tick(cursor, str(root))
    assert (months, skipped) == ([], ["2024-02"])
    assert "2024-02" not in json.loads(cursor)["months"]
    (root / "2024-02" / "day1.jsonl").write_text("{}\n")
    assert _tick(cursor, str(root))[0] == ["2024-02"]


def test_missing_root_and_bad_cursor(tmp_path):
    assert list_raw_root(str(tmp_path / "absent")) == {}
    assert changed_months(None, {}) == ([], {"version": 1, "months": {}}, [])
    with pytest.raises(ValueError, match="cursor"):
        loads_cursor('{"months": []}')
    with pytest.raises(ValueError):
        loads_cursor("not json")


@pytest.fixture
def s3(s3_endpoint):
    endpoint = s3_endpoint
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )
    # moto keeps one in-memory backend per process, shared by every server a pytest
    # worker starts: a bucket of its own keeps other tests' objects out of this one
    bucket = f"arena-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    options = {
        "key": "test",
        "secret": "test",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }
    return client, options, bucket


def test_s3_root_across_ticks_uses_etags(s3):
    client, options, bucket = s3
    put = lambda key, body: client.put_object(Bucket=bucket, Key=f"raw/{key}", Body=body)
    put("2024-01/a.jsonl", b'{"type": "chat"}\n')
    put("2024-01/_tmp/b.jsonl", b"partial")
    put("2024-02/.keep.jsonl", b"")  # an S3 "folder" with only a hidden marker
    put("models.json", b"[]")
    root = f"s3://{bucket}/raw"

    listing = list_raw_root(root, options)
    assert list(listing) == ["2024-01", "2024-02"] and listing["2024-02"] == []
    etag = client.head_object(Bucket=bucket, Key="raw/2024-01/a.jsonl")["ETag"].strip('"')
    assert listing["2024-01"][0].version == etag

    months, cursor, skipped = _tick(None, root, options)
    assert (months, skipped) == (["2024-01"], ["2024-02"])
    assert _tick(cursor, root, options)[0] == []

    # same key, same size, new content: a new ETag, seen on the next tick (no stale listing)
    put("2024-01/a.jsonl", b'{"type": "vote"}\n')
    put("2024-03/day1.jsonl.gz", gzip.compress(b"{}\n"))
    months, cursor, skipped = _tick(cursor, root, options)
    assert (months, skipped) == (["2024-01", "2024-03"], ["2024-02"])
    assert _tick(cursor, root, options)[0] == []


def test_extensions_in_any_letter_case_count_as_ingest_reads_them(tmp_path):
    # ingest takes `.JSONL` and `.Parquet` files; a watcher that did not would see a
    # month's files differ from the manifest of what it was built from, forever
    root = tmp_path / "raw"
    (root / "2024-01").mkdir(parents=True)
    (root / "2024-01" / "DAY1.JSONL").write_text('{"type": "chat"}\n')
    (root / "2024-01" / "day2.Jsonl.GZ").write_bytes(gzip.compress(b"{}\n"))
    (root / "2024-01" / "notes.TXT").write_text("not raw data")
    listing = list_raw_root(str(root))
    assert [f.name for f in listing["2024-01"]] == ["2024-01/DAY1.JSONL", "2024-01/day2.Jsonl.GZ"]
