"""Published boards as a month of the site: arena-catalog's JSON files (LMArena's own
category boards) rendered with the same pages, so a user can put our boards and theirs
side by side. The files carry scores and intervals only: no votes, no pair counts, so the
pages show Rank (UB), the style-controlled rank or delta, score and interval, and the
interval figures."""

from __future__ import annotations

import polars as pl

from arena_assets.site.build import MonthSite, SiteOptions, build_month
from arena_assets.site.catalog import read_catalog
from arena_assets.site.tables import Board


def catalog_site(folder, month: str) -> MonthSite:
    rows = read_catalog(folder)
    boards = []
    for (key, style), part in sorted(
        rows.group_by(["board", "style"]), key=lambda kv: (kv[0][0], kv[0][1])
    ):
        ranked = part.select(
            "model", "rating", "lower", "upper", pl.lit(None, pl.Int64).alias("battles")
        )
        boards.append(Board(key, ranked, style=style))
    from pathlib import Path

    names = sorted(p.name for p in Path(folder).glob("leaderboard-*.json"))
    return MonthSite(
        month=month,
        boards=boards,
        source=f"Published boards ({', '.join(names)}; arena-catalog layout: "
        "score with its 2.5 % and 97.5 % bootstrap quantiles).",
    )


def publish_catalog(folder, month: str, root, options: SiteOptions) -> tuple[int, str]:
    from arena_assets.site.publish import publish_month

    built = build_month(catalog_site(folder, month), options)
    return publish_month(root, month, built.files, options.site_name), root.page_url(month)
