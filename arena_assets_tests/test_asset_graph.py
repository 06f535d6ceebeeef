"""A snapshot of the asset graph: keys, groups, dependencies with their partition mappings,
checks, backfill policies, pools and kinds. A change to the graph must change this file
too (dropping the battles self-dependency, a check or a pool makes it fail)."""

from __future__ import annotations

import dagster as dg

from arena_assets.definitions import defs as load_defs
from arena_assets.defs.partitions import monthly_partitions

SAME_MONTH = None  # a dependency with no mapping: the same monthly partition

EXPECTED = {
    "raw_logs": {
        "group": "ingest", "deps": {}, "checks": [("lines_conserved", True), ("no_partial_files", True)],
        "backfill": None, "pool": "ingest", "kinds": ["duckdb", "parquet", "polars"],
    },
    "raw_rejects": {
        "group": "ingest", "deps": {}, "checks": [],
        "backfill": None, "pool": "ingest", "kinds": ["duckdb", "parquet"],
    },
    "conversations": {
        "group": "clean", "deps": {"raw_logs": SAME_MONTH},
        "checks": [("no_raw_pii", True), ("required_columns_present", True),
                   ("snapshots_conserved", True)],
        "backfill": None, "pool": "clean", "kinds": ["duckdb", "parquet", "polars"],
    },
    "battles": {
        "group": "battles",
        # the anomaly test's crowd reads earlier months: backfills run months in order
        "deps": {"battles": "previous month", "conversations": SAME_MONTH, "raw_logs": SAME_MONTH},
        "checks": [("removals_accounted", True), ("votes_conserved", True)],
        "backfill": None, "pool": None, "kinds": ["parquet", "polars"],
    },
    "topic_labels": {
        "group": "topics", "deps": {"conversations": SAME_MONTH},
        "checks": [("labels_in_range", True), ("parse_failure_rate_low", False)],
        "backfill": "MULTI_RUN", "pool": "llm", "kinds": ["openai", "parquet", "polars"],
    },
    "topic_clusters": {
        "group": "topics", "deps": {"conversations": SAME_MONTH, "topic_labels": SAME_MONTH},
        "checks": [], "backfill": "MULTI_RUN", "pool": "llm",
        "kinds": ["openai", "parquet", "scikitlearn"],
    },
    "arena_leaderboard": {
        # category boards join the topic labels of the battles' conversations
        "group": "leaderboards", "deps": {"battles": SAME_MONTH, "topic_labels": SAME_MONTH},
        "checks": [("intervals_contain_ratings", False)],
        "backfill": "SINGLE_RUN", "pool": None, "kinds": ["numpy", "parquet"],
    },
    "leaderboard_history": {
        "group": "leaderboards", "deps": {"arena_leaderboard": SAME_MONTH}, "checks": [],
        "backfill": "SINGLE_RUN", "pool": None, "kinds": ["parquet"],
    },
    "bench_prompts": {
        "group": "bench",
        # decontamination reads every earlier month's bench: months run in order
        "deps": {"bench_prompts": "previous month", "topic_clusters": SAME_MONTH,
                 "topic_labels": SAME_MONTH},
        "checks": [], "backfill": "SINGLE_RUN", "pool": None, "kinds": ["parquet", "polars"],
    },
    "model_answers": {
        "group": "bench", "deps": {"bench_prompts": SAME_MONTH}, "checks": [],
        "backfill": "MULTI_RUN", "pool": "llm", "kinds": ["openai", "parquet"],
    },
    "judgments": {
        "group": "bench", "deps": {"model_answers": SAME_MONTH},
        "checks": [("judge_parse_failure_rate", False), ("no_duplicate_games", True)],
        "backfill": "MULTI_RUN", "pool": "llm", "kinds": ["openai", "parquet"],
    },
    "bench_leaderboard": {
        "group": "bench", "deps": {"arena_leaderboard": SAME_MONTH, "judgments": SAME_MONTH},
        "checks": [("win_rates_in_range", False)],
        "backfill": "SINGLE_RUN", "pool": None, "kinds": ["numpy", "parquet"],
    },
}


def _mapping(mapping: dg.PartitionMapping | None) -> str | None:
    if mapping is None:
        return None
    if isinstance(mapping, dg.TimeWindowPartitionMapping) and (
            mapping.start_offset, mapping.end_offset) == (-1, -1):
        return "previous month"
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
                "deps": {d.asset_key.to_user_string(): _mapping(d.partition_mapping)
                         for d in spec.deps},
                "checks": sorted((c.name, c.blocking) for c in assets.check_specs
                                 if c.asset_key == key),
                "backfill": None if policy is None else policy.policy_type.value,
                "pool": assets.node_def.pool,
                "kinds": sorted(spec.kinds),
            }
    return out


def test_asset_graph_matches_the_snapshot() -> None:
    graph = _graph()
    assert sorted(graph) == sorted(EXPECTED)
    for key, expected in EXPECTED.items():
        assert graph[key] == expected, key


def test_each_stage_folder_is_named_as_its_group() -> None:
    from pathlib import Path

    import arena_assets.defs as defs_package

    folders = {p.name for p in Path(defs_package.__file__).parent.iterdir()
               if p.is_dir() and (p / "assets.py").exists()}
    assert folders == {spec["group"] for spec in EXPECTED.values()}
