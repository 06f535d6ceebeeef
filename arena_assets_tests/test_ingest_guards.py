"""The ingest step's guards around what a month was built from: a month whose raw_logs
partition is gone (retention deletes it and keeps the manifest) is still compared with its
manifest before a smaller build is written; and the manifest itself is written through the
lake, so a writer whose run has ended is refused and an I/O failure is one line naming the
file and the setting."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from arena_assets.errors import StorageError
from arena_assets.ingest.manifest import manifest_path, read_manifest, write_manifest
from arena_assets.ingest.shrink import ShrinkError, ShrinkRule
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake, WriteRefused

MONTH = "2024-02"


@pytest.fixture
def retained(tmp_path: Path) -> tuple[Lake, Path]:
    """A month ingested, then its raw_logs deleted as retention does (manifest kept)."""
    raw = tmp_path / "raw"
    simulate_months(raw, [MONTH], 40, seed=7)
    lake = Lake(str(tmp_path / "lake"))
    ingest_month(lake, str(raw), MONTH, salt="s", known_models=None)
    Path(lake.partition_path("raw_logs", MONTH)).unlink()
    assert read_manifest(lake, MONTH) is not None
    return lake, raw / MONTH


def _ingest(lake: Lake, folder: Path, **kw):
    return ingest_month(lake, str(folder.parent), MONTH, salt="s", known_models=None, **kw)


def test_a_retained_month_with_files_gone_is_refused(retained, tmp_path: Path) -> None:
    lake, folder = retained
    manifest = read_manifest(lake, MONTH)
    rejects = Path(lake.partition_path("raw_rejects", MONTH)).read_bytes()
    aside = tmp_path / "aside"
    aside.mkdir()
    for path in sorted(folder.iterdir())[1:]:
        shutil.move(path, aside / path.name)
    with pytest.raises(ShrinkError) as refused:
        _ingest(lake, folder)
    line = str(refused.value)
    assert "source files are gone" in line and "\n" not in line
    assert f"accepted lines {manifest.accepted:,} → " in line
    assert not lake.exists("raw_logs", MONTH)  # nothing written
    assert Path(lake.partition_path("raw_rejects", MONTH)).read_bytes() == rejects
    assert read_manifest(lake, MONTH) == manifest
    assert "raw_logs partition is gone" in refused.value.comparison.compared

    allowed = _ingest(lake, folder, shrink=ShrinkRule(allowed_by="a test"))
    assert allowed.shrink_allowed_by == "a test" and lake.exists("raw_logs", MONTH)


def test_a_retained_month_with_a_file_cut_short_is_refused(retained) -> None:
    lake, folder = retained
    first = sorted(folder.iterdir())[0]
    lines = first.read_bytes().splitlines(keepends=True)
    first.write_bytes(b"".join(lines[: len(lines) - 3]))
    with pytest.raises(ShrinkError, match="cut short"):
        _ingest(lake, folder)
    assert not lake.exists("raw_logs", MONTH)


def test_a_retained_month_rebuilt_from_the_same_files_passes(retained) -> None:
    lake, folder = retained
    before = read_manifest(lake, MONTH)
    stats = _ingest(lake, folder)
    assert stats.comparison.lines_before == before.accepted == stats.accepted
    assert not stats.shrink_allowed_by and read_manifest(lake, MONTH) == before


def test_the_manifest_write_is_refused_when_its_run_has_ended(retained) -> None:
    lake, _ = retained
    manifest = read_manifest(lake, MONTH)
    path = Path(manifest_path(lake, MONTH))
    before = path.read_bytes()
    manifest.files = manifest.files[:1]
    ended = Lake(lake.root, guard=lambda: "the run has ended")
    with pytest.raises(WriteRefused, match="manifest not written: the run has ended"):
        write_manifest(ended, manifest)
    assert path.read_bytes() == before
    assert write_manifest(lake, manifest).endswith(f"raw_logs/_manifests/{MONTH}.json")
    assert read_manifest(lake, MONTH).files == manifest.files


def test_a_manifest_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    simulate_months(raw, [MONTH], 10, seed=7)
    lake = Lake(str(tmp_path / "lake"))
    manifest = _ingest(lake, raw / MONTH).manifest
    folder = Path(manifest_path(lake, MONTH)).parent
    shutil.rmtree(folder)
    folder.write_bytes(b"not a folder")  # the manifests' folder cannot be made
    with pytest.raises(StorageError) as failed:
        write_manifest(lake, manifest)
    line = str(failed.value)
    assert "\n" not in line and "raw_logs 2024-02 manifest not written" in line
    assert f"ARENA_LAKE_ROOT={lake.root}" in line
