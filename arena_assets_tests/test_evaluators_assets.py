"""The evaluators' assets through Dagster on a small simulated month: every configured
judge answers, tables and metadata per month, the published yardsticks beside ours, the
over-refusal board and plot, and a rerun that makes no call (counted at the endpoint)."""

from __future__ import annotations

import polars as pl

from arena_assets.llm.simulated import simulated_endpoint
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTH = "2024-01"
UPSTREAM = "raw_logs,raw_rejects,conversations,topic_labels,battles,battle_cells,arena_leaderboard"
EVALUATORS = "judge_human_agreement,over_refusal"


def test_evaluator_assets_and_cached_rerun(arena_env, monkeypatch) -> None:
    monkeypatch.setenv("ARENA_AGREEMENT_JUDGES", "sim-judge,reward:sim-reward,longer,markdown")
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 400, seed=int(arena_env["ARENA_SIM_WORLD_SEED"]))
    assert materialize(MONTH, UPSTREAM).success
    result = materialize(MONTH, EVALUATORS)
    assert result.success
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {"every_judge_answered": True, "metrics_in_range": True, "rates_in_range": True}
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    table = lake.read("judge_human_agreement", MONTH)
    overall = table.filter(pl.col("slice") == "overall")
    assert overall["judge"].to_list() == ["sim-judge", "reward:sim-reward", "longer", "markdown"]
    assert (overall["judged"] == overall["battles"]).all() and overall["battles"][0] == 120
    verdicts = lake.read("judge_human_verdicts", MONTH)
    assert verdicts.height == 4 * 120 and verdicts.unique(["battle_id", "judge"]).height == verdicts.height
    assert "answer_a" not in verdicts.columns  # no text in the verdict table
    llm = verdicts.filter(pl.col("judge") == "sim-judge")
    assert llm["game1"].is_not_null().all() and llm["game2"].is_not_null().all()
    meta = result.asset_materializations_for_node("judge_human_agreement")[0].metadata
    assert "PPE" in meta["yardsticks"].value and "0.686" in meta["yardsticks"].value
    assert sum(meta["sample_strata"].value.values()) == 120
    board = lake.read("over_refusal", MONTH)
    assert board["rank"].to_list() == list(range(1, board.height + 1))
    rates = lake.read("over_refusal_rates", MONTH)
    assert set(rates["prompt_class"]) <= {"benign_sensitive", "toxic", "other"}
    ometa = result.asset_materializations_for_node("over_refusal")[0].metadata
    assert ometa["plot"].value.startswith("![over- vs under-refusal](data:image/png;base64,")
    assert sum(ometa["prompt_classes"].value.values()) == lake.read("conversations", MONTH).height
    # a rerun reads every answer from the cache
    ep = simulated_endpoint(f"{arena_env['ARENA_RAW_ROOT']}/_truth", int(arena_env["ARENA_SIM_WORLD_SEED"]), 0.0)
    before = ep.call_count()
    again = materialize(MONTH, EVALUATORS)
    assert again.success and ep.call_count() == before
    assert lake.read("judge_human_agreement", MONTH).equals(table)
