"""The battles asset in a Dagster run writes each vote's weight and its reason, reads the
fresh-vote weight from its setting, and shows the population rules in its metadata."""

from __future__ import annotations

import polars as pl

from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTHS = ["2024-01", "2024-02"]
STEPS = "raw_logs,raw_rejects,conversations,battles"


def test_votes_of_accounts_without_history_weigh_the_setting(arena_env, monkeypatch):
    monkeypatch.setenv("ARENA_FRESH_VOTE_WEIGHT", "0.4")  # not the default 0.25
    simulate_months(arena_env["ARENA_RAW_ROOT"], MONTHS, 900, seed=4)
    assert materialize(MONTHS[0], STEPS).success
    result = materialize(MONTHS[1], STEPS)
    assert result.success
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    january = lake.read("battles", MONTHS[0])
    february = lake.read("battles", MONTHS[1])
    # no earlier month: nobody has history, every vote weighs 1
    assert (january["weight"] == 1.0).all() and january["weight_reason"].null_count() == len(
        january
    )
    seen = set(january["voter_hash"].to_list())
    tested = february.filter(pl.col("keep") & pl.col("anony"))
    newcomer = ~pl.col("voter_hash").is_in(pl.Series(list(seen)).implode())
    fresh, aged = tested.filter(newcomer), tested.filter(~newcomer)
    assert fresh.height > 0 and aged.height > 0
    assert fresh["weight_reason"].str.starts_with("no_history").all()
    assert (fresh["weight"] <= 0.4 + 1e-12).all()
    assert (fresh.filter(pl.col("weight_reason") == "no_history")["weight"] == 0.4).all()
    assert (aged.filter(pl.col("weight_reason").is_null())["weight"] == 1.0).all()
    # a removed vote keeps weight 1: the boards never read it
    assert (february.filter(~pl.col("keep"))["weight"] == 1.0).all()
    meta = next(
        e.step_materialization_data.materialization.metadata
        for e in result.get_asset_materialization_events()
        if e.asset_key.path == ["battles"]
    )
    rules = meta["population_rules"].data
    assert rules["fresh_weight"] == 0.4
    assert rules["votes_no_history"] == fresh.height
    assert isinstance(rules["newcomer_excess"], list)
    assert rules["cohort_z_threshold"] > 3
