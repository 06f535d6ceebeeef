"""The month's Copilot Arena page (``copilot.html``): the code-completion board that
``copilot_leaderboard`` wrote beside its table (``pipeline.completions.read_board_data``).

Copilot Arena ranks models by which of two completions a user accepts in the editor, so
the page is its own board, not a category of the chat arena: the overall board (Rank (UB),
score, interval, accepted pairs, acceptance rate, median latencies), the language boards,
the latency-controlled board marked exploratory with its coefficient, the acceptance rate
by how long the user waited, and the figures' definitions. A month without a Copilot board
has no page and no link.
"""

from __future__ import annotations

import json

from arena_assets.site.draw import draw_all
from arena_assets.site.render import missing, num, page

PAGE = "copilot.html"
FIGURE = "plots/copilot-intervals.svg"
HEADERS = [
    "Rank (UB)",
    "Model",
    "Score",
    "Interval",
    "Battles",
    "Acceptance rate",
    "Median latency (s)",
    "Median wait (s)",
]
NUMS = (0, 2, 4, 5, 6, 7)


def _pct(value) -> str:
    return "—" if missing(value) else f"{value:.1%}"


def _interval(row: dict) -> str:
    if any(missing(row.get(k)) for k in ("rating", "lower", "upper")):
        return "—"
    return f"+{round(row['upper'] - row['rating'])}/-{round(row['rating'] - row['lower'])}"


LATENCY_DIGITS = 3  # seconds to the millisecond, every latency cell alike


def by_rank(rows: list[dict]) -> list[dict]:
    """A board's rows as the chat arena's board orders them: Rank (UB), then score, then
    name (a row without a rank or score last)."""

    def key(r: dict) -> tuple:
        rank, rating = r.get("rank_ub"), r.get("rating")
        return (
            rank is None,
            rank if rank is not None else 0,
            -rating if not missing(rating) else float("inf"),
            r["model"],
        )

    return sorted(rows, key=key)


def _rows(rows: list[dict]) -> list[tuple]:
    return [
        (
            r.get("rank_ub") if r.get("rank_ub") is not None else "—",
            r["model"],
            num(r.get("rating")),
            _interval(r),
            num(r.get("battles")),
            _pct(r.get("acceptance_rate")),
            num(r.get("median_latency"), LATENCY_DIGITS),
            num(r.get("median_pair_latency"), LATENCY_DIGITS),
        )
        for r in by_rank(rows)
    ]


def _board_title(name: str) -> str:
    if name == "overall":
        return "Overall"
    if name == "latency_controlled":
        return "Latency controlled (exploratory)"
    return f"Language: {name.split(':', 1)[1]}" if name.startswith("file_type:") else name


def copilot_summary(data: dict | None) -> dict | None:
    """What the month page says about the Copilot board (None: no board this month)."""
    if not data or not data.get("boards", {}).get("overall"):
        return None
    top = by_rank(data["boards"]["overall"])[0]
    return {
        "href": PAGE,
        "leader": top["model"],
        "models": len(data["boards"]["overall"]),
        "pairs": data.get("figures", {}).get("accepted_pairs"),
    }


def copilot_files(data: dict | None, common: dict) -> dict[str, bytes]:
    """``copilot.html``, its interval figure and the board's JSON (``downloads/``), or
    nothing when the month has no Copilot board with ranked models."""
    if copilot_summary(data) is None:
        return {}
    boards, figures = data["boards"], data.get("figures", {})
    order = [
        "overall",
        "latency_controlled",
        *sorted(k for k in boards if k.startswith("file_type:")),
    ]
    overall = by_rank(boards["overall"])
    files = draw_all(
        [
            (
                FIGURE,
                "intervals",
                dict(
                    models=[r["model"] for r in overall],
                    rating=[r["rating"] for r in overall],
                    lower=[r["lower"] for r in overall],
                    upper=[r["upper"] for r in overall],
                    title="Copilot Arena: score with interval",
                ),
            )
        ]
    )
    latency, months = data.get("latency_control", {}), figures.get("months", [])
    waits = [
        (
            f"{w['wait_from_s']:g}–{w['wait_to_s']:g} s"
            if w.get("wait_to_s") is not None
            else f"≥ {w['wait_from_s']:g} s",
            num(w["pairs"]),
            _pct(w["acceptance_rate"]),
        )
        for w in figures.get("acceptance_by_wait", [])
    ]
    facts = [
        ("Completion pairs shown", num(figures.get("pairs"))),
        ("Pairs with an accepted completion", num(figures.get("accepted_pairs"))),
        ("Pairs from the server's records", num(figures.get("logged_pairs"))),
        ("Acceptance rate (server records)", _pct(figures.get("acceptance_rate"))),
        ("Top completion's share of acceptances", _pct(figures.get("top_share"))),
    ]
    coef = (
        "—"
        if "coef" not in latency
        else f"{num(latency['coef'], 3)} ({num(latency.get('lower'), 3)} to "
        f"{num(latency.get('upper'), 3)}), {num(latency.get('pairs'))} pairs with both latencies"
    )
    level = figures.get("ci_level")
    files[PAGE] = page(
        "copilot.html",
        **common | ({"level_pct": f"{level:.0%}"} if level else {}),
        title="Copilot Arena",
        tables=[
            {"name": k, "title": _board_title(k), "rows": _rows(boards[k])}
            for k in order
            if k in boards
        ],
        headers=HEADERS,
        nums=NUMS,
        figure_src=FIGURE,
        facts=facts,
        waits=waits,
        latency_coef=coef,
        latency_error=latency.get("error"),
        months=" to ".join(months[:1] + months[-1:]) if len(months) > 1 else "",
        unaccepted_as_ties=bool(figures.get("include_unaccepted")),
        copilot_fit=figures.get("fit", "bt"),  # a board written without it was Bradley-Terry
        notes=data.get("notes", {}),
    )
    files["downloads/copilot_leaderboard.json"] = json.dumps(
        data, indent=1, sort_keys=True
    ).encode()
    return files
