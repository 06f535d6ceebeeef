"""Stage 4, leaderboards: cumulative Bradley-Terry boards from the kept human votes.

Both assets run a whole backfill range in one run (single-run backfill policy): each
month's snapshot is fitted from the battles up to its end, so month M's snapshot never
depends on later months. Dependency note: the snapshot of month M reads battles of every
month <= M from the lake; Dagster's graph shows only the same-month edge (there is no "all
earlier partitions" mapping), so re-materialize later snapshots after rewriting an old
month's battles.
"""

import base64

import dagster as dg

from arena_assets.defs.leaderboards.resources import LeaderboardSettings
from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage
from arena_assets.pipeline.leaderboards import arena_leaderboard_month, leaderboard_history_month
from arena_assets.ranking.boards import board_options
from arena_assets.report import counts_table, markdown_table


def _png_markdown(png: bytes, alt: str) -> dg.MetadataValue:
    return dg.MetadataValue.md(f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})")


@dg.asset(
    partitions_def=monthly_partitions,
    deps=["battles", "topic_labels"],
    group_name="leaderboards",
    kinds={"parquet", "numpy"},
    backfill_policy=dg.BackfillPolicy.single_run(),
    check_specs=[dg.AssetCheckSpec("intervals_contain_ratings", asset="arena_leaderboard",
                                   description="lower <= rating <= upper on every row.")],
)
def arena_leaderboard(
    context: dg.AssetExecutionContext, storage: ArenaStorage, leaderboard_settings: LeaderboardSettings
):
    """The arena leaderboard as of the end of each month: Bradley-Terry ratings on the Elo
    scale with confidence intervals, rank upper bounds and battle counts, from every kept
    battle up to that month. Boards: `overall`, `style_control` (length and markdown
    effects removed), one per language and one per topic category (LMArena's names:
    `hard_6`, `coding`, `math`, `creative_writing`, `if`, `long_user`, `multiturn`,
    `no_refusal`, `vision` and each vision category) with enough votes; category boards
    use the battles whose conversations have `topic_labels`. Only models the battles can
    rate are ranked; `models_left_out` lists the others per board with the reason."""
    lake = storage.lake()
    settings = leaderboard_settings
    options = board_options(bootstrap_rounds=settings.bootstrap_rounds, level=settings.ci_level,
                            anchor=settings.anchor(), min_battles=settings.min_battles,
                            seed=settings.seed)
    per_month: dict[str, dict] = {}
    bad_rows = 0
    for month in months_in_window(context):
        step = arena_leaderboard_month(lake, month, options,
                                       min_category_battles=settings.min_category_battles)
        per_month[month] = {
            **table_metadata(step.boards, step.url),
            "month": month,
            "months_covered": f"{step.months[0]}..{step.months[-1]}",
            "battles_used": dg.MetadataValue.int(step.info["battles_used"]),
            "battles_removed_by_reason": dg.MetadataValue.md(
                counts_table(step.info["removed_by_reason"])),
            "boards": dg.MetadataValue.json(step.info["boards"]),
            "months_without_topic_labels": dg.MetadataValue.json(
                step.info["months_without_topic_labels"]),
            "models_left_out": dg.MetadataValue.json(step.info["left_out"]),
            "top": dg.MetadataValue.md(markdown_table(step.top(), 15)),
            "style_coefficients": dg.MetadataValue.md(
                markdown_table(step.info["style_coefficients"], 10)),
            "ratings_plot": _png_markdown(step.png, "ratings"),
            "ratings_png": dg.MetadataValue.path(step.png_url),
        }
        bad_rows += step.bad_interval_rows
    storage.publish("arena_leaderboard", context.log)
    # one result for the run: a single month (the usual case) gets its own figures; a
    # backfill range shows its last month and a line per month
    last = max(per_month)
    yield dg.MaterializeResult(metadata={
        **per_month[last],
        "months_in_run": dg.MetadataValue.json(
            {m: v["battles_used"].value for m, v in per_month.items()}),
    })
    yield dg.AssetCheckResult(check_name="intervals_contain_ratings", passed=bad_rows == 0,
                              metadata={"bad_rows": bad_rows})


@dg.asset(
    partitions_def=monthly_partitions,
    deps=["arena_leaderboard"],
    group_name="leaderboards",
    kinds={"parquet"},
    backfill_policy=dg.BackfillPolicy.single_run(),
)
def leaderboard_history(context: dg.AssetExecutionContext, storage: ArenaStorage):
    """Every model's overall rating and interval, month by month up to this month: how the
    leaderboard moved as votes accumulated and models arrived."""
    lake = storage.lake()
    for month in months_in_window(context):
        step = leaderboard_history_month(lake, month)
        last_meta = {**table_metadata(step.history, step.url), "month": month,
                     "history_plot": _png_markdown(step.png, "history"),
                     "history_png": dg.MetadataValue.path(step.png_url)}
    storage.publish("leaderboard_history", context.log)
    return dg.MaterializeResult(metadata=last_meta)
