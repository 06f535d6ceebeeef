"""A month of the leaderboard site as files (relative path -> bytes), from plain data.

``MonthSite`` holds what the pages need; the pipeline step fills it from the lake and the
CLI can fill it from published arena-catalog files. ``build_month`` returns the month's
folder (pages, figures, downloads, ``summary.json``); ``root.build_root`` makes the index
and the history from the summaries of every month present. Same input, same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import polars as pl

from arena_assets.site.copilot import copilot_files, copilot_summary
from arena_assets.site.downloads import lake_board, month_downloads
from arena_assets.site.draw import draw_all
from arena_assets.site.extras import month_extras
from arena_assets.site.matrices import average_win_rate, decisive_counts, win_fraction
from arena_assets.site.models import model_pages
from arena_assets.site.names import board_group, board_order, board_slug, board_title, slug
from arena_assets.site.render import page, static_files, table_rows, votes_note
from arena_assets.site.tables import (
    VOTES_DEFINITION,
    Board,
    BoardTable,
    ModelInfo,
    board_table,
    top_models,
)


@dataclass
class SiteOptions:
    site_name: str = "Arena leaderboard"
    plot_top: int = 30  # models in the interval and win-rate figures (FastChat: 25 x scale)
    heatmap_top: int = 20  # models in the two heatmaps
    workers: int = 1  # processes drawing the figures


@dataclass
class MonthSite:
    """Everything a month's pages show (see the pipeline's ``site_month`` for its sources)."""

    month: str
    boards: list[Board]  # plain boards and their style-controlled twins (style=True)
    registry: dict[str, ModelInfo] = field(default_factory=dict)
    deprecated: set[str] = field(default_factory=set)
    level: float = 0.95
    min_votes: int | None = None
    source: str = ""
    history: pl.DataFrame | None = (
        None  # snapshot_month, model, rating, lower, upper, rank_ub, battles
    )
    previous_month: str | None = None
    previous: pl.DataFrame | None = None  # the previous month's overall board
    month_votes: dict[str, int] = field(default_factory=dict)  # model -> votes this month
    previous_votes: dict[str, int] = field(default_factory=dict)
    style_coefficients: pl.DataFrame | None = None  # feature, coef, lower, upper, coef_rating
    data_card: dict | None = None
    skipped_boards: dict[str, str] = field(default_factory=dict)  # board -> why not published
    bench: pl.DataFrame | None = None
    vs_human: dict | None = None
    notes: dict[str, str] = field(default_factory=dict)  # board -> extra note
    copilot: dict | None = None  # Copilot Arena's board data (completions stage), if built

    def plain(self) -> dict[str, Board]:
        return {b.key: b for b in self.boards if not b.style}

    def styled(self) -> dict[str, Board]:
        return {b.key: b for b in self.boards if b.style}


@dataclass
class BuiltMonth:
    files: dict[str, bytes]
    tables: dict[tuple[str, bool], BoardTable]
    summary: dict


def board_tables(site: MonthSite) -> dict[tuple[str, bool], BoardTable]:
    """Every board's table: overall with its Rank (StyleCtrl), the others with the delta
    against the overall board of the same variant (the plain one when that is missing)."""
    plain, styled = site.plain(), site.styled()
    out = {}
    for key in board_order(plain | styled):
        for style, board in ((False, plain.get(key)), (True, styled.get(key))):
            if board is None:
                continue
            twin = styled.get(key) if key == "overall" and not style else None
            baseline = None
            if not (key == "overall" and not style):
                baseline = (styled.get("overall") if style else None) or plain.get("overall")
                baseline = None if baseline is board else baseline
            out[(key, style)] = board_table(
                board,
                deprecated=site.deprecated,
                registry=site.registry,
                style_twin=twin,
                baseline=baseline,
            )
    return out


def _figure_jobs(site: MonthSite, tables, options: SiteOptions) -> tuple[list, dict]:
    """(path, plot function, arguments) per figure, and board key -> figures on its page."""
    jobs, figures = [], {}
    pct = f"{site.level:.0%}"
    for (key, style), table in tables.items():
        name = board_slug(key)
        top = top_models(table, options.plot_top)
        rows = table.rows.filter(pl.col("model").is_in(top)).sort(
            ["rating", "model"], descending=[True, False]
        )
        suffix = "-style" if style else ""
        path = f"plots/{name}-intervals{suffix}.svg"
        title = (
            f"{board_title(key)}{' (style control)' if style else ''}: score with {pct} interval"
        )
        jobs.append(
            (
                path,
                "intervals",
                dict(
                    models=rows["model"].to_list(),
                    rating=rows["rating"].to_list(),
                    lower=rows["lower"].to_list(),
                    upper=rows["upper"].to_list(),
                    title=title,
                ),
            )
        )
        figures.setdefault(key, []).append(
            {
                "src": path,
                "cls": "variant-style" if style else "variant-plain",
                "caption": f"Figure 1: confidence intervals on model strength ({pct}, top "
                f"{len(top)}{', style control' if style else ''})",
            }
        )
        pairs = table.board.pairs
        if style or pairs is None:
            continue  # the pair figures are the same for both variants (the same battles)
        shown = top_models(table, 10**9)
        rate = average_win_rate(pairs)
        best = sorted(
            (m for m in shown if m in rate and rate[m] == rate[m]), key=lambda m: (-rate[m], m)
        )[: options.plot_top]
        order = [m for m in top[: options.heatmap_top] if m in pairs.models]
        jobs += [
            (
                f"plots/{name}-winrate.svg",
                "bars",
                dict(
                    models=best,
                    values=[rate[m] for m in best],
                    ylabel="average win rate",
                    title=f"{board_title(key)}: average win rate against all other models",
                ),
            ),
            (
                f"plots/{name}-winfraction.svg",
                "heatmap",
                dict(
                    matrix=win_fraction(pairs, order),
                    models=order,
                    fmt="{:.2f}",
                    cmap="RdBu",
                    vmin=0.0,
                    vmax=1.0,
                    title="Fraction of model A wins, non-tied battles",
                ),
            ),
            (
                f"plots/{name}-counts.svg",
                "heatmap",
                dict(
                    matrix=decisive_counts(pairs, order).astype(float),
                    models=order,
                    fmt="{:.0f}",
                    cmap="Blues",
                    vmin=0.0,
                    title="Battle count, ties excluded",
                ),
            ),
        ]
        figures[key] += [
            {
                "src": f"plots/{name}-winrate.svg",
                "cls": "",
                "caption": "Figure 2: average win rate against all other models (assuming "
                "uniform sampling and no ties)",
            },
            {
                "src": f"plots/{name}-winfraction.svg",
                "cls": "wide",
                "caption": "Figure 3: fraction of model A wins for all non-tied A vs. B battles",
            },
            {
                "src": f"plots/{name}-counts.svg",
                "cls": "wide",
                "caption": "Figure 4: battle count for each combination of models (without ties)",
            },
        ]
    return jobs, figures


def _selector(keys: list[str]) -> list[tuple[str, list]]:
    groups: dict[str, list] = {}
    for key in keys:
        groups.setdefault(board_group(key), []).append(
            (key, board_title(key), f"{board_slug(key)}.html")
        )
    return list(groups.items())


def build_month(site: MonthSite, options: SiteOptions | None = None) -> BuiltMonth:
    options = options or SiteOptions()
    tables = board_tables(site)
    jobs, figures = _figure_jobs(site, tables, options)
    downloads = month_downloads(site, tables)
    extras, extra_jobs = month_extras(site, tables, list(downloads))
    extras["copilot"] = copilot_summary(site.copilot)  # a link to copilot.html when built
    pages, model_jobs = model_pages(site, tables, options)
    files = {**static_files(), **downloads}
    files.update(draw_all(jobs + extra_jobs + model_jobs, options.workers))
    keys = board_order({k for k, _ in tables})
    selector = _selector(keys)
    common = {
        "site_name": options.site_name,
        "month": site.month,
        "up": "",
        "home": "../",
        "selector": selector,
        "n_boards": len(keys),
        "level_pct": f"{site.level:.0%}",
        "min_votes": site.min_votes if site.min_votes is not None else "the minimum",
        "n_deprecated": len(site.deprecated),
    }
    for key in keys:
        variants = [(s, tables[(key, s)]) for s in (False, True) if (key, s) in tables]
        views = []
        for style, table in variants:
            views.append(
                {
                    "variant": "style" if style else "plain",
                    "key": key,
                    "second": table.second,
                    "rows": table_rows(table),
                    "hidden": table.hidden,
                    "min_votes": common["min_votes"],
                    "level_pct": common["level_pct"],
                    "heading": f"{board_title(key)}{' with style control' if style else ''}",
                    "votes": table.board.total_votes(),
                    "votes_note": votes_note(table.board),
                }
            )
        if views[0]["variant"] == "style":  # a style board alone still needs a default view
            views[0]["variant"] = "plain"
        context = {
            **common,
            "title": board_title(key),
            "board_key": key,
            "tables": views,
            "has_style": len(variants) > 1,
            "plots": figures.get(key, []),
            "plots_top": options.plot_top,
            "intro": site.source,
            "category_note": site.notes.get(key, ""),
            "votes_definition": VOTES_DEFINITION,
        }
        if key == "overall":
            files["index.html"] = page("month.html", **context, **extras)
        else:
            files[f"{board_slug(key)}.html"] = page("board.html", **context)
    if "index.html" not in files:  # no overall board (too few votes): the page says why
        why = site.skipped_boards.get("overall", "no overall board was published")
        files["index.html"] = page(
            "month.html",
            **common,
            **extras,
            title="Overall",
            board_key="overall",
            tables=[],
            has_style=False,
            plots=[],
            plots_top=0,
            intro=site.source,
            category_note=f"No overall board for {site.month}: {why}.",
            votes_definition=VOTES_DEFINITION,
        )
    files.update(pages)
    files.update(copilot_files(site.copilot, common))
    summary = _summary(site, tables, keys)
    files["summary.json"] = json.dumps(summary, indent=1, sort_keys=True).encode()
    return BuiltMonth(files, tables, summary)


def _summary(site: MonthSite, tables, keys) -> dict:
    """What the index and the history pages read back from each month's folder."""
    overall = tables.get(("overall", False))
    rows = (
        []
        if overall is None
        else [
            {
                "model": r["model"],
                "rating": r["rating"],
                "lower": r["lower"],
                "upper": r["upper"],
                "rank_ub": r["rank_all"],
                "votes": r["votes"],
                "deprecated": r["deprecated"],
            }
            for r in overall.rows.filter(pl.col("status") == "ranked").iter_rows(named=True)
        ]
    )
    leader = top_models(overall, 1) if overall is not None else []
    return {
        "month": site.month,
        "boards": len(keys),
        "leader": leader[0] if leader else None,
        "ranked_models": len(rows),
        "votes": None if overall is None else overall.board.total_votes(),
        # every board's votes, by its name in the lake (``arena_leaderboard.board``)
        "board_votes": {
            lake_board(key, style): t.board.total_votes() for (key, style), t in tables.items()
        },
        "overall": rows,
        "slugs": {r["model"]: slug(r["model"]) for r in rows},
    }
