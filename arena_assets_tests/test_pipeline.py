"""The code location end to end on a small simulated arena: storage contract, reruns,
empty months, concurrent months, the DuckDB catalog, and scores against the hidden truth."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from arena_assets.clean.schema import CONVERSATIONS_SCHEMA
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA, RAW_REJECTS_SCHEMA
from arena_assets.simulator import WorldConfig, load_truth, simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

PROJECT = Path(__file__).resolve().parents[1]
MONTH = "2024-02"
STAGE_1_2 = "raw_logs,raw_rejects,conversations"


def _digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def simulated(arena_env):
    """One month of 300 sessions with more malformed lines and PII than usual."""
    config = WorldConfig(malformed_rate=0.05, pii_rate=0.25)
    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 300, seed=11, config=config)
    return arena_env


def test_month_materializes_with_checks_and_catalog(simulated):
    result = materialize(MONTH, STAGE_1_2)
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert {c.check_name: c.passed for c in checks} == {
        "lines_conserved": True,
        "no_partial_files": True,
        "snapshots_conserved": True,
        "no_raw_pii": True,
        "required_columns_present": True,
        "month_over_month_drift": True,
    }, [(c.check_name, c.metadata) for c in checks]
    lake = Lake(simulated["ARENA_LAKE_ROOT"])
    raw = lake.read("raw_logs", MONTH)
    rejects = lake.read("raw_rejects", MONTH)
    convs = lake.read("conversations", MONTH)
    assert raw.schema == pl.Schema(RAW_LOGS_SCHEMA)
    assert rejects.schema == pl.Schema(RAW_REJECTS_SCHEMA)
    assert convs.schema == pl.Schema(CONVERSATIONS_SCHEMA)
    assert convs["conv_id"].is_unique().all()
    with duckdb.connect(simulated["ARENA_CATALOG"], read_only=True) as con:
        counted = dict(
            con.execute("select month, count(*) from conversations group by 1").fetchall()
        )
    assert counted == {MONTH: convs.height}


def test_rematerializing_a_month_is_idempotent(simulated):
    assert materialize(MONTH, STAGE_1_2).success
    lake = Lake(simulated["ARENA_LAKE_ROOT"])
    first = {a: _digest(lake.url(a, MONTH)) for a in ("raw_logs", "raw_rejects", "conversations")}
    assert materialize(MONTH, STAGE_1_2).success
    second = {a: _digest(lake.url(a, MONTH)) for a in ("raw_logs", "raw_rejects", "conversations")}
    assert first == second
    # one file per partition: a rerun replaced it, nothing appended, no temporaries left
    assert sorted(os.listdir(Path(simulated["ARENA_LAKE_ROOT"]) / "conversations")) in (
        [f"{MONTH}.parquet"],
        [f"{MONTH}.parquet", "_tmp"],
    )
    assert not list((Path(simulated["ARENA_LAKE_ROOT"]) / "conversations" / "_tmp").glob("*"))


def test_month_without_files_gives_empty_tables(arena_env):
    # the month's folder exists but holds no file (a month folder that does not exist at all
    # fails the run instead: test_empty_month.py)
    (Path(arena_env["ARENA_RAW_ROOT"]) / "2024-05").mkdir(parents=True)
    result = materialize("2024-05")  # every asset, leaderboards included
    assert result.success
    assert {c.check_name: c.passed for c in result.get_asset_check_evaluations()} == {
        "lines_conserved": True,
        "no_partial_files": True,
        "snapshots_conserved": True,
        "no_raw_pii": True,
        "required_columns_present": True,
        "votes_conserved": True,
        "removals_accounted": True,
        "intervals_contain_ratings": True,
        "rating_move_alarm": True,
        "interval_width_sane": True,
        "schema_matches": True,
        "keys_unique_and_present": True,
        "month_over_month_drift": True,
        "battles_conserved": True,
        "values_in_range": True,
        "parse_failure_rate_low": True,
        "labels_in_range": True,
        "labels_answered": True,
        "judge_parse_failure_rate": True,
        "no_duplicate_games": True,
        "win_rates_in_range": True,
        "answers_within_token_cap": True,
        "judgments_within_token_cap": True,
        "votes_accounted": True,
        "pages_match_boards": True,
        "every_judge_answered": True,
        "metrics_in_range": True,
        "rates_in_range": True,
        "records_conserved": True,
        "no_code_without_consent": True,
        # routing stage: nothing to fit, empty tables
        "chosen_ridge_not_worse_than_marginal": True,
        "p2l_no_worse_than_marginal": True,
        "within_budget": True,
        "no_prompt_in_two_splits": True,
    }
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    for asset, schema in (
        ("raw_logs", RAW_LOGS_SCHEMA),
        ("raw_rejects", RAW_REJECTS_SCHEMA),
        ("conversations", CONVERSATIONS_SCHEMA),
    ):
        frame = lake.read(asset, "2024-05")
        assert frame.height == 0 and frame.schema == pl.Schema(schema), asset
    for asset in (
        "battles",
        "topic_labels",
        "topic_clusters",
        "arena_leaderboard",
        "leaderboard_history",
        "prompt_embeddings",
        "p2l_model",
        "p2l_boards",
        "router",
        "router_eval",
        "router_training_data",
    ):
        assert lake.read(asset, "2024-05").height == 0, asset


def test_small_month_publishes_what_it_can(arena_env, monkeypatch):
    # 40 sessions: a handful of votes, far under min_battles for every model
    monkeypatch.setenv("ARENA_MIN_BATTLES", "300")
    simulate_months(arena_env["ARENA_RAW_ROOT"], ["2024-04"], 40, seed=2)
    result = materialize("2024-04")
    assert result.success
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    assert lake.read("battles", "2024-04").height > 0
    assert lake.read("arena_leaderboard", "2024-04").height == 0


def test_two_months_materialize_concurrently(arena_env, tmp_path):
    months = ["2024-01", "2024-02"]
    simulate_months(arena_env["ARENA_RAW_ROOT"], months, 150, seed=5)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((PROJECT / "dagster.yaml").read_text())
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    dagster = str(Path(sys.executable).with_name("dagster"))
    # a deployed instance exists before its runs: create its SQLite storage once, so the
    # two runs below do not race on creating tables
    subprocess.run(
        [dagster, "instance", "migrate"], env=env, cwd=tmp_path, check=True, capture_output=True
    )
    procs = [
        subprocess.Popen(
            [
                dagster,
                "asset",
                "materialize",
                "-m",
                "arena_assets.definitions",
                "--select",
                STAGE_1_2,
                "--partition",
                month,
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for month in months
    ]
    outputs = [p.communicate(timeout=400)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(o[-3000:] for o in outputs)
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    assert lake.months("conversations") == months
    with duckdb.connect(arena_env["ARENA_CATALOG"], read_only=True) as con:
        assert [
            r[0]
            for r in con.execute("select distinct month from conversations order by 1").fetchall()
        ] == months


def test_every_planted_malformed_line_is_rejected_with_its_reason(simulated):
    assert materialize(MONTH, "raw_logs,raw_rejects").success
    truth = load_truth(simulated["ARENA_RAW_ROOT"])["malformed"].filter(pl.col("month") == MONTH)
    rejects = Lake(simulated["ARENA_LAKE_ROOT"]).read("raw_rejects", MONTH)
    joined = truth.join(rejects, on=["source_file", "line_no"], how="left")
    missing = joined.filter(pl.col("reason").is_null())
    assert missing.height == 0, missing.head()
    wrong = joined.filter(pl.col("reason") != pl.col("expected_reason"))
    assert wrong.height == 0, wrong.select("kind", "expected_reason", "reason", "detail")
    assert truth["expected_reason"].n_unique() >= 20
    # and nothing else was rejected: the simulator's valid lines are all accepted
    assert rejects.height == truth.height
    # the kept raw text never holds a user's address or id
    voters = load_truth(simulated["ARENA_RAW_ROOT"])["voters"]
    raw_text = "\n".join(rejects["raw"].to_list())
    assert '"<USER>"' in raw_text
    assert not [v for v in voters["ip"].to_list() + voters["user_id"].to_list() if v in raw_text]


def test_pii_and_language_scored_against_truth(simulated):
    assert materialize(MONTH, STAGE_1_2).success
    truth = load_truth(simulated["ARENA_RAW_ROOT"])
    convs = Lake(simulated["ARENA_LAKE_ROOT"]).read("conversations", MONTH)
    text = convs.select(
        "conv_id",
        pl.col("messages")
        .list.eval(pl.element().struct.field("content"))
        .list.join("\n")
        .alias("text"),
    )
    planted = (
        truth["pii"]
        .filter(pl.col("month") == MONTH)
        .rename({"text": "pii_text"})
        .join(text, on="conv_id")
    )
    assert planted.height >= 40 and planted["pii_type"].n_unique() == 5
    leaked = planted.filter(
        pl.struct("text", "pii_text").map_elements(
            lambda r: r["pii_text"] in r["text"], return_dtype=pl.Boolean
        )
    )
    assert 1 - leaked.height / planted.height >= 0.95
    langs = (
        truth["conversations"]
        .filter(pl.col("month") == MONTH)
        .select("conv_id", pl.col("language").alias("true_language"))
        .join(convs.select("conv_id", "language", "first_prompt"), on="conv_id")
    )
    long_enough = langs.filter(pl.col("first_prompt").str.len_chars() >= 20)
    agree = (long_enough["language"] == long_enough["true_language"]).mean()
    assert long_enough.height > 100 and agree >= 0.95


def test_moderation_endpoint_configured_by_environment(simulated, monkeypatch):
    from arena_assets.simulator import World
    from arena_assets.simulator.endpoint import ArenaEndpoint

    with ArenaEndpoint(World.build(seed=11)) as endpoint:
        monkeypatch.setenv("ARENA_MODERATION_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("ARENA_MODERATION_API_KEY", "sim")
        assert materialize(MONTH, STAGE_1_2).success
        calls = sum(v for k, v in endpoint.stats.items() if "moderations" in k)
    convs = Lake(simulated["ARENA_LAKE_ROOT"]).read("conversations", MONTH)
    assert calls > 0 and convs["moderation_flagged"].null_count() == 0
    truth = load_truth(simulated["ARENA_RAW_ROOT"])["conversations"].filter(
        pl.col("month") == MONTH
    )
    toxic = set(truth.filter("toxic")["conv_id"])
    flagged = set(convs.filter("moderation_flagged")["conv_id"])
    assert toxic and flagged == toxic
