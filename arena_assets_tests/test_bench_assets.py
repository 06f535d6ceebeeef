"""The bench assets through Dagster on the in-process simulated arena: two months, each
month's bench decontaminated against the earlier one, judgments with two games per prompt,
the leaderboard with its table and plot, and cached reruns (counted at the endpoint)."""

from __future__ import annotations

import polars as pl
import pytest

from arena_assets.llm.simulated import simulated_endpoint
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTHS = ("2024-01", "2024-02")
UPSTREAM = "raw_logs,raw_rejects,conversations,topic_labels,topic_clusters,battles,arena_leaderboard"
BENCH = "bench_prompts,model_answers,judgments,bench_leaderboard"


def _meta(result, asset: str) -> dict:
    (event,) = [e for e in result.get_asset_materialization_events()
                if e.materialization.asset_key.to_user_string() == asset]
    return {k: v.value for k, v in event.materialization.metadata.items()}


@pytest.mark.slow
def test_bench_assets_two_months_and_cached_reruns(arena_env):
    env = arena_env
    simulate_months(env["ARENA_RAW_ROOT"], list(MONTHS), 600, seed=int(env["ARENA_SIM_WORLD_SEED"]))
    results = {}
    for month in MONTHS:
        assert materialize(month, UPSTREAM).success
        results[month] = materialize(month, BENCH)
        assert results[month].success
    lake = Lake(env["ARENA_LAKE_ROOT"])
    first, second = (lake.read("bench_prompts", m) for m in MONTHS)
    assert first.height > 0 and second.height > 0
    assert not set(first["text_hash"]) & set(second["text_hash"])  # decontaminated
    for month in MONTHS:
        bench = lake.read("bench_prompts", month)
        judged = lake.read("judgments", month)
        # one candidate besides the baseline, two games per prompt, no duplicate game
        assert judged.height == bench.height * 2
        assert judged.unique(["question_id", "model", "judge", "game"]).height == judged.height
        board = lake.read("bench_leaderboard", month)
        assert set(board["model"]) == {"kelp-34b-pro", "atlas-8b-preview"}
        assert board["win_rate"].is_between(0, 1).all()
        meta = _meta(results[month], "bench_leaderboard")
        assert meta["board"].startswith("| model |") and "data:image/png;base64," in meta["plot"]
        checks = {c.check_name: c.passed for c in results[month].get_asset_check_evaluations()}
        assert checks == {"judge_parse_failure_rate": True, "no_duplicate_games": True,
                          "win_rates_in_range": True}
    # the stronger candidate wins more than half its games against the baseline
    board = lake.read("bench_leaderboard", MONTHS[1])
    assert board.filter(pl.col("model") == "kelp-34b-pro")["win_rate"][0] > 0.5
    # rerunning the first month after the second: every answer and verdict from the cache
    ep = simulated_endpoint(f"{env['ARENA_RAW_ROOT']}/_truth", int(env["ARENA_SIM_WORLD_SEED"]), 0.0)
    before = ep.call_count()
    assert materialize(MONTHS[0], "model_answers,judgments").success
    assert ep.call_count() == before
