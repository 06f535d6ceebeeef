"""Stage 4, leaderboards: cumulative Bradley-Terry boards from the kept human votes.

Both assets run a whole backfill range in one run (single-run backfill policy): the
battles of all earlier months are loaded once and each month's snapshot is fitted from
the battles up to its end, so month M's snapshot never depends on later months.
Dependency note: the snapshot of month M reads battles of every month <= M from the lake;
Dagster's graph shows only the same-month edge (there is no "all earlier partitions"
mapping), so re-materialize later snapshots after rewriting an old month's battles.
"""


import base64

import dagster as dg
import polars as pl

from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage, LeaderboardSettings
from arena_assets.pipeline import arena_leaderboard_month
from arena_assets.plots import rating_history, ratings_with_intervals
from arena_assets.report import counts_table, markdown_table


def _png_markdown(png: bytes, alt: str) -> dg.MetadataValue:
    return dg.MetadataValue.md(f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})")


@dg.asset(
    partitions_def=monthly_partitions,
    deps=["battles"],
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
    effects removed) and one per language with enough votes."""
    lake = storage.lake()
    settings = leaderboard_settings
    per_month: dict[str, dict] = {}
    failures = 0
    for month in months_in_window(context):
        boards, info = arena_leaderboard_month(
            lake, month, bootstrap_rounds=settings.bootstrap_rounds,
            level=settings.ci_level, anchor=settings.anchor(), min_battles=settings.min_battles,
            min_category_battles=settings.min_category_battles, seed=settings.seed,
        )
        months = info["months"]
        url = lake.url("arena_leaderboard", month)
        overall = boards.filter(pl.col("board") == "overall")
        png = ratings_with_intervals(overall, f"Arena leaderboard up to {month}")
        png_url = lake.write_blob("arena_leaderboard", f"{month}.png", png)
        top = overall.select("rank", "rank_ub", "model", pl.col("rating").round(1),
                             pl.col("lower").round(1), pl.col("upper").round(1), "battles")
        per_month[month] = {
            **table_metadata(boards, url),
            "month": month,
            "months_covered": f"{months[0]}..{months[-1]}",
            "battles_used": dg.MetadataValue.int(info["battles_used"]),
            "battles_removed_by_reason": dg.MetadataValue.md(
                counts_table(info["removed_by_reason"])),
            "boards": dg.MetadataValue.json(info["boards"]),
            "models_not_connected": dg.MetadataValue.json(info["models_not_connected"]),
            "top": dg.MetadataValue.md(markdown_table(top, 15)),
            "style_coefficients": dg.MetadataValue.md(
                markdown_table(info["style_coefficients"], 10)),
            "ratings_plot": _png_markdown(png, "ratings"),
            "ratings_png": dg.MetadataValue.path(png_url),
        }
        failures += boards.filter(
            (pl.col("lower") > pl.col("rating")) | (pl.col("rating") > pl.col("upper"))).height
    storage.publish("arena_leaderboard", context.log)
    # one result for the run: a single month (the usual case) gets its own figures; a
    # backfill range shows its last month and a line per month
    last = max(per_month)
    yield dg.MaterializeResult(metadata={
        **per_month[last],
        "months_in_run": dg.MetadataValue.json(
            {m: v["battles_used"].value for m, v in per_month.items()}),
    })
    yield dg.AssetCheckResult(check_name="intervals_contain_ratings", passed=failures == 0,
                              metadata={"bad_rows": failures})


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
        months = lake.months("arena_leaderboard", upto=month)
        history = (
            lake.read_months("arena_leaderboard", months)
            .filter(pl.col("board") == "overall")
            .select(pl.col("month").alias("snapshot_month"), "model", "rating", "lower",
                    "upper", "rank", "rank_ub", "battles")
            .sort("snapshot_month", "rank", "model")
        )
        # `month` is the partition (history as of that month), as in every other table
        history = history.select(pl.lit(month).alias("month"), pl.all())
        url = lake.write("leaderboard_history", month, history)
        png = rating_history(history, f"Rating history up to {month}")
        png_url = lake.write_blob("leaderboard_history", f"{month}.png", png)
        last_meta = {**table_metadata(history, url), "month": month,
                     "history_plot": _png_markdown(png, "history"),
                     "history_png": dg.MetadataValue.path(png_url)}
    storage.publish("leaderboard_history", context.log)
    return dg.MaterializeResult(metadata=last_meta)
