"""A month is never silently replaced by a shrunken one: through Dagster on a real lake, a
month folder that lost files fails the run in one line before anything is written (raw_logs,
raw_rejects, conversations and the manifest stay byte-identical, nothing downstream runs);
the run tag and the setting each allow an intended shrink; a month that grows passes; a
month built before manifests were kept is compared by its line counts."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from arena_assets.errors import SettingError
from arena_assets.ingest.manifest import manifest_path, read_manifest
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import failure_lines, materialize

MONTH = "2024-02"
SELECTION = "raw_logs,raw_rejects,conversations"
HELD_BACK = 3  # day files that arrive after the first build


@pytest.fixture
def built(arena_env: dict[str, str], tmp_path: Path) -> tuple[Lake, Path, Path]:
    """The month built while its last days were not there yet and its first day file held
    only its first half: (lake, month folder, folder with what arrives later)."""
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 60, seed=3)
    folder = Path(arena_env["ARENA_RAW_ROOT"]) / MONTH
    later = tmp_path / "later"
    later.mkdir()
    days = sorted(folder.iterdir())
    for path in days[-HELD_BACK:]:
        shutil.move(path, later / path.name)
    lines = days[0].read_bytes().splitlines(keepends=True)
    days[0].write_bytes(b"".join(lines[: len(lines) // 2]))
    (later / "tail").write_bytes(b"".join(lines[len(lines) // 2 :]))
    assert materialize(MONTH, SELECTION).success
    return Lake(arena_env["ARENA_LAKE_ROOT"]), folder, later


def _grow(folder: Path, later: Path) -> None:
    """The held-back days arrive and the first day's file gets the rest of its lines."""
    first = sorted(folder.iterdir())[0]
    with first.open("ab") as fh:
        fh.write((later / "tail").read_bytes())
    for path in later.glob("events-*"):
        shutil.move(path, folder / path.name)


def _snapshot(lake: Lake) -> dict[str, bytes]:
    files = {t: Path(lake.partition_path(t, MONTH)) for t in SELECTION.split(",")}
    files["manifest"] = Path(manifest_path(lake, MONTH))
    return {name: path.read_bytes() for name, path in files.items()}


def _ingest_metadata(result: dg.ExecuteInProcessResult) -> dict:
    (event,) = [
        e
        for e in result.asset_materializations_for_node("raw_logs")
        if e.asset_key == dg.AssetKey("raw_logs")
    ]
    return event.metadata


def _remove_all_but_first(folder: Path, aside: Path) -> list[str]:
    aside.mkdir(exist_ok=True)
    gone = sorted(folder.iterdir())[1:]
    for path in gone:
        shutil.move(path, aside / path.name)
    return [f"{MONTH}/{p.name}" for p in gone]


def test_files_removed_fail_in_one_line_and_the_run_tag_allows_it(
    built: tuple[Lake, Path, Path], tmp_path: Path
) -> None:
    lake, folder, _ = built
    before = _snapshot(lake)
    rows_before = lake.rows("raw_logs", MONTH)
    manifest = read_manifest(lake, MONTH)
    files_before = len(manifest.files)
    gone = _remove_all_but_first(folder, tmp_path / "aside")
    kept = next(f for f in manifest.files if f.name not in gone)

    result = materialize(MONTH, SELECTION, raise_on_error=False)
    (line,) = failure_lines(result)
    assert f"raw_logs {MONTH}: refused to replace the month with a smaller build" in line
    assert f"{len(gone)} of its {files_before} source files are gone ({gone[0]}, " in line
    assert f"accepted lines {rows_before:,} → {kept.accepted:,}" in line
    assert "run tag arena/allow_shrink=true" in line and "ARENA_ALLOW_SHRINK=true" in line
    # the month stays as it was, nothing downstream ran, nothing is left in flight
    assert _snapshot(lake) == before
    assert result.get_asset_materialization_events() == []
    assert [e.step_key for e in result.get_step_failure_events()] == ["raw_logs"]
    assert not list(Path(lake.folder("raw_logs"), "_tmp").iterdir())

    # the operator means it: one run, by its tag
    result = materialize(MONTH, SELECTION, tags={"arena/allow_shrink": "true"})
    meta = _ingest_metadata(result)
    assert meta["shrink_allowed_by"].text == "run tag arena/allow_shrink=true"
    previous = meta["previous_build"].data
    assert previous["files_gone"] == gone
    assert previous["accepted_lines"] == {"before": rows_before, "after": kept.accepted}
    assert lake.rows("raw_logs", MONTH) == kept.accepted
    assert [f.name for f in read_manifest(lake, MONTH).files] == [kept.name]
    # a tag that says neither yes nor no is refused, not read as one of them
    result = materialize(MONTH, SELECTION, False, tags={"arena/allow_shrink": "ture"})
    (line,) = failure_lines(result)
    assert line.endswith("run tag arena/allow_shrink='ture': expected true or false")


def test_a_growing_month_passes_and_the_setting_allows_a_shrink(
    built: tuple[Lake, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, folder, later = built
    rows_before = lake.rows("raw_logs", MONTH)
    first = sorted(folder.iterdir())[0].name
    _grow(folder, later)
    meta = _ingest_metadata(materialize(MONTH, SELECTION))
    previous = meta["previous_build"].data
    assert meta["shrink_allowed_by"].text == "-"
    assert len(previous["files_added"]) == HELD_BACK
    assert previous["files_changed"] == [f"{MONTH}/{first}"]  # grown
    assert previous["files_gone"] == previous["files_cut_short"] == []
    grown = lake.rows("raw_logs", MONTH)
    assert grown > rows_before and previous["accepted_lines"]["after"] == grown
    assert meta["source_bytes"].value == sum(p.stat().st_size for p in folder.iterdir())

    # the first day's file cut back to half: a file cut short, refused although the month
    # loses far less than a fifth of its lines
    path = folder / first
    path.write_bytes(path.read_bytes()[: -len((later / "tail").read_bytes())])
    (line,) = failure_lines(materialize(MONTH, SELECTION, raise_on_error=False))
    assert f"1 cut short ({MONTH}/{first} (" in line and "source files are gone" not in line

    monkeypatch.setenv("ARENA_ALLOW_SHRINK", "true")
    gone = _remove_all_but_first(folder, tmp_path / "aside")
    meta = _ingest_metadata(materialize(MONTH, SELECTION))
    assert meta["shrink_allowed_by"].text == "ARENA_ALLOW_SHRINK=true"
    assert meta["previous_build"].data["files_gone"] == gone
    assert lake.rows("raw_logs", MONTH) < rows_before


def test_a_month_without_manifest_is_compared_by_its_lines(
    built: tuple[Lake, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, folder, _ = built
    rows_before = lake.rows("raw_logs", MONTH)
    Path(manifest_path(lake, MONTH)).unlink()  # built before manifests were kept
    last = sorted(folder.iterdir())[-1]
    shutil.move(last, tmp_path / last.name)  # one day of many: a few lines fewer
    meta = _ingest_metadata(materialize(MONTH, SELECTION))
    assert meta["compared_with_previous"].text.startswith("accepted lines only")
    assert meta["previous_build"].data["files"]["before"] is None
    assert read_manifest(lake, MONTH) is not None  # from now on it has one

    Path(manifest_path(lake, MONTH)).unlink()
    rows = lake.rows("raw_logs", MONTH)
    assert rows_before - rows < 0.2 * rows_before
    monkeypatch.setenv("ARENA_SHRINK_MAX_FRACTION", "0.5")
    _remove_all_but_first(folder, tmp_path / "aside")
    after = sorted(folder.iterdir())
    (line,) = failure_lines(materialize(MONTH, SELECTION, raise_on_error=False))
    assert f"accepted lines {rows:,} → " in line and "the limit is -50%" in line
    assert "source files are gone" not in line  # no file list to compare with
    assert lake.rows("raw_logs", MONTH) == rows and len(after) == 1

    monkeypatch.setenv("ARENA_SHRINK_MAX_FRACTION", "half")
    with pytest.raises(SettingError, match="ARENA_SHRINK_MAX_FRACTION='half' is not allowed"):
        materialize(MONTH, SELECTION, raise_on_error=False)  # refused before any step runs
    assert lake.rows("raw_logs", MONTH) == rows


def test_ingest_command_refuses_a_shrink_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena_assets.cli import main as cli_main

    raw, out = tmp_path / "raw", tmp_path / "out"
    simulate_months(raw, [MONTH], 30, seed=2)
    command = ["ingest", str(raw), "--month", MONTH, "--out", str(out), "--salt", "s"]
    assert cli_main(command) == 0
    written = Path(out, "raw_logs", f"{MONTH}.parquet").read_bytes()
    gone = _remove_all_but_first(raw / MONTH, tmp_path / "aside")
    capsys.readouterr()
    assert cli_main(command) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"source files are gone ({gone[0]}, " in line and "rerun with --allow-shrink" in line
    assert Path(out, "raw_logs", f"{MONTH}.parquet").read_bytes() == written
    assert cli_main([*command, "--allow-shrink"]) == 0
    assert "allowed by --allow-shrink" in capsys.readouterr().err
    kept = [f"{MONTH}/{p.name}" for p in (raw / MONTH).iterdir()]
    assert [f.name for f in read_manifest(Lake(str(out)), MONTH).files] == kept
