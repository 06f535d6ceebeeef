"""The evaluators' assets through Dagster on a small simulated month: every configured
judge answers, tables and metadata per month, the published yardsticks beside ours, the
over-refusal board and plot, and a rerun that makes no call (counted at the endpoint)."""

from __future__ import annotations

import json
import re

import dagster as dg
import polars as pl

from arena_assets.simulator import simulate_months
from arena_assets.simulator.shared import simulated_endpoint
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTH = "2024-01"
UPSTREAM = "raw_logs,raw_rejects,conversations,topic_labels,battles,battle_cells,arena_leaderboard"
EVALUATORS = "judge_human_agreement,over_refusal"


def test_evaluator_assets_and_cached_rerun(arena_env, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ARENA_AGREEMENT_JUDGES", "sim-judge,reward:sim-reward,longer,markdown")
    for task, price_in, price_out in (
        ("JUDGE", "2.5", "10"),
        ("REWARD", "0.5", ""),
        ("LABELER", "0.15", "0.6"),
    ):
        monkeypatch.setenv(f"ARENA_{task}_PRICE_INPUT_PER_1M", price_in)
        monkeypatch.setenv(f"ARENA_{task}_PRICE_OUTPUT_PER_1M", price_out)
    simulate_months(
        arena_env["ARENA_RAW_ROOT"], [MONTH], 400, seed=int(arena_env["ARENA_SIM_WORLD_SEED"])
    )
    assert materialize(MONTH, UPSTREAM).success
    ep = simulated_endpoint(
        f"{arena_env['ARENA_RAW_ROOT']}/_truth", int(arena_env["ARENA_SIM_WORLD_SEED"]), 0.0
    )
    # over the budget: refused with one line naming the figure and the setting, no call made
    monkeypatch.setenv("ARENA_LLM_BUDGET_USD", "0.0001")
    before = ep.call_count()
    for asset in EVALUATORS.split(","):
        refused = materialize(MONTH, asset, raise_on_error=False)
        assert not refused.success and ep.call_count() == before
        (failure,) = [
            e for e in refused.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE
        ]
        line = failure.step_failure_data.user_failure_data.description
        assert (
            "\n" not in line
            and f"{asset} {MONTH}: estimated cost $" in line
            and "ARENA_LLM_BUDGET_USD=0.0001" in line
        )
    monkeypatch.setenv("ARENA_LLM_BUDGET_USD", "")
    result = materialize(MONTH, EVALUATORS)
    assert result.success
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {
        "every_judge_answered": True,
        "metrics_in_range": True,
        "rates_in_range": True,
    }
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    table = lake.read("judge_human_agreement", MONTH)
    overall = table.filter(pl.col("slice") == "overall")
    assert overall["judge"].to_list() == ["sim-judge", "reward:sim-reward", "longer", "markdown"]
    assert (overall["judged"] == overall["battles"]).all() and overall["battles"][0] == 120
    verdicts = lake.read("judge_human_verdicts", MONTH)
    assert (
        verdicts.height == 4 * 120
        and verdicts.unique(["battle_id", "judge"]).height == verdicts.height
    )
    assert "answer_a" not in verdicts.columns  # no text in the verdict table
    llm = verdicts.filter(pl.col("judge") == "sim-judge")
    assert llm["game1"].is_not_null().all() and llm["game2"].is_not_null().all()
    meta = result.asset_materializations_for_node("judge_human_agreement")[0].metadata
    assert "PPE" in meta["yardsticks"].value and "0.686" in meta["yardsticks"].value
    assert "| hard prompts |" in meta["yardsticks"].value  # PPE's slice, beside our `hard`
    assert "project's rule" in meta["tie_rule"].value
    assert sum(meta["sample_strata"].value.values()) == 120
    board = lake.read("over_refusal", MONTH)
    assert board["rank"].to_list() == list(range(1, board.height + 1))
    rates = lake.read("over_refusal_rates", MONTH)
    assert set(rates["prompt_class"]) <= {"benign_sensitive", "toxic", "other"}
    ometa = result.asset_materializations_for_node("over_refusal")[0].metadata
    assert ometa["plot"].value.startswith("![over- vs under-refusal](data:image/png;base64,")
    assert sum(ometa["prompt_classes"].value.values()) == lake.read("conversations", MONTH).height
    # what the rates are and how a prompt counts as toxic, said in the metadata
    assert "project's own quantity" in ometa["quantity"].value
    assert "OR the risk labeller" in ometa["toxic_rule"].value
    toxic = ometa["prompt_classes"].value.get("toxic", 0)
    assert toxic > 0 and sum(ometa["toxic_sources"].value.values()) == toxic
    # each run's plan (its first log line, its metadata) against what the run counted: the
    # judge's two games and the reward model's two sides per battle, one risk call per prompt
    judged = dict(meta["calls"].value.items())
    assert set(judged) == {"sim-judge", "reward:sim-reward"}
    _plan_is_the_run(meta["llm_plan"].value, list(judged.values()))
    assert (
        judged["reward:sim-reward"]["prompt_tokens"] > 0 and judged["reward:sim-reward"]["cost"] > 0
    )
    _plan_is_the_run(ometa["llm_plan"].value, [ometa["risk_calls"].value])
    # a rerun reads every answer from the cache, and its plan said so
    before = ep.call_count()
    again = materialize(MONTH, EVALUATORS)
    assert again.success and ep.call_count() == before
    assert lake.read("judge_human_agreement", MONTH).equals(table)
    for asset in EVALUATORS.split(","):
        plan = again.asset_materializations_for_node(asset)[0].metadata["llm_plan"].value
        assert plan["calls"] == 0 and plan["cost"] == 0 and plan["batches"]

    # a first month is planned with every answer at max_tokens, over its real bill: a budget
    # between the two lets it run (not refused on the bound); one under the bill stops it
    # mid-run, never past the budget, its answers cached (an empty cache: a first run again)
    monkeypatch.setenv("ARENA_LLM_CACHE_ROOT", str(tmp_path / "cache2"))
    figures = {}
    for asset, reports in (
        ("over_refusal", [ometa["risk_calls"].value]),
        ("judge_human_agreement", judged.values()),
    ):
        plan = result.asset_materializations_for_node(asset)[0].metadata["llm_plan"].value
        figures[asset] = (
            plan["cost"],
            sum(b["input_cost"] for b in plan["batches"]),
            sum(r["cost"] for r in reports),
        )
    planned, least, bill = figures["over_refusal"]
    assert least < bill < planned
    monkeypatch.setenv("ARENA_LLM_BUDGET_USD", repr((bill + planned) / 2))
    assert materialize(MONTH, "over_refusal").success
    planned, least, bill = figures["judge_human_agreement"]
    assert least < bill < planned
    budget = (least + bill) / 2
    monkeypatch.setenv("ARENA_LLM_BUDGET_USD", repr(budget))
    before = ep.call_count()
    stopped = materialize(MONTH, "judge_human_agreement", raise_on_error=False)
    made = ep.call_count() - before
    assert not stopped.success and 0 < made < sum(r["calls"] for r in judged.values())
    (failure,) = [e for e in stopped.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    line = failure.step_failure_data.user_failure_data.description
    spent = float(re.search(r"calls and \$([0-9.]+) spent", line).group(1))
    # every call the endpoint received counted, those in flight at the stop included
    assert (
        "\n" not in line and f"judge_human_agreement {MONTH}: stopped after {made:,} calls" in line
    )
    assert 0 < spent <= budget and f"ARENA_LLM_BUDGET_USD={budget:g}" in line


def _plan_is_the_run(plan: dict, reports: list[dict]) -> None:
    """Calls and input tokens as counted by the simulated arena (it bills as the plan
    counts); output at most the max_tokens bound a first month is planned at."""
    assert plan["exact"] and plan["calls"] == sum(r["calls"] for r in reports) > 0
    assert plan["prompt_tokens"] == sum(r["prompt_tokens"] for r in reports) > 0
    assert plan["completion_tokens"] >= sum(r["completion_tokens"] for r in reports)
    assert plan["cost"] >= sum(r["cost"] for r in reports) > 0


def test_or_bench_import_through_the_cli(tmp_path) -> None:
    """Prompt sets in OR-Bench's published layout (prompt, category), answered by a
    planted over-refuser and by a model that never refuses, through the CLI, judged by
    OR-Bench's 3-class check (its prompt read from an OR-Bench-like checkout; the simulated
    arena answers that request's shape) and by the project's binary judge."""
    import csv

    from arena_assets.cli import main
    from arena_assets.simulator import read_prompt_truth
    from arena_assets.simulator.shared import simulated_endpoint_url
    from arena_assets_tests.test_orbench_check import STAND_IN, orbench_checkout

    raw = tmp_path / "raw"
    simulate_months(raw, [MONTH], 600, seed=7)
    truth = read_prompt_truth(raw, MONTH).filter(~pl.col("popular")).unique("text")
    sets = {
        "or-bench-hard-1k": truth.filter(
            pl.col("would_refuse") & pl.col("toxic_category").is_null()
        ),
        "or-bench-toxic": truth.filter(pl.col("toxic_category").is_not_null()),
    }
    for name, rows in sets.items():
        with open(tmp_path / f"{name}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["prompt", "category"])
            w.writerows([t, "harmful"] for t in rows["text"])
    models = pl.read_parquet(raw / "_truth" / "models.parquet")
    cautious = models.filter(pl.col("cautious"))["name"][0]
    candid = models.filter(~pl.col("cautious"))["name"][0]
    cands = json.dumps([{"name": m, "base_url": "simulated"} for m in (cautious, candid)])
    out = tmp_path / "answers.parquet"
    code = main(
        [
            "or-bench",
            str(tmp_path / "or-bench-hard-1k.csv"),
            str(tmp_path / "or-bench-toxic.csv"),
            "--candidates",
            cands,
            "--judge-base-url",
            "simulated",
            "--sim-base-url",
            simulated_endpoint_url(str(raw), 7),  # the arena of these logs, handed in by URL
            "--out",
            str(out),
            "--cache",
            str(tmp_path / "cache"),
            "--orbench-dir",
            str(orbench_checkout(tmp_path, tmp_path / "ran.txt")),
        ]
    )
    assert code == 0 and not (tmp_path / "ran.txt").exists()
    from arena_assets.evaluators.orbench import orbench_rates

    answers = pl.read_parquet(out)
    assert set(answers["orbench_status"]) == {"ok"} and set(answers["keyword_rule"]) == {"open"}
    table = orbench_rates(answers)
    for col in ("rate", "orbench_rate"):  # the project's judge, and OR-Bench's own
        rates = {(m, s): r for m, s, r in table.select("model", "set", col).iter_rows()}
        assert rates[cautious, "or-bench-hard-1k"] > 0.6, col
        assert rates[candid, "or-bench-hard-1k"] < 0.1, col
    assert STAND_IN.startswith("\n")  # the checkout's prompt, as the anchor's file lays it out
    assert (
        main(
            [
                "or-bench",
                str(tmp_path / "answers.parquet"),
                "--candidates",
                cands,
                "--judge-base-url",
                "simulated",
                "--out",
                str(tmp_path / "x.parquet"),
            ]
        )
        == 2
    )  # not an OR-Bench file: one line


def test_battle_truth_belongs_to_its_world(tmp_path) -> None:
    """The endpoint judges arena battles on the truth of its own world only: another
    seed's truth is not read (its strengths would come from the wrong models)."""
    from arena_assets.simulator import World
    from arena_assets.simulator.battle_judge import BattleTruth, BattleTruthCache

    simulate_months(tmp_path, [MONTH], 200, seed=3)
    assert BattleTruth.from_root(World.build(seed=3), tmp_path) is not None
    assert BattleTruth.from_root(World.build(seed=7), tmp_path) is None
    cache = BattleTruthCache(World.build(seed=3), None)
    assert cache.get() is None
    cache.use(f"file://{tmp_path}")  # any fsspec URL (the S3 demo's bucket)
    votes = pl.read_parquet(tmp_path / "_truth" / "battle_answers" / f"{MONTH}.parquet")
    assert cache.get() is not None and votes.height > 0
