"""Stage 3, battles: the month's pairwise votes, flagged, with style features."""

import dagster as dg

from arena_assets.defs import checks
from arena_assets.defs.automation import follow_upstream
from arena_assets.defs.battles.resources import BattleRules
from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage
from arena_assets.ingest import load_model_records
from arena_assets.pipeline.battles import battles_month
from arena_assets.pipeline.quality import BATTLE_CONTRACT, battle_range_problems
from arena_assets.report import counts_table


@dg.asset(
    partitions_def=monthly_partitions,
    # the anomaly test's crowd includes earlier months' kept votes: this self-dependency on
    # the previous month makes backfills run months in order
    deps=[
        "raw_logs",
        "conversations",
        dg.AssetDep(
            "battles",
            partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1),
        ),
    ],
    group_name="battles",
    kinds={"parquet", "polars"},
    automation_condition=follow_upstream,
    check_specs=[
        dg.AssetCheckSpec(
            "votes_conserved",
            asset="battles",
            blocking=True,
            description="One battle row per accepted vote event.",
        ),
        dg.AssetCheckSpec(
            "removals_accounted",
            asset="battles",
            blocking=True,
            description="Kept + removed-by-reason = all battles.",
        ),
        *checks.table_specs("battles", "battle"),
        checks.range_spec("battles", "winner and style count"),
        checks.drift_spec("battles"),
    ],
)
@one_line_failures
def battles(context: dg.AssetExecutionContext, storage: ArenaStorage, battle_rules: BattleRules):
    """Every vote of the month as a battle: model_a / model_b, the winner (model_a,
    model_b, tie, tie (bothbad)), language, voter hash, both conversation ids, style
    features of both answers, and flags with reasons (not anonymous, identity leak, top-prompt
    dedup, daily cap, anomalous voter, and per cluster of linked accounts or per voter who
    votes only with one model on screen: see the README's vote-rigging section). `keep`
    marks the battles leaderboards use; the VisionArena-Battle style release. The anomaly test's crowd includes the kept votes of
    every earlier month already in the lake, so backfill months in order."""
    (month,) = months_in_window(context)
    lake = storage.lake()
    registry = load_model_records(storage.raw_root, storage.raw_storage_options())
    step = battles_month(lake, month, battle_rules.config(registry))
    result, frame = step.result, step.result.battles
    storage.publish("battles", context.log)
    yield dg.MaterializeResult(
        metadata={
            **table_metadata(frame, step.url),
            "month": month,
            "battles_kept": step.kept,
            "battles_removed": step.removed,
            "removed_by_reason": dg.MetadataValue.md(counts_table(result.removed_by_reason)),
            "flag_totals": dg.MetadataValue.json(result.flag_totals),
            "aliases_applied": result.metadata.get("alias_applied", 0),
            "anomalous_voters": result.metadata.get("anomalous_voters", 0),
            "rigging": dg.MetadataValue.json(result.metadata.get("rigging", {})),
            # the population rules: down-weighted cohorts and models newcomers crowd
            "population_rules": dg.MetadataValue.json(result.metadata.get("cohort", {})),
            "crowd_months": dg.MetadataValue.json(result.metadata["crowd_months"]),
            "winners": dg.MetadataValue.json(
                dict(frame.filter("keep")["winner"].value_counts().iter_rows())
            ),
        }
    )
    yield from checks.table_results("battles", frame, BATTLE_CONTRACT, ["battle_id"])
    yield checks.range_result("battles", battle_range_problems(frame))
    yield checks.drift_result(
        "battles",
        lake,
        month,
        frame.height,
        dict(frame["language"].fill_null("?").value_counts().iter_rows()),
    )
    yield dg.AssetCheckResult(
        check_name="votes_conserved",
        passed=step.votes_conserved,
        metadata={"vote_events": step.votes_read, "battles": frame.height},
    )
    yield dg.AssetCheckResult(
        check_name="removals_accounted",
        passed=step.removals_accounted,
        metadata={"kept": step.kept, "removed": step.removed, "battles": frame.height},
    )
