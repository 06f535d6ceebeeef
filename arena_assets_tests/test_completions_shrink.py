"""Copilot Arena's month is not replaced by a shrunken build: ``completion_battles`` keeps
a manifest of the files it was built from, and a new build that lost files, has one cut
short or lost more than the allowed share of records is refused before anything is
written, through the month step and through Dagster, unless the operator allows it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from arena_assets.ingest.manifest import read_manifest
from arena_assets.ingest.shrink import ShrinkError, ShrinkRule
from arena_assets.pipeline.completions import COMPLETION_BATTLES, completion_battles_month
from arena_assets.simulator import World
from arena_assets.simulator.completions import generate_completions
from arena_assets.storage import Lake
from arena_assets_tests.harness import failure_lines, materialize

MONTH = "2024-03"
PARTS = 4


@pytest.fixture
def built(arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    """The month's records in PARTS daily files, built once: (lake, month folder)."""
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    generate_completions(World.build(seed=5), raw, MONTH, 300)
    folder = raw / "_completions" / MONTH
    (single,) = folder.iterdir()
    lines = single.read_bytes().splitlines(keepends=True)
    single.unlink()
    size = -(-len(lines) // PARTS)
    for i in range(PARTS):
        (folder / f"completions-{MONTH}-{i + 1:02d}.jsonl").write_bytes(
            b"".join(lines[i * size : (i + 1) * size])
        )
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    first = completion_battles_month(lake, str(folder.parent), MONTH, salt="s")
    assert first.comparison.compared.startswith("first build")
    manifest = read_manifest(lake, MONTH, COMPLETION_BATTLES)
    assert len(manifest.files) == PARTS and manifest.lines == first.records_read
    return lake, folder


def _snapshot(lake: Lake) -> dict[str, bytes]:
    files = [lake.partition_path(t, MONTH) for t in (COMPLETION_BATTLES, "completion_rejects")]
    return {f: Path(f).read_bytes() for f in files}


def test_files_gone_are_refused_and_the_month_kept(built, tmp_path: Path) -> None:
    lake, folder = built
    kept = _snapshot(lake)
    aside = tmp_path / "aside"
    aside.mkdir()
    for path in sorted(folder.iterdir())[1:]:
        shutil.move(path, aside / path.name)
    with pytest.raises(ShrinkError) as refused:
        completion_battles_month(lake, str(folder.parent), MONTH, salt="s")
    line = str(refused.value)
    assert line.startswith(f"completion_battles {MONTH}: refused") and "\n" not in line
    assert f"{PARTS - 1} of its {PARTS} source files are gone" in line
    assert _snapshot(lake) == kept

    # through Dagster: the run fails in that line, the month stays
    (failed,) = failure_lines(materialize(MONTH, COMPLETION_BATTLES, raise_on_error=False))
    assert "source files are gone" in failed and _snapshot(lake) == kept

    allowed = completion_battles_month(
        lake, str(folder.parent), MONTH, salt="s", shrink=ShrinkRule(allowed_by="a test")
    )
    assert allowed.shrink_allowed_by == "a test"
    assert len(read_manifest(lake, MONTH, COMPLETION_BATTLES).files) == 1


def test_a_file_cut_short_is_refused(built) -> None:
    lake, folder = built
    kept = _snapshot(lake)
    last = sorted(folder.iterdir())[-1]
    lines = last.read_bytes().splitlines(keepends=True)
    last.write_bytes(b"".join(lines[: len(lines) // 2]))
    with pytest.raises(ShrinkError, match="cut short"):
        completion_battles_month(lake, str(folder.parent), MONTH, salt="s")
    assert _snapshot(lake) == kept


def test_a_month_that_grows_is_rebuilt(built) -> None:
    lake, folder = built
    first = sorted(folder.iterdir())[0]
    (folder / f"completions-{MONTH}-99.jsonl").write_bytes(first.read_bytes())
    again = completion_battles_month(lake, str(folder.parent), MONTH, salt="s")
    assert again.comparison.added == [f"{MONTH}/completions-{MONTH}-99.jsonl"]
    assert not again.comparison.gone and not again.shrink_allowed_by
