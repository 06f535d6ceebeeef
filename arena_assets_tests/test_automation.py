"""The raw-root sensor (cursor across ticks) and declarative automation (a new raw month
flows downstream; an old month rewritten refreshes every later leaderboard snapshot), evaluated against a real (ephemeral) Dagster instance."""

from __future__ import annotations

import os
from datetime import UTC
from pathlib import Path

import dagster as dg
import pytest

from arena_assets.definitions import defs as load_defs
from arena_assets.defs.ingest.sensors import raw_root_sensor
from arena_assets.defs.schedules import month_before, monthly_refresh_schedule
from arena_assets.errors import SettingError


def _write(raw: Path, rel: str, text: str) -> Path:
    path = raw / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _tick(instance, resources, cursor=None):
    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources=resources, sensor_name="raw_root_sensor"
    ) as context:
        result = raw_root_sensor(context)
    return result, result.cursor


def test_sensor_requests_changed_months_across_ticks(arena_env):
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    _write(raw, "2024-01/a.jsonl", '{"x": 1}\n')
    feb = _write(raw, "2024-02/a.jsonl", '{"x": 2}\n')
    (raw / "2024-03").mkdir()  # a month folder without files
    _write(raw, "2024-04/_tmp/upload.jsonl", "{}\n")  # only a writer's temporary file
    _write(raw, "2019-05/a.jsonl", "{}\n")  # before ARENA_PARTITIONS_START
    defs = load_defs()
    with dg.DagsterInstance.ephemeral() as instance:
        first, cursor = _tick(instance, defs.resources)
        requested = {r.partition_key: r.run_key for r in first.run_requests}
        assert sorted(requested) == ["2024-01", "2024-02"]
        assert all(key.startswith(month + ":") for month, key in requested.items())

        second, cursor2 = _tick(instance, defs.resources, cursor)
        assert second.run_requests == []
        assert "no raw files in 2024-03, 2024-04" in second.skip_reason.skip_message
        assert "outside the partition range: 2019-05" in second.skip_reason.skip_message

        # a changed file (new size and modification time) requests exactly its month,
        # under a new run key
        feb.write_text('{"x": 2}\n{"x": 3}\n')
        os.utime(feb, (1_900_000_000, 1_900_000_000))
        third, _ = _tick(instance, defs.resources, cursor2)
        assert [r.partition_key for r in third.run_requests] == ["2024-02"]
        assert third.run_requests[0].run_key != requested["2024-02"]

        # files arriving in the empty month request it
        _write(raw, "2024-03/a.jsonl", '{"x": 4}\n')
        fourth, _ = _tick(instance, defs.resources, cursor2)
        assert sorted(r.partition_key for r in fourth.run_requests) == ["2024-02", "2024-03"]


def test_first_tick_adopts_months_already_ingested(arena_env):
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    _write(raw, "2024-01/a.jsonl", "{}\n")
    _write(raw, "2024-02/a.jsonl", "{}\n")
    defs = load_defs()
    with dg.DagsterInstance.ephemeral() as instance:
        instance.report_runless_asset_event(
            dg.AssetMaterialization("raw_logs", partition="2024-01")
        )
        first, cursor = _tick(instance, defs.resources)
        assert [r.partition_key for r in first.run_requests] == ["2024-02"]
        assert "2024-01" in cursor  # adopted: its fingerprint is in the cursor


def test_schedule_skips_a_month_without_raw_files(arena_env):
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    _write(raw, "2024-02/a.jsonl", "{}\n")
    assert month_before(2024, 1) == "2023-12" and month_before(2024, 3) == "2024-02"
    defs = load_defs()
    with dg.DagsterInstance.ephemeral() as instance:

        def tick(when: str):
            from datetime import datetime

            with dg.build_schedule_context(
                instance=instance,
                resources=defs.resources,
                scheduled_execution_time=datetime.fromisoformat(when).replace(tzinfo=UTC),
            ) as context:
                return monthly_refresh_schedule(context)

        ran = tick("2024-03-01T02:00:00")
        assert isinstance(ran, dg.RunRequest) and ran.partition_key == "2024-02"
        empty = tick("2024-04-01T02:00:00")
        assert isinstance(empty, dg.SkipReason)
        assert "no raw files for 2024-03" in empty.skip_message


def _materialized(instance, asset: str, months: list[str]) -> None:
    for month in months:
        instance.report_runless_asset_event(dg.AssetMaterialization(asset, partition=month))


def _requested(result) -> dict[str, list[str]]:
    out = {}
    for key in (
        "raw_logs",
        "conversations",
        "topic_labels",
        "topic_clusters",
        "battles",
        "battle_cells",
        "arena_leaderboard",
        "leaderboard_history",
        "month_release",
        "bench_prompts",
        "model_answers",
    ):
        parts = sorted(result.get_requested_partitions(dg.AssetKey(key)))
        if parts:
            out[key] = parts
    return out


def test_new_raw_month_flows_down_and_old_rewrite_refreshes_later_snapshots(arena_env):
    defs = load_defs()
    months = ["2024-01", "2024-02", "2024-03"]
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert result.total_requested == 0  # nothing happens before something is ingested
        cursor = result.cursor

        # a new raw month is carried down in one go: each stage is requested together
        # with what it reads (Dagster counts "will be requested" as on its way)
        _materialized(instance, "raw_logs", ["2024-01"])
        _materialized(instance, "raw_rejects", ["2024-01"])
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        cursor = result.cursor
        downstream = [
            "conversations",
            "topic_labels",
            "topic_clusters",
            "battles",
            "battle_cells",
            "arena_leaderboard",
            "leaderboard_history",
        ]
        assert _requested(result) == {k: ["2024-01"] for k in downstream}
        for asset in downstream:
            _materialized(instance, asset, ["2024-01"])
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        cursor = result.cursor
        assert _requested(result) == {}  # handled: no second request

        # months 2 and 3 complete (as a backfill would leave them)
        for asset in (
            "raw_logs",
            "raw_rejects",
            "conversations",
            "topic_labels",
            "topic_clusters",
            "battles",
            "battle_cells",
            "arena_leaderboard",
            "leaderboard_history",
        ):
            _materialized(instance, asset, months[1:])
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        cursor = result.cursor
        # releases never follow by themselves
        assert "month_release" not in _requested(result)

        # rewrite month 1's cells: every later snapshot is requested, not only month 1's,
        # and the history that reads them
        _materialized(instance, "battle_cells", ["2024-01"])
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        cursor = result.cursor
        assert _requested(result) == {"arena_leaderboard": months, "leaderboard_history": months}

        # rewriting month 1's battles re-runs the later months' battles too (the anomaly
        # test's crowd reads earlier months), their cells, and every snapshot
        _materialized(instance, "battles", ["2024-01"])
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        requested = _requested(result)
        assert "2024-02" in requested["battles"]  # the next month, which reads it
        assert requested["battle_cells"][0] == "2024-01"
        cursor = result.cursor
        for asset in ("battles", "battle_cells"):
            _materialized(instance, asset, months)
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        assert _requested(result)["arena_leaderboard"] == months


@pytest.mark.parametrize("end", ["2024-03"])
def test_partition_range_ends_where_configured(end):
    from arena_assets.defs.partitions import monthly_partitions_between

    assert monthly_partitions_between("2024-01", end).get_partition_keys() == [
        "2024-01",
        "2024-02",
        "2024-03",
    ]
    with pytest.raises(SettingError, match="ARENA_PARTITIONS_END=2024-03 is before"):
        monthly_partitions_between("2024-05", "2024-03")
