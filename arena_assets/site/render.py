"""HTML through Jinja2 with autoescaping on (every model name, reason and registry field is
text, never markup), and the cell formatting the pages share.

Jinja2 is already installed with Dagster; it is named in pyproject because the site uses
it directly.
"""

from __future__ import annotations

import math
from functools import lru_cache
from importlib import resources

import jinja2
from markupsafe import Markup

from arena_assets.site.names import board_slug, board_title, reason_sentence, slug
from arena_assets.site.tables import Board, BoardTable


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("arena_assets.site", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def page(template: str, **context) -> bytes:
    return environment().get_template(template).render(**context).encode()


def static_files() -> dict[str, bytes]:
    folder = resources.files("arena_assets.site") / "static"
    return {f"static/{name}": (folder / name).read_bytes() for name in ("site.css", "site.js")}


def link(href: str, text: str) -> Markup:
    return Markup('<a href="{}">{}</a>').format(href, text)


def safe_url(url: str | None) -> str | None:
    """Only http(s) links from a registry reach a page (no ``javascript:``)."""
    return url if isinstance(url, str) and url.startswith(("https://", "http://")) else None


def missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def num(value, digits: int = 0) -> str:
    return "—" if missing(value) else f"{value:,.{digits}f}"


def sig(value, digits: int = 4) -> str:
    """4 significant digits (what every figure that is not a score shows)."""
    return "—" if missing(value) else f"{value:.{digits}g}"


def ci(rating, lower, upper) -> str:
    if missing(rating) or missing(lower) or missing(upper):
        return "—"
    return f"+{round(upper - rating)}/-{round(rating - lower)}"


def signed(value) -> tuple[str, str]:
    """A rank difference as text and its colour class."""
    if value is None:
        return "—", ""
    return (f"+{value}", "up") if value > 0 else (str(value), "down" if value < 0 else "")


def table_rows(table: BoardTable) -> list[dict]:
    """The template's view of a board's rows (both views of every rank-like cell)."""
    out = []
    for r in table.rows.iter_rows(named=True):
        row = {
            **r,
            "slug": slug(r["model"]),
            "score": num(r["rating"]),
            "rating_v": "" if missing(r["rating"]) else f"{r['rating']:.6f}",
            "ci": ci(r["rating"], r["lower"], r["upper"]),
            "votes_v": "" if r["votes"] is None else r["votes"],
            "votes_text": num(r["votes"]),
            "off_text": num(r["votes_off_board"]),
            "rank_v": "" if r["rank"] is None else r["rank"],
            "rank_text": "—" if r["rank"] is None else r["rank"],
            "reason_text": reason_sentence(r["reason"]) if r["reason"] else "",
            "organization": r["organization"] or "",
            "license": r["license"] or "",
            "knowledge_cutoff": r["knowledge_cutoff"] or "",
        }
        for view, key in (("", "second"), ("_all", "second_all")):
            value = r[key]
            row[f"second{view}_v"] = "" if value is None else value
            if table.second == "delta":
                row[f"second{view}_text"], row[f"second{view}_cls"] = signed(value)
            else:  # Rank (StyleCtrl): green when style control ranks it higher
                rank = r["rank"] if view == "" else r["rank_all"]
                row[f"second{view}_text"] = "—" if value is None else value
                row[f"second{view}_cls"] = (
                    ""
                    if value is None or rank is None or value == rank
                    else "up"
                    if value < rank
                    else "down"
                )
        out.append(row)
    return out


def board_link(key: str, up: str = "") -> Markup:
    return link(f"{up}{board_slug(key)}.html", board_title(key))


def votes_note(board: Board) -> str:
    """The board's votes in a line ("" for a board without counts, like a published one)."""
    total = board.total_votes()
    if total is None:
        return ""
    off = board.total_votes_off_board()
    more = f"; {off:,} more kept votes involve a model it leaves out" if off else ""
    return f"{total:,} votes on this board{more}"


def month_span(months: list[str]) -> str:
    """Sorted ``YYYY-MM`` months as a range: "2024-01 to 2024-03", with the months inside it
    that are missing named ("2024-01 to 2024-04, without 2024-02")."""
    if len(months) == 1:
        return months[0]
    first, last = months[0], months[-1]
    year, mon = (int(p) for p in first.split("-"))
    inside, missing_months = set(months), []
    while (current := f"{year:04d}-{mon:02d}") < last:
        if current not in inside:
            missing_months.append(current)
        year, mon = (year + 1, 1) if mon == 12 else (year, mon + 1)
    gap = f", without {', '.join(missing_months)}" if missing_months else ""
    return f"{first} to {last}{gap}"
