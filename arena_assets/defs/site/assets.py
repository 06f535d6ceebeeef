"""Stage 7, site: each month's public leaderboard as static pages (HTML, CSS, a little
JavaScript, SVG figures), under ARENA_SITE_ROOT.

Not automated: the site is what the public reads, so a month is published by hand, by the
monthly job or by a backfill once its boards are right. It reads every earlier month (the
boards are cumulative, the index and history cover every month), so an old month's
change marks it stale like the boards.

Pool ``site_root``: every build rewrites the root's index and history from the months on
the root, so two builds at once could each write an index missing the other's month. The
instance limits the pool to one (``make install`` sets it; ``deploy/README.md`` for a
shared instance); the next build of any month sets a lost race right anyway.
"""

import dagster as dg

from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.leaderboards.resources import LeaderboardSettings
from arena_assets.defs.partitions import ALL_EARLIER, monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage, SiteSettings
from arena_assets.report import counts_table


@dg.asset(
    partitions_def=monthly_partitions,
    deps=[
        dg.AssetDep("arena_leaderboard", partition_mapping=ALL_EARLIER),
        "leaderboard_history",
        "bench_leaderboard",
        # the boards' battles counted per pair (figures, head-to-heads, data card)
        dg.AssetDep("battle_cells", partition_mapping=ALL_EARLIER),
        dg.AssetDep("battles", partition_mapping=ALL_EARLIER),
        dg.AssetDep("topic_labels", partition_mapping=ALL_EARLIER),
        "copilot_leaderboard",
    ],  # its own page, copilot.html, when the month has one
    group_name="site",
    kinds={"html", "svg"},
    pool="site_root",
    backfill_policy=dg.BackfillPolicy.single_run(),
    check_specs=[
        dg.AssetCheckSpec(
            "votes_accounted",
            asset="leaderboard_site",
            blocking=True,
            description="Data card: votes in (vote lines ingest read) = ingest "
            "rejects + votes on the overall board + votes filtered "
            "(per filter) + kept votes with a model the board leaves "
            "out, for the month and up to it, each counted on its "
            "own; the votes on the board equal those the leaderboard "
            "fitted. Not checked (WARN) without an overall board.",
        ),
        dg.AssetCheckSpec(
            "pages_match_boards",
            asset="leaderboard_site",
            description="Every board's votes counted by the site (each model's "
            "and the board's) equal the votes its leaderboard used "
            "(else the board is older than its battles: "
            "rematerialize arena_leaderboard).",
        ),
    ],
)
@one_line_failures
def leaderboard_site(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    leaderboard_settings: LeaderboardSettings,
    site_settings: SiteSettings,
):
    """The month's public leaderboard site: a page per board (overall, style control, every
    category, language and vision board) with Rank (UB), the style-controlled rank or the
    delta to overall, score, interval, votes and the registry's organisation, licence and
    knowledge cutoff; FastChat's four figures; rank movers, new and retired models; a page
    per model (head-to-heads, category ranks, history); style coefficients; the bench and
    its agreement with the votes; a data card; downloads (arena-catalog JSON, CSV,
    Parquet). The root's index and history cover every month built."""
    from arena_assets.ingest.sources import load_model_records
    from arena_assets.pipeline.site import leaderboard_site_month, registry_info
    from arena_assets.site.publish import SiteRoot

    lake = storage.lake()
    registry = registry_info(load_model_records(storage.raw_root, storage.raw_storage_options()))
    root = SiteRoot(
        site_settings.site_root,
        storage._options_for(site_settings.site_root),
        public_url=site_settings.public_url,
    )
    options = site_settings.options()
    pages, conserved, unchecked, mismatched = {}, True, [], {}
    for month in months_in_window(context):
        step = leaderboard_site_month(
            lake,
            month,
            root,
            registry=registry,
            min_votes=leaderboard_settings.min_battles,
            deprecate_after_months=site_settings.deprecate_after_months,
            options=options,
        )
        pages[month] = step.page_url
        if step.conserved is None:
            unchecked.append(month)
        else:
            conserved &= step.conserved
        mismatched.update({f"{month} {k}": v for k, v in step.mismatched_boards.items()})
        card = (step.data_card or {}).get("up_to_month", {})
        context.add_asset_metadata(
            {
                "month": month,
                "page": dg.MetadataValue.url(step.page_url),
                "files": step.files,
                "bytes_written": step.bytes_written,
                "boards": dg.MetadataValue.json(step.boards),
                "model_pages": step.models,
                "votes_in": card.get("votes_in", 0),
                "votes_shown": card.get("shown", 0),
                "ingest_rejects": card.get("ingest_rejects", 0),
                "votes_filtered": dg.MetadataValue.md(
                    counts_table(card.get("filtered", {}), "filter", "votes")
                ),
                "seconds": dg.MetadataValue.json(step.seconds),
            },
            partition_key=month,
        )
    yield dg.MaterializeResult(metadata={"pages": dg.MetadataValue.json(pages)})
    yield votes_check(conserved, unchecked)
    yield dg.AssetCheckResult(
        check_name="pages_match_boards",
        passed=not mismatched,
        metadata={
            "mismatched": dg.MetadataValue.json(
                {k: {"site": a, "leaderboard": b} for k, (a, b) in mismatched.items()}
            )
        },
    )


def votes_check(conserved: bool, unchecked: list[str]) -> dg.AssetCheckResult:
    """``votes_accounted``: failed (blocking) when a card does not add up; a month with no
    card (no overall board) is "not checked", a WARN, never a pass."""
    if not conserved:
        return dg.AssetCheckResult(check_name="votes_accounted", passed=False)
    if unchecked:
        return dg.AssetCheckResult(
            check_name="votes_accounted",
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "not_checked": dg.MetadataValue.json(unchecked),
                "why": "no overall board: no votes to count against",
            },
        )
    return dg.AssetCheckResult(check_name="votes_accounted", passed=True)
