"""Backfills: the run plan (policies -> runs), the CLI's plan from the real code location,
and one single-run backfill over three months recording each month's own metadata."""

from __future__ import annotations

import subprocess
import sys

import dagster as dg
import polars as pl
import pytest

from arena_assets.pipeline.backfill import (
    MonthError,
    PlannedRun,
    months_between,
    plan_backfill,
    stage_order,
    within_partitions,
)
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTHS = ["2024-01", "2024-02", "2024-03"]


def test_months_between_crosses_years_and_rejects_bad_months():
    assert months_between("2023-11", "2024-02") == ["2023-11", "2023-12", "2024-01", "2024-02"]
    assert months_between("2024-05", "2024-05") == ["2024-05"]
    with pytest.raises(MonthError, match="before"):
        months_between("2024-05", "2024-04")
    for bad, says in (
        ("2024-13", "no month 13"),
        ("2024-1", "not a month"),
        ("24-03", "not a month"),
        ("2024-00", "no month 00"),
    ):
        with pytest.raises(MonthError, match=says):
            months_between(bad, "2024-12")
    assert within_partitions(["2024-01"], ["2024-01", "2024-02"]) == ["2024-01"]
    with pytest.raises(MonthError, match=r"2024-03 outside the partition range 2024-01\.\.2024-02"):
        within_partitions(["2024-02", "2024-03"], ["2024-01", "2024-02"])


def test_plan_follows_each_stages_policy():
    """No policy: a month a run; multi-run of N: chunks of N months; single-run: the range."""
    assets = [
        ("raw_logs", None, None),
        ("conversations", None, None),
        ("topic_labels", "multi_run", 3),
        ("arena_leaderboard", "single_run", None),
        ("leaderboard_history", "single_run", None),
        ("judgments", "multi_run", 3),
    ]
    months = ["2024-01", "2024-02", "2024-03", "2024-04"]
    plan = plan_backfill(assets, months)
    assert plan == [
        *(PlannedRun(("raw_logs", "conversations"), (m,)) for m in months),
        PlannedRun(("topic_labels",), ("2024-01", "2024-02", "2024-03")),
        PlannedRun(("topic_labels",), ("2024-04",)),
        PlannedRun(("arena_leaderboard", "leaderboard_history"), tuple(months)),
        PlannedRun(("judgments",), ("2024-01", "2024-02", "2024-03")),
        PlannedRun(("judgments",), ("2024-04",)),
    ]
    assert plan[0].partition_tags == {"dagster/partition": "2024-01"}
    assert plan[6].partition_tags == {
        "dagster/asset_partition_range_start": "2024-01",
        "dagster/asset_partition_range_end": "2024-04",
    }


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "arena_assets.cli", "backfill", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_plan_places_an_independent_stage_by_its_dependencies():
    assets = [
        ("side_a", "single_run"),
        ("raw", None),
        ("clean", None),
        ("side_b", "single_run"),
        ("cells", None),
        ("board", "single_run"),
    ]
    deps = {"clean": {"raw"}, "side_b": {"side_a"}, "cells": {"clean"}, "board": {"cells"}}
    plan = plan_backfill(stage_order(assets, deps), ["2024-01", "2024-02"])
    assert [(r.assets, r.months) for r in plan] == [
        (("side_a", "side_b"), ("2024-01", "2024-02")),
        (("raw", "clean", "cells"), ("2024-01",)),
        (("raw", "clean", "cells"), ("2024-02",)),
        (("board",), ("2024-01", "2024-02")),
    ]
    # without the dependencies: consecutive assets of one kind, as listed
    assert len(plan_backfill(assets, ["2024-01"])) == 5


def test_cli_plan_from_the_code_location(arena_env):
    proc = _cli("--from", "2024-01", "--to", "2024-02", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = [line for line in proc.stdout.splitlines() if line.startswith("run ")]
    # in order, as the policies say: the monthly steps a month a run, the LLM stages up to
    # 3 months a run, the single-run ones the range in one run; the Copilot Arena tables
    # depend on nothing else, so they are a stage of their own instead of splitting the
    # chat chain wherever the topological order lists them
    assert runs == [
        "run 1/9: completion_battles,copilot_leaderboard,copilot_user_boards for 2024-01..2024-02",
        "run 2/9: raw_logs,raw_rejects,conversations,battles,battle_cells for 2024-01",
        "run 3/9: raw_logs,raw_rejects,conversations,battles,battle_cells for 2024-02",
        "run 4/9: prompt_embeddings,topic_labels,judge_human_agreement,topic_clusters for 2024-01..2024-02",
        # the P2L model warm-starts from the previous month's: a month a run, in order
        "run 5/9: p2l_model for 2024-01",
        "run 6/9: p2l_model for 2024-02",
        "run 7/9: arena_leaderboard,bench_prompts,p2l_boards,router,router_eval,leaderboard_history,"
        "router_training_data for 2024-01..2024-02",
        "run 8/9: model_answers,over_refusal,judgments for 2024-01..2024-02",
        "run 9/9: bench_leaderboard for 2024-01..2024-02",
    ]
    # each run is the every-asset job restricted to its ops, so it carries the job's name
    assert (
        "dagster job execute -m arena_assets.definitions -j monthly_refresh -o "
        "raw_logs,conversations,battles,battle_cells --tags" in proc.stdout
    )
    assert proc.stdout.count("overwrites 0 existing partition(s)") == 9  # a fresh lake


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--from", "2024-03", "--to", "2024-01"), "--to 2024-01 is before --from 2024-03"),
        (("--from", "2024-13", "--to", "2024-12"), "--from 2024-13: there is no month 13"),
        (("--from", "2024-1", "--to", "2024-02"), "--from '2024-1' is not a month"),
        (
            ("--from", "2024-01", "--to", "2024-05"),
            "2024-04, 2024-05 outside the partition range 2024-01..2024-03",
        ),
        (
            ("--from", "2024-01", "--to", "2024-01", "--select", "arena_leaderboard,nope"),
            "unknown assets: nope",
        ),
        (
            ("--from", "2024-01", "--to", "2024-02", "--in-process-workers", "--select", "battles"),
            "error: --parallel and --in-process-workers backfill every asset but the release",
        ),
    ],
)
def test_cli_refuses_bad_months_in_one_line(arena_env, monkeypatch, args, says):
    monkeypatch.setenv("ARENA_PARTITIONS_END", "2024-03")
    proc = _cli(*args, "--dry-run")
    assert proc.returncode != 0 and proc.stdout == ""
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith(f"arena-assets backfill: {says}"), line


def test_dry_run_names_the_partitions_it_would_overwrite(arena_env):
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    lake.write("battle_cells", "2024-02", pl.DataFrame({"n": [1]}))
    proc = _cli("--from", "2024-01", "--to", "2024-02", "--select", "battle_cells", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "run 1/2: battle_cells for 2024-01"
    assert "overwrites 0 existing partition(s)" in lines[2]
    assert lines[5] == "  overwrites 1 existing partition(s): battle_cells 2024-02"


def test_dry_run_names_the_published_months_it_would_overwrite(arena_env):
    """The site and the release write outside the lake: their existing months are found
    under ARENA_SITE_ROOT and ARENA_RELEASE_ROOT (the folders a run would rewrite)."""
    from pathlib import Path

    release, site = Path(arena_env["ARENA_RELEASE_ROOT"]), Path(arena_env["ARENA_SITE_ROOT"])
    (release / "arena-chat-2024-02" / "data").mkdir(parents=True)
    (release / "arena-sft-2024-02").mkdir()
    (release / "arena-chat-2024-03").mkdir()  # outside the range
    (site / "2024-01").mkdir(parents=True)
    (site / "2024-01" / "summary.json").write_text("{}")
    (site / "2024-02").mkdir()  # a build that never finished: no summary.json, no month
    proc = _cli(
        "--from",
        "2024-01",
        "--to",
        "2024-02",
        "--select",
        "month_release,leaderboard_site",
        "--dry-run",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = "\n".join(line for line in proc.stdout.splitlines() if "overwrites" in line)
    assert (
        f"month_release 2024-02 ({arena_env['ARENA_RELEASE_ROOT'].rstrip('/')}/: "
        "arena-chat-2024-02/, arena-sft-2024-02/)" in said
    ), said
    assert (
        f"leaderboard_site 2024-01 ({arena_env['ARENA_SITE_ROOT'].rstrip('/')}/: 2024-01/)" in said
    ), said
    assert sum(int(line.split()[1]) for line in said.splitlines()) == 2, said


def test_single_run_backfill_records_each_months_own_metadata(arena_env):
    simulate_months(arena_env["ARENA_RAW_ROOT"], MONTHS, 250, seed=11)
    for month in MONTHS:
        assert materialize(month, "raw_logs,raw_rejects,conversations,battles,battle_cells").success
    from arena_assets.definitions import defs as load_defs

    defs = load_defs()
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(
            assets=list(defs.assets or []),
            resources=defs.resources,
            instance=instance,
            selection=dg.AssetSelection.assets("arena_leaderboard", "leaderboard_history"),
            tags={
                "dagster/asset_partition_range_start": MONTHS[0],
                "dagster/asset_partition_range_end": MONTHS[-1],
            },
        )
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
                    limit=1,
                ).records[0]
                assert record.asset_materialization.metadata["month"].value == month
        # the top of each board inline, ratings in whole points, every column described
        meta = {
            e.partition: e.metadata
            for e in result.asset_materializations_for_node("arena_leaderboard")
        }["2024-03"]
        top = meta["top: overall"].value
        assert top.records and all(isinstance(r.data["rating"], int) for r in top.records)
        assert all(c.description for c in top.schema.columns)
        board = lake.read("arena_leaderboard", "2024-03").filter(pl.col("board") == "overall")
        assert top.records[0].data["model"] == board.sort("rank", "model")["model"][0]
        described = {c.name: c.description for c in meta["dagster/column_schema"].schema.columns}
        assert "blank" in described["rank_change"].lower()

        # the release of one month: Chat, Battle and SFT (no bench_prompts in the lake yet)
        released = dg.materialize(
            assets=list(defs.assets or []),
            resources=defs.resources,
            instance=instance,
            selection=dg.AssetSelection.assets("month_release"),
            partition_key="2024-02",
        )
        assert released.success
        (event,) = released.asset_materializations_for_node("month_release")
        assert event.partition == "2024-02"
        assert "not released" in event.metadata["bench"].value
        rows = event.metadata["rows"].value
        assert set(rows) == {"chat", "battle", "sft"}
        assert rows["chat"] == lake.read("conversations", "2024-02").height
        chat = pl.read_parquet(
            f"{arena_env['ARENA_RELEASE_ROOT']}/arena-chat-2024-02/data/*.parquet"
        )
        assert chat.height == rows["chat"]
        # user hashes re-keyed: none of the lake's hashes leaves in the release
        lake_hashes = set(lake.read("conversations", "2024-02")["user_hash"].drop_nulls())
        hash_col = next(c for c in chat.columns if "hash" in c or c == "user_id")
        assert not lake_hashes & set(chat[hash_col].drop_nulls().cast(pl.String))
