"""Backfills: the run plan (policies -> runs), the CLI's plan from the real code location,
and one single-run backfill over three months recording each month's own metadata."""

from __future__ import annotations

import subprocess
import sys

import dagster as dg
import polars as pl
import pytest

from arena_assets.pipeline.backfill import PlannedRun, months_between, plan_backfill, stage_order
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTHS = ["2024-01", "2024-02", "2024-03"]


def test_months_between_crosses_years_and_rejects_reversed_ranges():
    assert months_between("2023-11", "2024-02") == ["2023-11", "2023-12", "2024-01", "2024-02"]
    assert months_between("2024-05", "2024-05") == ["2024-05"]
    with pytest.raises(ValueError, match="before"):
        months_between("2024-05", "2024-04")


def test_plan_runs_per_month_stages_in_order_and_single_run_stages_once():
    assets = [("raw_logs", None), ("conversations", None), ("topics", "multi_run"),
              ("arena_leaderboard", "single_run"), ("leaderboard_history", "single_run"),
              ("judgments", "multi_run")]
    plan = plan_backfill(assets, ["2024-01", "2024-02"])
    assert plan == [
        PlannedRun(("raw_logs", "conversations", "topics"), ("2024-01",)),
        PlannedRun(("raw_logs", "conversations", "topics"), ("2024-02",)),
        PlannedRun(("arena_leaderboard", "leaderboard_history"), ("2024-01", "2024-02")),
        PlannedRun(("judgments",), ("2024-01",)),
        PlannedRun(("judgments",), ("2024-02",)),
    ]
    assert plan[2].partition_args == ["--partition-range", "2024-01...2024-02"]
    assert plan[0].partition_args == ["--partition", "2024-01"]


def test_plan_places_an_independent_stage_by_its_dependencies():
    assets = [("side_a", "single_run"), ("raw", None), ("clean", None), ("side_b", "single_run"),
              ("cells", None), ("board", "single_run")]
    deps = {"clean": {"raw"}, "side_b": {"side_a"}, "cells": {"clean"}, "board": {"cells"}}
    plan = plan_backfill(stage_order(assets, deps), ["2024-01", "2024-02"])
    assert [(r.assets, r.months) for r in plan] == [
        (("side_a", "side_b"), ("2024-01", "2024-02")),
        (("raw", "clean", "cells"), ("2024-01",)), (("raw", "clean", "cells"), ("2024-02",)),
        (("board",), ("2024-01", "2024-02"))]
    # without the dependencies: consecutive assets of one kind, as listed
    assert len(plan_backfill(assets, ["2024-01"])) == 5


def test_cli_plan_from_the_code_location(arena_env):
    proc = subprocess.run(
        [sys.executable, "-m", "arena_assets.cli", "backfill", "--from", "2024-01", "--to",
         "2024-02", "--dry-run"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    # per month, in order: the multi-run stages (one month a run); the single-run ones take
    # the range in one run once the months they read exist
    upstream = ("raw_logs,raw_rejects,conversations,battles,topic_labels,battle_cells,"
                "judge_human_agreement,topic_clusters")
    # the Copilot Arena tables depend on nothing else: one range run of their own, not a
    # split of the chat chain wherever the topological order puts them
    assert lines == [
        "dagster asset materialize --select completion_battles,copilot_leaderboard "
        "--partition-range 2024-01...2024-02",
        f"dagster asset materialize --select {upstream} --partition 2024-01",
        f"dagster asset materialize --select {upstream} --partition 2024-02",
        "dagster asset materialize --select arena_leaderboard,bench_prompts,leaderboard_history "
        "--partition-range 2024-01...2024-02",
        "dagster asset materialize --select model_answers,over_refusal,judgments --partition 2024-01",
        "dagster asset materialize --select model_answers,over_refusal,judgments --partition 2024-02",
        "dagster asset materialize --select bench_leaderboard --partition-range 2024-01...2024-02",
    ]


def test_single_run_backfill_records_each_months_own_metadata(arena_env):
    simulate_months(arena_env["ARENA_RAW_ROOT"], MONTHS, 250, seed=11)
    for month in MONTHS:
        assert materialize(month, "raw_logs,raw_rejects,conversations,battles,battle_cells").success
    from arena_assets.definitions import defs as load_defs

    defs = load_defs()
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(
            assets=list(defs.assets or []), resources=defs.resources, instance=instance,
            selection=dg.AssetSelection.assets("arena_leaderboard", "leaderboard_history"),
            tags={"dagster/asset_partition_range_start": MONTHS[0],
                  "dagster/asset_partition_range_end": MONTHS[-1]})
        assert result.success
        lake = Lake(arena_env["ARENA_LAKE_ROOT"])
        for asset in ("arena_leaderboard", "leaderboard_history"):
            events = result.asset_materializations_for_node(asset)
            by_month = {e.partition: e.metadata for e in events}
            assert sorted(by_month) == MONTHS, asset
            for month, meta in by_month.items():
                assert meta["month"].value == month
                assert meta["path"].value.endswith(f"{month}.parquet")
                assert meta["dagster/row_count"].value == lake.read(asset, month).height
            # and the instance serves each partition's own record (what the UI shows)
            for month in MONTHS:
                record = instance.fetch_materializations(
                    dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[month]),
                    limit=1).records[0]
                assert record.asset_materialization.metadata["month"].value == month
        # the top of each board inline, ratings rounded, every column described
        meta = {e.partition: e.metadata for e in
                result.asset_materializations_for_node("arena_leaderboard")}["2024-03"]
        top = meta["top: overall"].value
        assert top.records and all(
            round(r.data["rating"], 1) == r.data["rating"] for r in top.records)
        assert all(c.description for c in top.schema.columns)
        board = lake.read("arena_leaderboard", "2024-03").filter(pl.col("board") == "overall")
        assert top.records[0].data["model"] == board.sort("rank", "model")["model"][0]
        described = {c.name: c.description for c in meta["dagster/column_schema"].schema.columns}
        assert "blank" in described["rank_change"].lower()

        # the release of one month: Chat, Battle and SFT (no bench_prompts in the lake yet)
        released = dg.materialize(
            assets=list(defs.assets or []), resources=defs.resources, instance=instance,
            selection=dg.AssetSelection.assets("month_release"), partition_key="2024-02")
        assert released.success
        (event,) = released.asset_materializations_for_node("month_release")
        assert event.partition == "2024-02"
        assert "not released" in event.metadata["bench"].value
        rows = event.metadata["rows"].value
        assert set(rows) == {"chat", "battle", "sft"}
        assert rows["chat"] == lake.read("conversations", "2024-02").height
        chat = pl.read_parquet(f"{arena_env['ARENA_RELEASE_ROOT']}/arena-chat-2024-02/data/*.parquet")
        assert chat.height == rows["chat"]
        # user hashes re-keyed: none of the lake's hashes leaves in the release
        lake_hashes = set(lake.read("conversations", "2024-02")["user_hash"].drop_nulls())
        hash_col = next(c for c in chat.columns if "hash" in c or c == "user_id")
        assert not lake_hashes & set(chat[hash_col].drop_nulls().cast(pl.String))
