"""The site's root: the index of months and the rating history across every month the site
holds, both rebuilt from the months' own ``summary.json`` files, so building one month
rewrites these two pages and nothing under any other month's folder."""

from __future__ import annotations

from arena_assets.site.draw import draw_all
from arena_assets.site.render import ci, link, num, page, static_files

HISTORY_TOP = 10


def build_root(
    summaries: dict[str, dict], site_name: str = "Arena leaderboard"
) -> dict[str, bytes]:
    """``summaries``: month -> that month's summary.json content."""
    months = sorted(summaries)
    common = {"site_name": site_name, "month": None, "up": "", "home": ""}
    rows = [
        (
            link(f"{m}/index.html", m),
            s["leader"] or "—",
            num(s["ranked_models"]),
            num(s["votes"]),
            num(s["boards"]),
        )
        for m, s in sorted(summaries.items(), reverse=True)
    ]
    files = dict(static_files())
    files["index.html"] = page("index.html", **common, title="Months", rows=rows)
    by_model: dict[str, dict[str, dict]] = {}
    for m in months:
        for r in summaries[m]["overall"]:
            by_model.setdefault(r["model"], {})[m] = r
    latest = summaries[months[-1]]["overall"] if months else []
    leaders = [r["model"] for r in sorted(latest, key=lambda r: (-r["rating"], r["model"]))]
    ordered = leaders + sorted(set(by_model) - set(leaders))
    header = ["Model", *months]
    table = []
    for model in ordered:
        cells = []
        for m in months:
            r = by_model[model].get(m)
            cells.append(
                "—"
                if r is None
                else f"{r['rating']:.0f} {ci(r['rating'], r['lower'], r['upper'])} "
                f"(#{r['rank_ub']})"
            )
        slug_month = next((m for m in reversed(months) if model in summaries[m]["slugs"]), None)
        name = (
            link(f"{slug_month}/models/{summaries[slug_month]['slugs'][model]}.html", model)
            if slug_month
            else model
        )
        table.append((name, *cells))
    plot = None
    if months and leaders:
        series = []
        for model in leaders[:HISTORY_TOP]:
            points = [(m, by_model[model][m]) for m in months if m in by_model[model]]
            series.append(
                (
                    model,
                    [m for m, _ in points],
                    [r["rating"] for _, r in points],
                    [r["lower"] for _, r in points],
                    [r["upper"] for _, r in points],
                )
            )
        files.update(
            draw_all(
                [
                    (
                        "plots/history.svg",
                        "history",
                        dict(series=series, title="Overall score per month"),
                    )
                ]
            )
        )
        plot = "plots/history.svg"
    files["history.html"] = page(
        "history.html",
        **common,
        title="Rating history",
        months=months,
        plot=plot,
        header=header,
        rows=table,
        nums=tuple(range(1, len(header))),
    )
    return files
