"""A month that had data is never replaced by an empty one because an input
went missing (a wrong ARENA_RAW_ROOT, a month folder gone, a deleted partition); the run
fails with one line naming what to fix, and the lake keeps the month. An explicit setting
(ARENA_ALLOW_EMPTY_MONTH) lets an operator empty a month on purpose."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from arena_assets.ingest.watch import changed_months, list_raw_root
from arena_assets.labels.schema import TOPIC_LABELS_SCHEMA
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import failure_lines, materialize

MONTH = "2024-02"


def test_lake_refuses_to_empty_a_partition_that_has_rows(tmp_path: Path) -> None:
    from arena_assets.storage import EmptyPartitionError, MissingPartitionError

    lake = Lake(str(tmp_path / "lake"))
    frame = pl.DataFrame({"month": [MONTH] * 3, "x": [1, 2, 3]})
    lake.write("t", MONTH, frame)
    with pytest.raises(
        EmptyPartitionError,
        match=r"t 2024-02: .* holds 3 rows.*"
        r"ARENA_ALLOW_EMPTY_MONTH=true",
    ):
        lake.write("t", MONTH, frame.clear())
    assert lake.read("t", MONTH).height == 3  # kept
    assert not list((tmp_path / "lake" / "t" / "_tmp").iterdir())  # nothing left in flight
    # streamed writes are held to the same rule
    with pytest.raises(EmptyPartitionError):
        lake.write_batches("t", MONTH, frame.to_arrow().schema, iter([frame.clear()]))
    assert lake.read("t", MONTH).height == 3
    # an empty result that is normal for a table, or the operator's explicit setting
    lake.write("t", MONTH, frame.clear(), empty_ok=True)
    assert lake.read("t", MONTH).height == 0
    lake.write("t", MONTH, frame)
    Lake(str(tmp_path / "lake"), allow_empty=True).write("t", MONTH, frame.clear())
    assert lake.read("t", MONTH).height == 0
    # a new partition may be empty: nothing is replaced
    lake.write("t", "2024-03", frame.clear())
    with pytest.raises(
        MissingPartitionError,
        match=r"t 2024-04 is not in the lake .*"
        r"2024-04.parquet",
    ):
        lake.read("t", "2024-04")


@pytest.fixture
def ingested(arena_env: dict[str, str]) -> Lake:
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 60, seed=3)
    assert materialize(MONTH, "raw_logs,raw_rejects,conversations").success
    return Lake(arena_env["ARENA_LAKE_ROOT"])


def _rows(lake: Lake) -> dict[str, int]:
    return {t: lake.read(t, MONTH).height for t in ("raw_logs", "raw_rejects", "conversations")}


def test_wrong_raw_root_fails_in_one_line_and_keeps_the_month(
    ingested: Lake, arena_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _rows(ingested)
    assert before["raw_logs"] > 0
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARENA_RAW_ROOT", "./wrong/raw")  # a typo: the folder does not exist
    result = materialize(MONTH, "raw_logs,raw_rejects", raise_on_error=False)
    assert not result.success
    (line,) = failure_lines(result)
    assert f"month folder {tmp_path / 'wrong' / 'raw' / MONTH} does not exist" in line
    assert "check ARENA_RAW_ROOT" in line
    assert _rows(ingested) == before

    # a root whose month folder exists but is empty (a sync that has not run yet)
    empty_root = tmp_path / "empty-raw"
    (empty_root / MONTH).mkdir(parents=True)
    monkeypatch.setenv("ARENA_RAW_ROOT", str(empty_root))
    result = materialize(MONTH, "raw_logs,raw_rejects", raise_on_error=False)
    (line,) = failure_lines(result)
    assert (
        f"raw_logs {MONTH}: the new result is empty but the lake holds {before['raw_logs']:,} rows"
        in line
        and "ARENA_ALLOW_EMPTY_MONTH=true" in line
    )
    assert _rows(ingested) == before
    # ...and what follows raw_logs is not carried down: conversations still hold the month
    # (the blocking failure stops the run before any downstream step)

    # deliberately emptied: the explicit setting
    monkeypatch.setenv("ARENA_ALLOW_EMPTY_MONTH", "true")
    assert materialize(MONTH, "raw_logs,raw_rejects").success
    assert ingested.read("raw_logs", MONTH).height == 0


def test_every_asset_whose_input_vanished_fails_and_keeps_its_month(
    ingested: Lake, arena_env: dict[str, str]
) -> None:
    lake = ingested
    conv_rows = lake.read("conversations", MONTH).height
    # raw_logs of the month deleted (by hand, or by retention): conversations name it
    Path(lake.partition_path("raw_logs", MONTH)).unlink()
    result = materialize(MONTH, "conversations", raise_on_error=False)
    (line,) = failure_lines(result)
    assert f"raw_logs {MONTH} is not in the lake" in line and "raw_logs/2024-02.parquet" in line
    assert lake.read("conversations", MONTH).height == conv_rows

    # conversations emptied on purpose while topic_labels still hold the month's labels:
    # the labelling step (no call to make) must not empty them without the setting
    labels = pl.DataFrame(
        {"conv_id": ["c1", "c2"], "month": [MONTH] * 2}, schema_overrides={"conv_id": pl.String}
    )
    labels = labels.select(
        [
            pl.col(c).cast(t) if c in labels.columns else pl.lit(None, dtype=t).alias(c)
            for c, t in TOPIC_LABELS_SCHEMA.items()
        ]
    )
    lake.write("topic_labels", MONTH, labels)
    empty = lake.read("conversations", MONTH).clear()
    Lake(lake.root, allow_empty=True).write("conversations", MONTH, empty)
    result = materialize(MONTH, "topic_labels", raise_on_error=False)
    (line,) = failure_lines(result)
    assert f"topic_labels {MONTH}: the new result is empty but the lake holds 2 rows" in line
    assert lake.read("topic_labels", MONTH).height == 2


def test_sensor_never_requests_a_month_without_files(tmp_path: Path) -> None:
    simulate_months(tmp_path, [MONTH], 20, seed=1)
    (tmp_path / "2024-03").mkdir()  # a folder without files
    listing = list_raw_root(str(tmp_path))
    changed, _, empty = changed_months(None, listing)
    assert changed == [MONTH] and empty == ["2024-03"]
    shutil.rmtree(tmp_path / MONTH)  # the month's folder vanished: nothing to ask for
    changed, cursor, _ = changed_months(None, list_raw_root(str(tmp_path)))
    assert changed == [] and MONTH not in cursor["months"]


def test_ingest_cli_fails_on_a_missing_month_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena_assets.cli import main as cli_main

    assert (
        cli_main(
            [
                "ingest",
                str(tmp_path / "nowhere"),
                "--month",
                MONTH,
                "--out",
                str(tmp_path / "out"),
                "--salt",
                "s",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "check ARENA_RAW_ROOT" in err[0] and "nowhere" in err[0]
    assert not (tmp_path / "out").exists()
