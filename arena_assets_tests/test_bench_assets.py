"""The bench assets through Dagster on the in-process simulated arena: two months in one
range run (each month recording its own metadata), each month's bench decontaminated
against the earlier one, the two-pass labelling and single-answer grades switched on,
judgments with two games per prompt, the leaderboard with its table and plot, and cached
reruns (counted at the endpoint)."""

from __future__ import annotations

import dagster as dg
import polars as pl
import pytest

from arena_assets.simulator import simulate_months
from arena_assets.simulator.shared import simulated_endpoint
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTHS = ("2024-01", "2024-02")
UPSTREAM = (
    "raw_logs,raw_rejects,conversations,topic_labels,topic_clusters,battles,arena_leaderboard"
)
BENCH = "bench_prompts,model_answers,judgments,bench_leaderboard"


@pytest.mark.slow
def test_bench_assets_two_months_and_cached_reruns(arena_env, monkeypatch):
    env = arena_env
    # two passes: the cheap labeler labels every prompt, the strong one the survivors
    monkeypatch.setenv("ARENA_LABELER_MODEL", "sim-labeler-small")
    monkeypatch.setenv("ARENA_BENCH_RELABEL_MODEL", "sim-labeler-large")
    monkeypatch.setenv("ARENA_BENCH_SINGLE_GRADES", "true")
    simulate_months(env["ARENA_RAW_ROOT"], list(MONTHS), 600, seed=int(env["ARENA_SIM_WORLD_SEED"]))
    for month in MONTHS:
        assert materialize(month, UPSTREAM).success
    ep = simulated_endpoint(
        f"{env['ARENA_RAW_ROOT']}/_truth", int(env["ARENA_SIM_WORLD_SEED"]), 0.0
    )
    strong_before = ep.call_count(model="sim-labeler-large")
    from arena_assets.definitions import defs as load_defs

    defs = load_defs()
    with dg.DagsterInstance.ephemeral() as instance:
        # one run over the range, as a single-run backfill launches it
        result = dg.materialize(
            assets=list(defs.assets or []),
            resources=defs.resources,
            instance=instance,
            selection=dg.AssetSelection.assets(*BENCH.split(",")),
            tags={
                "dagster/asset_partition_range_start": MONTHS[0],
                "dagster/asset_partition_range_end": MONTHS[-1],
            },
        )
        assert result.success
        lake = Lake(env["ARENA_LAKE_ROOT"])
        meta = {}
        for asset in BENCH.split(","):
            by_month = {
                e.partition: e.metadata for e in result.asset_materializations_for_node(asset)
            }
            assert sorted(by_month) == list(MONTHS), asset
            for month, m in by_month.items():  # each month its own figures, not the last one's
                assert m["month"].value == month, asset
                assert m["path"].value.endswith(f"{month}.parquet"), asset
                assert m["dagster/row_count"].value == lake.read(asset, month).height, asset
                record = instance.fetch_materializations(
                    dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[month]),
                    limit=1,
                ).records[0]
                assert record.asset_materialization.metadata["month"].value == month
            meta[asset] = {
                month: {k: v.value for k, v in m.items()} for month, m in by_month.items()
            }
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {
        "judge_parse_failure_rate": True,
        "no_duplicate_games": True,
        "win_rates_in_range": True,
        "answers_within_token_cap": True,
        "judgments_within_token_cap": True,
    }
    first, second = (lake.read("bench_prompts", m) for m in MONTHS)
    assert first.height > 0 and second.height > 0
    assert not set(first["text_hash"]) & set(second["text_hash"])  # decontaminated
    # the strong labeler saw only the survivors of the cheap labels, and said so
    strong_calls = ep.call_count(model="sim-labeler-large") - strong_before
    relabel = [meta["bench_prompts"][m]["relabel_calls"] for m in MONTHS]
    assert [r["model"] for r in relabel] == ["sim-labeler-large"] * 2
    assert 0 < strong_calls == sum(r["calls"] for r in relabel)
    for month in MONTHS:
        bench = lake.read("bench_prompts", month)
        assert (
            relabel[MONTHS.index(month)]["items"]
            < meta["bench_prompts"][month]["text_stats"]["prompts_in"]
        )
        judged = lake.read("judgments", month)
        # one candidate besides the baseline, two games per prompt, no duplicate game
        assert judged.height == bench.height * 2
        assert judged.unique(["question_id", "model", "judge", "game"]).height == judged.height
        # single-answer grades: one per ok answer, in the judgments' metadata and on the board
        grades = lake.read("answer_grades", month)
        answers = lake.read("model_answers", month).filter(pl.col("status") == "ok")
        assert grades.height == answers.height and grades["score"].is_between(1, 10).all()
        assert "| judge | model | score |" in meta["judgments"][month]["single_grades"]
        board = lake.read("bench_leaderboard", month)
        assert set(board["model"]) == {"kelp-34b-pro", "atlas-8b-preview"}
        assert (
            board["win_rate"].is_between(0, 1).all()
            and board["single_score"].is_between(1, 10).all()
        )
        m = meta["bench_leaderboard"][month]
        assert (
            m["board"].startswith("| category | model |") and "data:image/png;base64," in m["plot"]
        )
        assert "single_score" in m["board"] and "sc_win_rate" in m["board"]
        # the default protocol: v0.1's rules in the project's own wording (no checkout)
        assert m["protocol"] == "arena-assets-pairwise" and m["interval_level"] == 0.95
        assert (
            board["sc_win_rate"].is_between(0, 1).all()
            and (board["category"] == "arena-hard-v0.1").all()
        )
        assert set(judged["protocol"]) == {"arena-assets-pairwise"}  # each game names its protocol
        described = meta["judgments"][month]["judge_prompts"]
        assert set(judged["prompt_sha256"]) == {described["sha256"]}
        assert (
            described["protocol"] == "arena-assets-pairwise"
            and "own wording" in described["source"]
        )
        assert m["models_without_win_rate"] == 0 and m["without_win_rate"] == {}
        style = m["style_control"]["arena-hard-v0.1"]
        assert (
            style["models_left_out"] == {}
            and style["rows_without_features"] == 0
            and style["coefficients"]
        )
        assert board.filter(pl.col("model") != pl.col("baseline"))["sc_rows"].min() > 0
        assert meta["judgments"][month]["max_tokens"] == {"sim-judge": 4096}
        assert set(meta["judgments"][month]["cap_hit_share"].values()) == {0.0}
        assert set(meta["model_answers"][month]["max_tokens"].values()) == {4096}
    # the stronger candidate wins more than half its games against the baseline
    board = lake.read("bench_leaderboard", MONTHS[1])
    assert board.filter(pl.col("model") == "kelp-34b-pro")["win_rate"][0] > 0.5
    # rerunning the first month after the second: every answer, verdict and grade from the cache
    before = ep.call_count()
    assert materialize(MONTHS[0], "bench_prompts,model_answers,judgments").success
    assert ep.call_count() == before
