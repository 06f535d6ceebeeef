"""Stage completions: Copilot Arena's code-completion battles and their leaderboard.

``completion_battles`` reads the month's Copilot Arena records (its server log or its
public release) and keeps one cleaned row per pair shown; ``copilot_leaderboard`` fits the
cumulative board with intervals and a latency control, and writes it as JSON for a site
page too; ``copilot_user_boards`` holds each user's own board, as Copilot Arena's
extension shows it. SQL / polars / numpy over the lake, no LLM: they follow new data on
their own.
"""

import dagster as dg
import polars as pl

from arena_assets.defs.automation import follow_upstream
from arena_assets.defs.completions.resources import CompletionSettings
from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.ingest.resources import IngestSettings
from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage
from arena_assets.ingest.forgotten import ForgetListSaltError
from arena_assets.ingest.parse import reason_counts
from arena_assets.pipeline.completions import (
    COMPLETION_REJECTS,
    completion_battles_month,
    copilot_leaderboard_month,
    copilot_user_boards_month,
)
from arena_assets.report import counts_table, markdown_table

EVERY_EARLIER_MONTH = dg.TimeWindowPartitionMapping(
    start_offset=-1200, end_offset=0, allow_nonexistent_upstream_partitions=True
)


# reads raw files, like raw_logs: launched by the monthly job, a backfill or the UI
@dg.asset(
    partitions_def=monthly_partitions,
    group_name="completions",
    kinds={"parquet", "polars"},
    backfill_policy=dg.BackfillPolicy.single_run(),
    check_specs=[
        dg.AssetCheckSpec(
            "records_conserved",
            asset="completion_battles",
            blocking=True,
            description="Records read = records merged into battles + rejects.",
        ),
        dg.AssetCheckSpec(
            "no_code_without_consent",
            asset="completion_battles",
            blocking=True,
            description="Code text only on rows whose privacy setting is Research.",
        ),
    ],
)
@one_line_failures
def completion_battles(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    completion_settings: CompletionSettings,
    ingest_settings: IngestSettings,
):
    """One row per pair of code completions Copilot Arena showed side by side in an editor:
    the two models (top = a), which one the user accepted (Tab / Shift-Tab) or neither,
    latencies, the file's language, prefix / suffix lengths and the completion's position;
    code text only where Copilot Arena's release keeps it (privacy Research), secrets and
    PII redacted; user ids salted. Rejected records in `completion_rejects`, with reasons."""
    lake = storage.lake()
    root = completion_settings.root_for(storage.raw_root)
    lost, leaked, per_month = 0, 0, {}
    for month in months_in_window(context):
        try:
            step = completion_battles_month(
                lake,
                root,
                month,
                salt=ingest_settings.user_salt,
                storage_options=storage.storage_options() if root.startswith("s3://") else None,
            )
        except ForgetListSaltError as exc:  # one line, not a traceback: nothing was written
            raise dg.Failure(description=str(exc)) from exc
        b = step.battles
        lost += 0 if step.conserved else 1
        leaked += b.filter(
            (pl.col("privacy") != "Research")
            & pl.any_horizontal(
                pl.col(c).is_not_null()
                for c in ("prefix", "suffix", "completion_a", "completion_b")
            )
        ).height
        per_month[month] = b.height
        context.add_asset_metadata(
            {
                **table_metadata(b, step.urls[0]),
                "month": month,
                "records_read": step.records_read,
                # records of users on the forget list: rejected, no text kept
                "forgotten_records": step.forgotten_records,
                "folder": step.listing.describe(),
                "accepted": int(b["accepted"].sum()) if b.height else 0,
                "secrets_redacted": int(b["secrets_redacted"].sum()) if b.height else 0,
                "rejects_by_reason": dg.MetadataValue.md(counts_table(reason_counts(step.rejects))),
                "rejects_path": dg.MetadataValue.path(step.urls[1]),
            },
            partition_key=month,
        )
    storage.publish("completion_battles", context.log)
    storage.publish(COMPLETION_REJECTS, context.log)
    yield dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(per_month)})
    yield dg.AssetCheckResult(
        check_name="records_conserved", passed=lost == 0, metadata={"months_not_conserved": lost}
    )
    yield dg.AssetCheckResult(
        check_name="no_code_without_consent", passed=leaked == 0, metadata={"rows": leaked}
    )


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="completions",
    kinds={"numpy", "parquet"},
    deps=[dg.AssetDep(completion_battles, partition_mapping=EVERY_EARLIER_MONTH)],
    backfill_policy=dg.BackfillPolicy.single_run(),
    automation_condition=follow_upstream,
    check_specs=[
        dg.AssetCheckSpec(
            "intervals_contain_ratings",
            asset="copilot_leaderboard",
            blocking=False,
            description="lower <= rating <= upper on every board.",
        )
    ],
)
@one_line_failures
def copilot_leaderboard(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    completion_settings: CompletionSettings,
):
    """Copilot Arena's leaderboard, cumulative up to the month: its own fit of the accepted
    completions (`ARENA_COPILOT_FIT`: copilot-arena, the L2-penalised logistic regression
    of its scores.py, or bt, Bradley-Terry) with bootstrap intervals (`overall`), the same net of latency
    (`latency_controlled`, a covariate on the normalised latency difference, as style
    control does for length), per-language boards with enough pairs; acceptance rate and
    median latency per model; the board as JSON beside the Parquet file for a site page."""
    lake = storage.lake()
    bad, per_month = 0, {}
    for month in months_in_window(context):
        step = copilot_leaderboard_month(lake, month, completion_settings.board_options())
        b = step.board
        bad += b.filter(
            ~(
                (pl.col("lower") <= pl.col("rating") + 1e-9)
                & (pl.col("rating") <= pl.col("upper") + 1e-9)
            )
        ).height
        per_month[month] = b.height
        overall = b.filter(pl.col("board") == "overall").select(
            "rank",
            "model",
            "rating",
            "lower",
            "upper",
            "battles",
            "acceptance_rate",
            "median_latency",
        )
        context.add_asset_metadata(
            {
                **table_metadata(b, step.urls[0]),
                "month": month,
                "board": dg.MetadataValue.md(
                    markdown_table(overall.with_columns(pl.col(pl.Float64).round(2)), 40)
                ),
                "latency_control": dg.MetadataValue.json(step.latency),
                "fit": step.figures.get("fit", ""),
                "figures": dg.MetadataValue.json(step.figures),
                "models_left_out": dg.MetadataValue.json(step.left_out),
                "site_data": dg.MetadataValue.path(step.urls[1]),
            },
            partition_key=month,
        )
    storage.publish("copilot_leaderboard", context.log)
    yield dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(per_month)})
    yield dg.AssetCheckResult(
        check_name="intervals_contain_ratings",
        passed=bad == 0,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"bad_rows": bad},
    )


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="completions",
    kinds={"numpy", "parquet"},
    deps=[dg.AssetDep(completion_battles, partition_mapping=EVERY_EARLIER_MONTH)],
    backfill_policy=dg.BackfillPolicy.single_run(),
    automation_condition=follow_upstream,
)
def copilot_user_boards(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    completion_settings: CompletionSettings,
):
    """Each user's own board, cumulative up to the month, as Copilot Arena's scores.py
    computes the one its extension shows a user: everyone's accepted pairs mixed with the
    user's by a weight λ chosen per user on the user's held-out pairs, the L2-penalised
    logistic regression, for every user with 20 or more accepted pairs of the rated models
    and both sides accepted at least once. Keyed by the salted user hash (forget removes a
    user's rows); not published on the site."""
    lake = storage.lake()
    per_month = {}
    for month in months_in_window(context):
        step = copilot_user_boards_month(lake, month, completion_settings.board_options())
        per_month[month] = step.users
        context.add_asset_metadata(
            {
                **table_metadata(step.boards, step.url),
                "month": month,
                "users_with_a_board": step.users,
                "users_with_accepted_pairs": step.users_seen,
                "users_per_lambda": dg.MetadataValue.json(step.lambdas()),
            },
            partition_key=month,
        )
    storage.publish("copilot_user_boards", context.log)
    return dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(per_month)})
