"""A snapshot of the asset graph: keys, groups, dependencies with their partition mappings,
checks, backfill policies, pools and kinds. A change to the graph must change this file
too (dropping the battles self-dependency, a check or a pool makes it fail)."""

from __future__ import annotations

import dagster as dg

from arena_assets.definitions import defs as load_defs
from arena_assets.defs.partitions import monthly_partitions

SAME_MONTH = None  # a dependency with no mapping: the same monthly partition
FOLLOW = "follow upstream (any month)"  # arena_assets.defs.automation.follow_upstream

EXPECTED = {
    "raw_logs": {
        "group": "ingest",
        "deps": {},
        "checks": [("lines_conserved", True), ("no_partial_files", True)],
        "backfill": None,
        "pool": "ingest",
        "kinds": ["duckdb", "parquet", "polars"],
    },
    "raw_rejects": {
        "group": "ingest",
        "deps": {},
        "checks": [],
        "backfill": None,
        "pool": "ingest",
        "kinds": ["duckdb", "parquet"],
    },
    "conversations": {
        "group": "clean",
        "deps": {"raw_logs": SAME_MONTH},
        "checks": [
            ("month_over_month_drift", False),
            ("no_raw_pii", True),
            ("required_columns_present", True),
            ("snapshots_conserved", True),
        ],
        "backfill": None,
        "pool": "clean",
        "kinds": ["duckdb", "parquet", "polars"],
        "automation": FOLLOW,
    },
    "battles": {
        "group": "battles",
        # the anomaly test's crowd reads earlier months: backfills run months in order
        "deps": {"battles": "previous month", "conversations": SAME_MONTH, "raw_logs": SAME_MONTH},
        "checks": [
            ("keys_unique_and_present", True),
            ("month_over_month_drift", False),
            ("removals_accounted", True),
            ("schema_matches", True),
            ("values_in_range", True),
            ("votes_conserved", True),
        ],
        "backfill": None,
        "pool": None,
        "kinds": ["parquet", "polars"],
        "automation": FOLLOW,
    },
    "topic_labels": {
        "group": "topics",
        "deps": {"conversations": SAME_MONTH},
        "checks": [
            ("labels_answered", True),
            ("labels_in_range", True),
            ("parse_failure_rate_low", False),
        ],
        "backfill": "MULTI_RUN",
        "pool": "llm",
        "kinds": ["openai", "parquet", "polars"],
        "automation": FOLLOW,
    },
    "topic_clusters": {
        "group": "topics",
        "deps": {"conversations": SAME_MONTH, "topic_labels": SAME_MONTH},
        "checks": [],
        "backfill": "MULTI_RUN",
        "pool": "llm",
        "kinds": ["openai", "parquet", "scikitlearn"],
        "automation": FOLLOW,
    },
    "battle_cells": {
        "group": "leaderboards",
        "deps": {"battles": SAME_MONTH},
        "checks": [("battles_conserved", True)],
        "backfill": None,
        "pool": None,
        "kinds": ["parquet", "polars"],
        "automation": FOLLOW,
    },
    # a snapshot reads every month up to its own: rewriting an old month makes it stale
    "arena_leaderboard": {
        "group": "leaderboards",
        "deps": {
            "battle_cells": "every earlier month",
            "battles": "every earlier month",
            # category boards join the conversations' labels
            "topic_labels": "every earlier month",
        },
        "checks": [
            ("interval_width_sane", False),
            ("intervals_contain_ratings", False),
            ("keys_unique_and_present", True),
            ("rating_move_alarm", False),
            ("schema_matches", True),
            ("values_in_range", True),
        ],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["numpy", "parquet"],
        "automation": FOLLOW,
    },
    "leaderboard_history": {
        "group": "leaderboards",
        "deps": {"arena_leaderboard": "every earlier month"},
        "checks": [("keys_unique_and_present", True), ("schema_matches", True)],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["parquet"],
        "automation": FOLLOW,
    },
    # publishing is a decision: no automation
    "month_release": {
        "group": "release",
        "deps": {
            "battles": SAME_MONTH,
            "conversations": SAME_MONTH,
            # the bench is released with the month: it runs first
            "bench_prompts": SAME_MONTH,
            "judgments": SAME_MONTH,
            "model_answers": SAME_MONTH,
        },
        "checks": [],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["huggingface", "parquet"],
    },
    "bench_prompts": {
        "group": "bench",
        # decontamination reads every earlier month's bench: months run in order
        "deps": {
            "bench_prompts": "previous month",
            "topic_clusters": SAME_MONTH,
            "topic_labels": SAME_MONTH,
        },
        "checks": [],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["parquet", "polars"],
    },
    "model_answers": {
        "group": "bench",
        "deps": {"bench_prompts": SAME_MONTH},
        "checks": [("answers_within_token_cap", False)],
        "backfill": "MULTI_RUN",
        "pool": "llm",
        "kinds": ["openai", "parquet"],
    },
    "judgments": {
        "group": "bench",
        "deps": {"model_answers": SAME_MONTH},
        "checks": [
            ("judge_parse_failure_rate", False),
            ("judgments_within_token_cap", False),
            ("no_duplicate_games", True),
        ],
        "backfill": "MULTI_RUN",
        "pool": "llm",
        "kinds": ["openai", "parquet"],
    },
    "bench_leaderboard": {
        "group": "bench",
        "deps": {"arena_leaderboard": SAME_MONTH, "judgments": SAME_MONTH},
        "checks": [("win_rates_in_range", False)],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["numpy", "parquet"],
    },
    # routing: embeddings may call the embedding endpoint (pool llm); the P2L model replays
    # earlier months and warm-starts from the previous month's model (months run in order)
    "prompt_embeddings": {
        "group": "routing",
        "deps": {"conversations": SAME_MONTH},
        "checks": [("keys_unique_and_present", True), ("schema_matches", True)],
        "backfill": "MULTI_RUN",
        "pool": "llm",
        "kinds": ["numpy", "openai", "parquet"],
        "automation": FOLLOW,
    },
    "p2l_model": {
        "group": "routing",
        "deps": {
            "battles": "every earlier month",
            "prompt_embeddings": "every earlier month",
            "topic_labels": "every earlier month",
            "p2l_model": "previous month",
        },
        "checks": [
            ("chosen_ridge_not_worse_than_marginal", True),
            ("keys_unique_and_present", True),
            ("schema_matches", True),
        ],
        "backfill": None,
        "pool": None,
        "kinds": ["numpy", "parquet", "scipy"],
        "automation": FOLLOW,
    },
    "p2l_boards": {
        "group": "routing",
        "deps": {
            "p2l_model": SAME_MONTH,
            "prompt_embeddings": SAME_MONTH,
            "topic_labels": SAME_MONTH,
            "topic_clusters": SAME_MONTH,
        },
        "checks": [
            ("intervals_contain_ratings", False),
            ("keys_unique_and_present", True),
            ("schema_matches", True),
        ],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["numpy", "parquet"],
        "automation": FOLLOW,
    },
    "router": {
        "group": "routing",
        "deps": {
            "p2l_model": SAME_MONTH,
            "prompt_embeddings": SAME_MONTH,
            "topic_labels": SAME_MONTH,
            "battles": SAME_MONTH,
        },
        "checks": [
            ("keys_unique_and_present", True),
            ("schema_matches", True),
            ("within_budget", True),
        ],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["numpy", "parquet"],
        "automation": FOLLOW,
    },
    "router_eval": {
        "group": "routing",
        "deps": {
            "p2l_model": SAME_MONTH,
            "prompt_embeddings": SAME_MONTH,
            "topic_labels": SAME_MONTH,
            "battles": SAME_MONTH,
        },
        "checks": [("p2l_no_worse_than_marginal", False)],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["numpy", "parquet"],
        "automation": FOLLOW,
    },
    "router_training_data": {
        "group": "routing",
        "deps": {
            "battles": SAME_MONTH,
            "conversations": SAME_MONTH,
            "topic_labels": SAME_MONTH,
            "arena_leaderboard": SAME_MONTH,
        },
        "checks": [
            ("battles_conserved", True),
            ("keys_unique_and_present", True),
            ("no_prompt_in_two_splits", True),
            ("schema_matches", True),
        ],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["parquet", "polars"],
        "automation": FOLLOW,
    },
    # the public site: every board month so far (cumulative), no automation (it publishes)
    "leaderboard_site": {
        "group": "site",
        "deps": {
            "arena_leaderboard": "every earlier month",
            "battle_cells": "every earlier month",
            "battles": "every earlier month",
            "topic_labels": "every earlier month",
            "leaderboard_history": SAME_MONTH,
            "bench_leaderboard": SAME_MONTH,
            "copilot_leaderboard": SAME_MONTH,
        },
        "checks": [("pages_match_boards", False), ("votes_accounted", True)],
        "backfill": "SINGLE_RUN",
        "pool": "site_root",
        "kinds": ["html", "svg"],
    },
    # evaluators: LLM calls (judges, reward models, the risk labeller): no automation
    "judge_human_agreement": {
        "group": "evaluators",
        "deps": {"battles": SAME_MONTH, "conversations": SAME_MONTH, "topic_labels": SAME_MONTH},
        "checks": [("every_judge_answered", False), ("metrics_in_range", True)],
        "backfill": "MULTI_RUN",
        "pool": "llm",
        "kinds": ["openai", "parquet"],
    },
    "over_refusal": {
        "group": "evaluators",
        "deps": {
            "arena_leaderboard": SAME_MONTH,
            "battles": SAME_MONTH,
            "conversations": SAME_MONTH,
            "topic_labels": SAME_MONTH,
        },
        "checks": [("rates_in_range", True)],
        "backfill": "MULTI_RUN",
        "pool": "llm",
        "kinds": ["matplotlib", "openai", "parquet"],
    },
    # completions: Copilot Arena's files are read like raw logs; the board follows them
    "completion_battles": {
        "group": "completions",
        "deps": {},
        "checks": [("no_code_without_consent", True), ("records_conserved", True)],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["parquet", "polars"],
    },
    "copilot_leaderboard": {
        "group": "completions",
        "deps": {"completion_battles": "every earlier month"},
        "checks": [("intervals_contain_ratings", False)],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["numpy", "parquet"],
        "automation": FOLLOW,
    },
    # each user's own board (Copilot Arena's per-user scores): user data, not on the site
    "copilot_user_boards": {
        "group": "completions",
        "deps": {"completion_battles": "every earlier month"},
        "checks": [],
        "backfill": "SINGLE_RUN",
        "pool": None,
        "kinds": ["numpy", "parquet"],
        "automation": FOLLOW,
    },
}


def _mapping(mapping: dg.PartitionMapping | None) -> str | None:
    if mapping is None:
        return None
    if isinstance(mapping, dg.TimeWindowPartitionMapping) and (
        mapping.start_offset,
        mapping.end_offset,
    ) == (-1, -1):
        return "previous month"
    if (
        isinstance(mapping, dg.TimeWindowPartitionMapping)
        and mapping.end_offset == 0
        and mapping.start_offset <= -1200
        and mapping.allow_nonexistent_upstream_partitions
    ):
        return "every earlier month"
    return repr(mapping)


def _graph() -> dict[str, dict]:
    out = {}
    for assets in load_defs().assets:
        assert assets.partitions_def == monthly_partitions  # one partitions definition for all
        policy = assets.backfill_policy
        for key in assets.keys:
            spec = assets.specs_by_key[key]
            out[key.to_user_string()] = {
                "group": spec.group_name,
                "deps": {
                    d.asset_key.to_user_string(): _mapping(d.partition_mapping) for d in spec.deps
                },
                "checks": sorted(
                    (c.name, c.blocking) for c in assets.check_specs if c.asset_key == key
                ),
                "backfill": None if policy is None else policy.policy_type.value,
                "pool": assets.node_def.pool,
                "kinds": sorted(spec.kinds),
            }
            condition = spec.automation_condition
            if condition is not None:
                out[key.to_user_string()]["automation"] = condition.get_label()
    return out


def test_asset_graph_matches_the_snapshot() -> None:
    graph = _graph()
    assert sorted(graph) == sorted(EXPECTED)
    for key, expected in EXPECTED.items():
        assert graph[key] == expected, key
    # the automation sensor is on in a fresh deployment; the monthly schedule is not
    defs = load_defs()
    sensors = {s.name: s.default_status for s in defs.sensors}
    assert sensors["arena_automation"] == dg.DefaultSensorStatus.RUNNING
    assert sensors["raw_root_sensor"] == dg.DefaultSensorStatus.RUNNING
    assert sensors["freshness_sensor"] == dg.DefaultSensorStatus.RUNNING
    # freshness of the latest month: WARN checks outside the assets' own runs
    fresh = {
        (spec.asset_key.to_user_string(), spec.name): spec.blocking
        for checks_def in defs.asset_checks
        for spec in checks_def.check_specs
    }
    assert fresh == {
        ("conversations", "freshness_check"): False,
        ("arena_leaderboard", "freshness_check"): False,
    }
    schedules = {s.name: s.default_status for s in defs.schedules}
    assert schedules == {"monthly_refresh_schedule": dg.DefaultScheduleStatus.STOPPED}


def test_each_stage_folder_is_named_as_its_group() -> None:
    from pathlib import Path

    import arena_assets.defs as defs_package

    folders = {
        p.name
        for p in Path(defs_package.__file__).parent.iterdir()
        if p.is_dir() and (p / "assets.py").exists()
    }
    assert folders == {spec["group"] for spec in EXPECTED.values()}
