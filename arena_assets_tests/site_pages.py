"""Reading the leaderboard site's pages back as a reader's browser gets them (tests only):
the board tables from the static HTML, with no JavaScript run; and the checks that compare
what the site shows with ``fastchat_reference``."""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from arena_assets_tests.fastchat_reference import fastchat_pairs, fastchat_rank_ub


class BoardPage(HTMLParser):
    """Rows of every board table on a page: ``rows[variant]`` is a list of dicts with the
    row's ``model``, ``classes``, ``reason`` (the "unranked, because ..." text) and, per cell class (``rank``, ``second``, ``score``,
    ``votes``), its ``data-v`` / ``data-v-all`` and the text of the default view."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: dict[str, list[dict]] = {}
        self.votes: dict[str, int] = {}  # variant -> the board's votes ("N votes on this board")
        self.variant: str | None = None
        self.row: dict | None = None
        self.cell: str | None = None
        self.hide = 0  # inside a span of the show-deprecated view (.v-all)
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "section" and any(c.startswith("variant-") for c in classes):
            self.variant = next(c for c in classes if c.startswith("variant-"))[8:]
            self.rows.setdefault(self.variant, [])
        elif tag == "p" and "votes-note" in classes and self.variant:
            self.votes[self.variant] = int(a["data-votes"])
        elif tag == "tr" and "data-model" in a and self.variant:
            self.row = {"model": a["data-model"], "classes": classes, "cells": {}, "reason": None}
        elif tag == "td" and self.row is not None:
            kind = next((c for c in classes if c in ("rank", "second", "score", "votes")), None)
            self.cell = kind
            if kind:
                self.row["cells"][kind] = {
                    "v": a.get("data-v"),
                    "v_all": a.get("data-v-all"),
                    "text": "",
                }
        elif (tag == "span" and "v-all" in classes) or (tag == "span" and self.hide):
            self.hide += 1

    def handle_endtag(self, tag):
        if tag == "span" and self.hide:
            self.hide -= 1
        elif tag == "td":
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.rows[self.variant].append(self.row)
            self.row = None
        elif tag == "section":
            self.variant = None

    def handle_data(self, data):
        if self.row is not None and self.cell and not self.hide:
            self.row["cells"][self.cell]["text"] += data.strip()
        if self.row is not None and data.strip().startswith("unranked, because"):
            self.row["reason"] = data.strip()


def assert_pairs_match(pairs_file: Path, battles) -> int:
    """The site's numbers behind its pair figures equal the reference; returns the
    number of matrix cells compared."""
    site = json.loads(pairs_file.read_text())
    frac, count, avg = fastchat_pairs(battles)
    models = site["models"]
    cells = 0
    for i, a in enumerate(models):
        for j, b in enumerate(models):
            expected = frac.get((a, b))
            got = site["win_fraction"][i][j]
            assert (got is None) == (expected is None), (a, b, got, expected)
            if expected is not None:
                assert got == pytest.approx(expected, abs=1e-12), (a, b)
            assert site["battle_counts"][i][j] == (count.get((a, b), 0) if a != b else 0)
            cells += 1
    for model, expected in avg.items():
        got = site["average_win_rate"][model]
        assert (got is None) == (expected is None) and (
            expected is None or got == pytest.approx(expected, abs=1e-12)
        ), model
    return cells


def assert_ranks_match(site_month: Path, board_page: str, board: str) -> None:
    """The page's Rank (UB), both views, against the reference on the CSV's intervals."""
    rows = pl.read_csv(site_month / "downloads" / "boards.csv").filter(
        (pl.col("board") == board) & ~pl.col("style_control") & (pl.col("status") == "ranked")
    )
    everyone = rows.to_dicts()
    shown = [r for r in everyone if not r["deprecated"]]
    expected, expected_all = fastchat_rank_ub(shown), fastchat_rank_ub(everyone)
    page = BoardPage((site_month / board_page).read_text())
    ranked = [r for r in page.rows["plain"] if "ranked" in r["classes"]]
    assert {r["model"] for r in ranked} == {r["model"] for r in everyone}
    for r in ranked:
        rank = r["cells"]["rank"]
        assert int(rank["v_all"]) == expected_all[r["model"]]
        if "deprecated" in r["classes"]:
            assert rank["v"] == ""  # hidden in the default view, no rank there
        else:
            assert int(rank["v"]) == int(rank["text"]) == expected[r["model"]]


def assert_catalog_layout(data: dict, path) -> None:
    assert list(data) == sorted(data), path
    for category, models in data.items():
        ratings = [e["rating"] for e in models.values()]
        assert ratings == sorted(ratings, reverse=True), (path, category)
        for model, entry in models.items():
            assert list(entry) == ["rating", "rating_q975", "rating_q025"], (path, model)
            assert all(isinstance(v, float) and math.isfinite(v) for v in entry.values())


def assert_votes_reconcile(site_month: Path, catalog, lake_root) -> int:
    """One count of votes on every board of a site month, everywhere it is written: the
    page ("N votes on this board" and each model's Votes cell), ``boards.csv`` (every
    model's votes, the hidden and unranked ones with their reason), ``summary.json``, the
    pair files (decisive and tied votes among the ranked models) and the lake's boards as
    the DuckDB ``catalog`` (a connection) serves them (``arena_leaderboard.battles``, the
    leaderboard's left-out models). Returns the number of boards compared."""
    from arena_assets.pipeline.leaderboards import read_info
    from arena_assets.site.downloads import lake_board
    from arena_assets.site.names import board_slug
    from arena_assets.storage import Lake

    month = site_month.name
    csv = pl.read_csv(site_month / "downloads" / "boards.csv")
    summary = json.loads((site_month / "summary.json").read_text())
    left_out = read_info(Lake(str(lake_root)), month)["left_out"]
    boards = csv.select("board", "style_control").unique().sort("board", "style_control").rows()
    assert boards and set(summary["board_votes"]) == {lake_board(b, s) for b, s in boards}
    for board, style in boards:
        name = lake_board(board, style)
        rows = csv.filter((pl.col("board") == board) & (pl.col("style_control") == style))
        fitted = dict(
            catalog.execute(
                "select model, battles from arena_leaderboard where month = ? and board = ?",
                [month, name],
            ).fetchall()
        )
        ranked = rows.filter(pl.col("status") == "ranked")
        unranked = rows.filter(pl.col("status") == "unranked")
        # the models: ranked as the catalog ranks them, every other one with its reason
        assert dict(zip(ranked["model"], ranked["votes"])) == fitted, name
        assert dict(zip(unranked["model"], unranked["reason"])) == left_out[name], name
        assert (unranked["votes"] == 0).all() and unranked["rank_ub_all"].null_count() == (
            unranked.height
        )
        hidden = unranked.filter(pl.col("reason").is_in(["under_min_battles", "no_battles"]))
        assert set(hidden["model"]) == set(rows.filter(~pl.col("shown"))["model"]), name
        # the board's votes, each counted once, the same in all four places
        votes = summary["board_votes"][name]
        assert sum(fitted.values()) == 2 * votes == rows["votes"].sum(), name
        html = (site_month / f"{board_slug(board)}.html").read_text()
        page = BoardPage(html)
        variant = "style" if style else "plain"
        if variant not in page.rows:  # a style board alone is the page's default view
            variant = "plain"
        assert page.votes[variant] == votes, name
        assert f"{votes:,} votes on this board" in html
        cells = {r["model"]: r["cells"]["votes"]["v"] for r in page.rows[variant]}
        shown = rows.filter("shown")
        assert cells == {m: str(v) for m, v in zip(shown["model"], shown["votes"])}, name
        for model, off in hidden.select("model", "votes_off_board").rows():
            assert f"{model} ({off:,} kept votes here)" in html, (name, model)
        if not style:
            pairs = json.loads(
                (site_month / "downloads/pairs" / f"{board_slug(board)}.json").read_text()
            )
            assert pairs["votes"] == votes, name
            decisive = sum(map(sum, pairs["battle_counts"]))
            assert decisive + sum(map(sum, pairs["tie_counts"])) == 2 * votes, name
    return len(boards)
