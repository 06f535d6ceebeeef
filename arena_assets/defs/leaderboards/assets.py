"""Stage 4, leaderboards: battles counted per month, then cumulative Bradley-Terry boards.

A snapshot of month M reads every month <= M; in Dagster's graph that is a partition
mapping reaching back to the first month (``ALL_EARLIER``), so rewriting an old month's
battles marks every later snapshot stale and the automation refreshes them. The boards
read earlier months' counted cells (``battle_cells``), not their rows, so a refresh costs
about one month's work however many months came before. Both board assets run a whole
backfill range in one run (single-run policy) and record each month's own metadata.
"""

import dagster as dg
import polars as pl

from arena_assets.defs import checks
from arena_assets.defs.automation import follow_upstream
from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.leaderboards.resources import LeaderboardSettings
from arena_assets.defs.metadata import png_markdown, table_metadata
from arena_assets.defs.partitions import ALL_EARLIER, monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage, SiteSettings
from arena_assets.labels.tags import board_rules_markdown
from arena_assets.pipeline import quality
from arena_assets.pipeline.leaderboards import (
    arena_leaderboard_month,
    battle_cells_month,
    leaderboard_history_month,
)
from arena_assets.ranking.alarm import Z_ALARM, Z_COHORT_MOVE
from arena_assets.ranking.boards import board_options
from arena_assets.ranking.schema import BOARD_SCHEMA, HISTORY_SCHEMA
from arena_assets.report import counts_table, md_escape

TOP_ROWS = 10

BOARD_COLUMNS = {
    "month": "The snapshot: every kept battle up to the end of this month.",
    "board": "overall, style_control (length and markdown effects removed), language:<code> "
    "or a category (hard_6, coding, if, long_user, ...).",
    "model": "The model as voted on (aliases resolved).",
    "rating": "Bradley-Terry rating on the Elo scale (mean 1000, or the anchor model's value).",
    "lower": "Lower end of the confidence interval of the rating.",
    "upper": "Upper end of the confidence interval of the rating.",
    "rank": "Position by rating (1 = best).",
    "rank_ub": "Rank upper bound: 1 + models whose interval lies wholly above this one's "
    "(LMArena's published rank).",
    "battles": "The model's votes on this board: kept votes with a winner (a tie counted "
    "once) in the board's category against another model the board ranks, the votes its "
    "rating is fitted on; the board's own count is half their sum.",
    "ci_method": "How the interval was computed (bootstrap or sandwich).",
    "ci_level": "The interval's coverage (e.g. 0.95).",
    "rank_change": "style_control board only: places gained (+) or lost (-) once style is "
    "controlled. Blank on the other boards: there is no second ranking of "
    "the same board to compare with.",
}


def _top_table(board: pl.DataFrame) -> dg.MetadataValue:
    """The top of one board as a table shown inline in the UI, ratings as whole points (the
    site's and LMArena's precision): one precision for every row. A float column would not
    do, the UI writes 1067.0 as 1067 beside 1162.9."""
    cols = ["rank", "rank_ub", "model", "rating", "lower", "upper", "battles", "rank_change"]
    top = (
        board.sort("rank", "model")
        .head(TOP_ROWS)
        .with_columns(pl.col("rating", "lower", "upper").round(0).cast(pl.Int64))
    )
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn(c, "string" if c == "model" else "int", md_escape(BOARD_COLUMNS[c]))
            for c in cols
        ]
    )
    records = [
        dg.TableRecord({c: row[c] for c in cols if row[c] is not None})
        for row in top.select(cols).iter_rows(named=True)
    ]
    return dg.MetadataValue.table(records=records, schema=schema)


def _site_pages(site: SiteSettings, month: str, boards: pl.DataFrame) -> dg.MetadataValue:
    """Where each board of the month is published by `leaderboard_site` (the links work once
    the site is built for the month)."""
    from arena_assets.site.names import board_slug, board_title

    rows = []
    for board in sorted(boards["board"].unique().to_list()):
        key = "overall" if board == "style_control" else board
        # the style-controlled board is the overall page's other view, opened by its anchor
        anchor = "#style" if board == "style_control" else ""
        url = site.page_url(month, f"{board_slug(key)}.html") + anchor
        rows.append(f"| {md_escape(board)} | [{md_escape(board_title(key))}]({url}) |")
    return dg.MetadataValue.md("| board | page |\n| --- | --- |\n" + "\n".join(rows))


@dg.asset(
    partitions_def=monthly_partitions,
    deps=["battles"],
    group_name="leaderboards",
    kinds={"parquet", "polars"},
    automation_condition=follow_upstream,
    check_specs=[
        dg.AssetCheckSpec(
            "battles_conserved",
            asset="battle_cells",
            blocking=True,
            description="The cells' counts add up to the month's battles.",
        )
    ],
)
@one_line_failures
def battle_cells(context: dg.AssetExecutionContext, storage: ArenaStorage):
    """The month's battles counted per (keep, removed_reason, language, model_a, model_b,
    winner): what the cumulative leaderboards read from earlier months instead of rows."""
    (month,) = months_in_window(context)
    step = battle_cells_month(storage.lake(), month)
    storage.publish("battle_cells", context.log)
    yield dg.MaterializeResult(
        metadata={**table_metadata(step.cells, step.url), "month": month, "battles": step.battles}
    )
    yield dg.AssetCheckResult(
        check_name="battles_conserved",
        passed=step.conserved,
        metadata={"battles": step.battles, "counted": int(step.cells["n"].sum())},
    )


def _board_checks(month: str, boards: pl.DataFrame, info: dict) -> list[dg.AssetCheckResult]:
    problems = quality.interval_problems(boards)
    alarms = info.get("rating_alarms", [])
    warnings = info.get("cohort_warnings", [])
    return [
        dg.AssetCheckResult(
            asset_key="arena_leaderboard",
            check_name="rating_move_alarm",
            severity=checks.WARN,
            passed=not alarms and not warnings,
            metadata={
                "month": month,
                "compared_with": str(info.get("rating_moves_vs")),
                "max_abs_z": dg.MetadataValue.float(float(info.get("max_abs_z", float("nan")))),
                "z_alarm": Z_ALARM,
                "models": ", ".join(a["model"] for a in alarms) or "none",
                "alarms": dg.MetadataValue.json(alarms),
                # earlier: a move beyond its interval driven by accounts without history
                "z_cohort_move": Z_COHORT_MOVE,
                "cohort_models": ", ".join(w["model"] for w in warnings) or "none",
                "cohort_warnings": dg.MetadataValue.json(warnings),
                "downweighted_cohorts": dg.MetadataValue.json(info.get("downweighted_cohorts", [])),
            },
        ),
        *checks.table_results(
            "arena_leaderboard", boards, BOARD_SCHEMA, ["month", "board", "model"]
        ),
        checks.range_result("arena_leaderboard", quality.board_range_problems(boards)),
        dg.AssetCheckResult(
            asset_key="arena_leaderboard",
            check_name="intervals_contain_ratings",
            passed=not (
                problems["not_finite"] or problems["inverted"] or problems["rating_outside"]
            ),
            metadata={"month": month, **problems},
        ),
        dg.AssetCheckResult(
            asset_key="arena_leaderboard",
            check_name="interval_width_sane",
            severity=checks.WARN,
            passed=problems["too_wide"] == 0,
            metadata={
                "month": month,
                "too_wide": problems["too_wide"],
                "max_width": quality.MAX_INTERVAL_WIDTH,
            },
        ),
    ]


@dg.asset(
    partitions_def=monthly_partitions,
    deps=[
        dg.AssetDep("battle_cells", partition_mapping=ALL_EARLIER),
        # style control reads the battle rows' style columns of every month
        dg.AssetDep("battles", partition_mapping=ALL_EARLIER),
        # category boards join the topic labels of the battles' conversations
        dg.AssetDep("topic_labels", partition_mapping=ALL_EARLIER),
    ],
    group_name="leaderboards",
    kinds={"parquet", "numpy"},
    backfill_policy=dg.BackfillPolicy.single_run(),
    automation_condition=follow_upstream,
    check_specs=[
        *checks.table_specs("arena_leaderboard", "board"),
        checks.range_spec("arena_leaderboard", "rank and battle count"),
        # not blocking: a bootstrap percentile interval may, rarely, miss its point estimate
        dg.AssetCheckSpec(
            "intervals_contain_ratings",
            asset="arena_leaderboard",
            description="Every interval is finite and lower <= rating <= upper.",
        ),
        dg.AssetCheckSpec(
            "interval_width_sane",
            asset="arena_leaderboard",
            description="WARN when an interval is wider than "
            f"{quality.MAX_INTERVAL_WIDTH:.0f} rating points (too few "
            "battles to read the board).",
        ),
        dg.AssetCheckSpec(
            "rating_move_alarm",
            asset="arena_leaderboard",
            description="WARN when a model's overall rating moved more than "
            f"{Z_ALARM} standard errors since the previous snapshot, or beyond "
            "its 95 % interval while accounts without history drove the move "
            "(possible vote rigging); names the model and the votes "
            "that moved it, and lists the battle filter's cohort down-weights.",
        ),
    ],
)
@one_line_failures
def arena_leaderboard(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    leaderboard_settings: LeaderboardSettings,
    site_settings: SiteSettings,
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
    options = board_options(
        bootstrap_rounds=settings.bootstrap_rounds,
        level=settings.ci_level,
        anchor=settings.anchor(),
        min_battles=settings.min_battles,
        seed=settings.seed,
    )
    used = {}
    results: list[dg.AssetCheckResult] = []
    for month in months_in_window(context):
        step = arena_leaderboard_month(
            lake, month, options, min_category_battles=settings.min_category_battles
        )
        tops = {
            f"top: {board}": _top_table(step.boards.filter(pl.col("board") == board))
            for board in step.boards["board"].unique(maintain_order=True)
        }
        # one materialization per month, each with its own figures (a backfill range too);
        # the rounded boards first, the file's own preview after them
        context.add_asset_metadata(
            {
                "month": month,
                **tops,
                "site_page": dg.MetadataValue.url(site_settings.page_url(month)),
                "site_pages": _site_pages(site_settings, month, step.boards),
                **table_metadata(step.boards, step.url, descriptions=BOARD_COLUMNS),
                "months_covered": f"{step.months[0]}..{step.months[-1]}",
                "battles_used": dg.MetadataValue.int(step.info["battles_used"]),
                "battles_removed_by_reason": dg.MetadataValue.md(
                    counts_table(step.info["removed_by_reason"])
                ),
                "boards": dg.MetadataValue.json(step.info["boards"]),
                "months_without_topic_labels": dg.MetadataValue.json(
                    step.info["months_without_topic_labels"]
                ),
                "category_board_rules": dg.MetadataValue.md(board_rules_markdown()),
                "models_left_out": dg.MetadataValue.json(step.info["left_out"]),
                "ratings_plot": png_markdown(step.png, "ratings"),
                "ratings_png": dg.MetadataValue.path(step.png_url),
            },
            partition_key=month,
        )
        used[month] = step.info["battles_used"]
        results = (
            _board_checks(month, step.boards, step.info)
            if not results or all(r.passed for r in results)
            else results
        )  # keep the first failing month's figures
    storage.publish("arena_leaderboard", context.log)
    yield dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(used)})
    yield from results


@dg.asset(
    partitions_def=monthly_partitions,
    deps=[dg.AssetDep("arena_leaderboard", partition_mapping=ALL_EARLIER)],
    group_name="leaderboards",
    kinds={"parquet"},
    backfill_policy=dg.BackfillPolicy.single_run(),
    automation_condition=follow_upstream,
    check_specs=checks.table_specs("leaderboard_history", "history"),
)
@one_line_failures
def leaderboard_history(
    context: dg.AssetExecutionContext, storage: ArenaStorage, site_settings: SiteSettings
):
    """Every model's overall rating and interval, month by month up to this month: how the
    leaderboard moved as votes accumulated and models arrived."""
    lake = storage.lake()
    results: list[dg.AssetCheckResult] = []
    for month in months_in_window(context):
        step = leaderboard_history_month(lake, month)
        # the preview shows the month's own snapshot (the file holds every month up to it)
        own = step.history.filter(pl.col("snapshot_month") == month)
        context.add_asset_metadata(
            {
                "month": month,
                "site_page": dg.MetadataValue.url(site_settings.page_url(month) + "#history"),
                **table_metadata(own, step.url, rows=step.history.height),
                "history_plot": png_markdown(step.png, "history"),
                "history_png": dg.MetadataValue.path(step.png_url),
            },
            partition_key=month,
        )
        month_results = checks.table_results(
            "leaderboard_history",
            step.history,
            HISTORY_SCHEMA,
            ["month", "snapshot_month", "model"],
        )
        if not results or all(r.passed for r in results):
            results = month_results
    storage.publish("leaderboard_history", context.log)
    yield dg.MaterializeResult()
    yield from results
