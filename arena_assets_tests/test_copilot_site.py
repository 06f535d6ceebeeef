"""Copilot Arena's page on the leaderboard site: the board copilot_leaderboard wrote, read
back from the static HTML, equals the lake's table row for row; the month page links to
it; a month without a Copilot board has neither page nor link; the same board data gives
the same bytes."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import polars as pl

from arena_assets.completions.board import CopilotBoardOptions
from arena_assets.pipeline.completions import (
    completion_battles_month,
    copilot_leaderboard_month,
    read_board_data,
)
from arena_assets.simulator import World
from arena_assets.simulator.completions import generate_completions
from arena_assets.site.build import MonthSite, build_month
from arena_assets.storage import Lake

MONTH = "2024-05"


class Tables(HTMLParser):
    """Every table's body rows as lists of cell texts, keyed by the enclosing section id."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.links: list[str] = []
        self.section = None
        self.row: list[str] | None = None
        self.in_body = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
        elif tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag == "tbody":
            self.in_body = True
        elif tag == "tr" and self.in_body:
            self.row = []
        elif tag == "td" and self.row is not None:
            self.row.append("")

    def handle_endtag(self, tag):
        if tag == "tr" and self.row is not None:
            self.tables.setdefault(self.section or "", []).append(self.row)
            self.row = None
        elif tag == "tbody":
            self.in_body = False
        elif tag == "section":
            self.section = None

    def handle_data(self, data):
        if self.row is not None and self.row:
            self.row[-1] += data.strip()


def test_copilot_page_shows_the_lake_board(tmp_path: Path) -> None:
    raw, lake = tmp_path / "raw", Lake(str(tmp_path / "lake"))
    generate_completions(World.build(seed=3), raw, MONTH, 3000)
    completion_battles_month(lake, str(raw / "_completions"), MONTH, salt="s")
    copilot_leaderboard_month(
        lake, MONTH, CopilotBoardOptions(bootstrap_rounds=20, min_battles=5, level=0.9)
    )
    data = read_board_data(lake, MONTH)
    assert read_board_data(lake, "2024-06") is None

    built = build_month(MonthSite(month=MONTH, boards=[], copilot=data))
    page = built.files["copilot.html"].decode()
    parsed = Tables(page)
    board = lake.read("copilot_leaderboard", MONTH)
    for name in ("overall", "latency_controlled"):
        rows = parsed.tables[f"copilot-{name}"]
        # ordered as the chat arena's board: Rank (UB), then score
        want = board.filter(pl.col("board") == name).sort(
            ["rank_ub", "rating", "model"], descending=[False, True, False]
        )
        assert [r[1] for r in rows] == want["model"].to_list()
        assert [r[2] for r in rows] == [f"{v:,.0f}" for v in want["rating"]]
        assert [r[4] for r in rows] == [f"{v:,}" for v in want["battles"]]
        assert [r[5] for r in rows] == [f"{v:.1%}" for v in want["acceptance_rate"]]
        assert [r[0] for r in rows] == [str(v) for v in want["rank_ub"]]
        # one precision per column: every latency to the millisecond
        assert [r[6] for r in rows] == [f"{v:,.3f}" for v in want["median_latency"]]
    assert "exploratory" in page and "90% bootstrap intervals" in page  # the board's own level
    assert "Copilot Arena's own scores" in page  # the fit the board was made with
    bt = data | {"figures": data["figures"] | {"fit": "bt"}}
    assert (
        "Bradley-Terry scores"
        in build_month(MonthSite(month=MONTH, boards=[], copilot=bt)).files["copilot.html"].decode()
    )
    assert json.loads(built.files["downloads/copilot_leaderboard.json"]) == data
    assert built.files["plots/copilot-intervals.svg"].startswith(b"<?xml")
    assert "copilot.html" in Tables(built.files["index.html"].decode()).links
    assert build_month(MonthSite(month=MONTH, boards=[], copilot=data)).files == built.files

    without = build_month(MonthSite(month=MONTH, boards=[])).files
    assert (
        "copilot.html" not in without
        and "copilot.html" not in Tables(without["index.html"].decode()).links
    )
