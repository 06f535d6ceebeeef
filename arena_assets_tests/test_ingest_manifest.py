"""Each ingested month keeps the list of raw files it was built from (sizes, versions,
SHA-256, line counts) beside its partition, on a local lake and on S3 (moto's server over
HTTP); a rerun writes the same manifest; and the raw-root sensor compares the raw files
with what each month was built from, so a sensor that never ticked while the months were
built still sees a month that grew, and asks for nothing when nothing changed."""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path

import boto3
import dagster as dg
import pytest

from arena_assets.definitions import defs as load_defs
from arena_assets.defs.ingest.sensors import raw_root_sensor
from arena_assets.ingest.manifest import (
    built_fingerprints,
    manifest_path,
    read_manifest,
    write_manifest,
)
from arena_assets.ingest.shrink import ShrinkError
from arena_assets.ingest.watch import list_raw_root, month_fingerprint
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTH = "2024-02"


def _ingest(lake: Lake, raw_root: str, options: dict | None = None, **kw):
    return ingest_month(
        lake, raw_root, MONTH, salt="s", known_models=None, storage_options=options, **kw
    )


def test_manifest_lists_what_the_month_was_built_from(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    simulate_months(raw, [MONTH], 40, seed=5, compress=True)
    lake = Lake(str(tmp_path / "lake"))
    stats = _ingest(lake, str(raw))
    manifest = read_manifest(lake, MONTH)
    on_disk = sorted((raw / MONTH).iterdir())
    assert [f.name for f in manifest.files] == [f"{MONTH}/{p.name}" for p in on_disk]
    for entry, path in zip(manifest.files, on_disk, strict=True):
        assert entry.size == path.stat().st_size
        assert entry.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()  # as stored
    assert (manifest.lines, manifest.accepted) == (stats.lines_read, stats.accepted)
    assert manifest.accepted == lake.rows("raw_logs", MONTH)
    assert manifest.fingerprint() == month_fingerprint(list_raw_root(str(raw))[MONTH])
    assert manifest.raw_root == str(raw)

    # a rerun over the same files writes the same bytes
    first = Path(manifest_path(lake, MONTH)).read_bytes()
    _ingest(lake, str(raw), workers=2)
    assert Path(manifest_path(lake, MONTH)).read_bytes() == first

    # a crash after the partitions, before the manifest: the lake holds the new month and
    # the manifest the old one; the sensor sees files that differ, and the rerun heals it
    grown = on_disk[1]
    grown.write_bytes(grown.read_bytes() + on_disk[2].read_bytes())  # a second gzip member
    _ingest(lake, str(raw))
    healed = Path(manifest_path(lake, MONTH)).read_bytes()
    Path(manifest_path(lake, MONTH)).write_bytes(first)
    listing = list_raw_root(str(raw))
    assert built_fingerprints(lake, [MONTH])[0][MONTH] != month_fingerprint(listing[MONTH])
    _ingest(lake, str(raw))
    assert Path(manifest_path(lake, MONTH)).read_bytes() == healed
    assert built_fingerprints(lake, [MONTH])[0][MONTH] == month_fingerprint(listing[MONTH])

    # a manifest that is not one: named in one line, the guard compares line counts only
    Path(manifest_path(lake, MONTH)).write_text("{not json")
    found, (unreadable,) = built_fingerprints(lake, [MONTH])
    assert found == {}
    assert unreadable.startswith(f"{lake.root}/raw_logs/_manifests/{MONTH}.json is not a raw_")
    stats = _ingest(lake, str(raw))
    assert stats.comparison.compared.startswith("accepted lines only")
    assert "is not a raw_logs manifest" in stats.comparison.compared


@pytest.fixture
def s3(s3_endpoint: str):
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )
    bucket = f"arena-{uuid.uuid4().hex[:12]}"  # moto's backend is shared in the process
    client.create_bucket(Bucket=bucket)
    options = {
        "key": "test",
        "secret": "test",
        "client_kwargs": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
    }
    return client, bucket, options


def test_manifest_and_guard_on_s3(s3, tmp_path: Path) -> None:
    client, bucket, options = s3
    local = tmp_path / "raw"
    simulate_months(local, [MONTH], 40, seed=5)
    for path in sorted((local / MONTH).iterdir()):
        client.upload_file(str(path), bucket, f"raw/{MONTH}/{path.name}")
    raw_root = f"s3://{bucket}/raw"
    lake = Lake(f"s3://{bucket}/lake", storage_options=options)
    stats = _ingest(lake, raw_root, options)

    manifest = read_manifest(lake, MONTH)
    assert manifest is not None and len(manifest.files) == len(list((local / MONTH).iterdir()))
    for entry in manifest.files:
        obj = client.get_object(Bucket=bucket, Key=f"raw/{entry.name}")
        assert entry.version == obj["ETag"].strip('"')
        assert entry.sha256 == hashlib.sha256(obj["Body"].read()).hexdigest()
    assert manifest.accepted == stats.accepted == lake.rows("raw_logs", MONTH)
    # what the sensor lists is what the manifest says: nothing to ask for
    listing = list_raw_root(raw_root, options)
    assert built_fingerprints(lake, [MONTH])[0] == {MONTH: month_fingerprint(listing[MONTH])}

    # a day's object deleted: refused, the month and its manifest stay as they were
    before = {
        key: lake.fs.cat(path)
        for key, path in {
            "raw_logs": lake.partition_path("raw_logs", MONTH),
            "raw_rejects": lake.partition_path("raw_rejects", MONTH),
            "manifest": manifest_path(lake, MONTH),
        }.items()
    }
    gone = manifest.files[3].name
    client.delete_object(Bucket=bucket, Key=f"raw/{gone}")
    said = f"1 of its {len(manifest.files)} source files are gone ({gone})"
    with pytest.raises(ShrinkError, match=re.escape(said)):
        _ingest(lake, raw_root, options)
    for key, data in before.items():
        path = manifest_path(lake, MONTH) if key == "manifest" else lake.partition_path(key, MONTH)
        lake.fs.invalidate_cache()
        assert lake.fs.cat(path) == data, key

    # a manifest written and read back as such
    manifest.files = manifest.files[:2]
    write_manifest(lake, manifest)
    assert read_manifest(lake, MONTH) == manifest


def _tick(instance: dg.DagsterInstance, cursor: str | None = None):
    with dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources=load_defs().resources,
        sensor_name="raw_root_sensor",
    ) as context:
        result = raw_root_sensor(context)
    return sorted(r.partition_key for r in result.run_requests), result


def test_sensor_compares_raw_files_with_what_each_month_was_built_from(
    arena_env: dict[str, str],
) -> None:
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    simulate_months(raw, ["2024-01", MONTH], 30, seed=4)
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    with dg.DagsterInstance.ephemeral() as demo, dg.DagsterInstance.ephemeral() as fresh:
        for month in ("2024-01", MONTH):  # the demo's build; the sensor never ticked
            assert materialize(month, "raw_logs,raw_rejects", instance=demo).success
        # nothing changed: nothing asked, on the demo's instance or on a new one
        assert _tick(demo)[0] == [] and _tick(fresh)[0] == []

        day = sorted((raw / MONTH).iterdir())[5]
        lines = day.read_bytes().splitlines(keepends=True)
        day.write_bytes(b"".join(lines) + lines[0])  # a line appended to a built month
        for instance in (demo, fresh):
            requested, result = _tick(instance)
            assert requested == [MONTH]
            assert result.run_requests[0].run_key == (
                f"{MONTH}:{month_fingerprint(list_raw_root(str(raw))[MONTH])}"
            )
        # once asked, not again for the same files while the run is queued or failed
        again, result = _tick(demo, result.cursor)
        assert again == []
        assert f"requested on an earlier tick (see that run): {MONTH}" in (
            result.skip_reason.skip_message
        )
        assert materialize(MONTH, "raw_logs,raw_rejects", instance=demo).success
        assert _tick(demo, result.cursor)[0] == [] and _tick(fresh)[0] == []

        # a month without manifest (built before they were kept): the cursor decides, and
        # the first tick adopts what the instance has ingested
        Path(manifest_path(lake, "2024-01")).unlink()
        assert _tick(fresh)[0] == ["2024-01"]
        requested, result = _tick(demo)
        assert requested == []
        assert "already ingested before the sensor's first tick (no manifest to compare " in (
            result.skip_reason.skip_message
        )
