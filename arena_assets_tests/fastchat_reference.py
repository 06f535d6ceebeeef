"""A small independent implementation of FastChat's leaderboard formulas (tests only),
written from ``fastchat/serve/monitor/elo_analysis.py`` and ``monitor.py`` (never calling
ours): the win fraction is A's wins over the non-tied battles of the pair, the battle count
the non-tied battles, the average win rate the mean of a row of the win fraction over the
opponents met, Rank (UB) = 1 + the number of shown models whose 2.5 % quantile is above
this model's 97.5 % quantile. And the checks that compare the site's pages with it."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from arena_assets.storage import Lake
from arena_assets_tests.site_pages import BoardPage


def fastchat_pairs(battles: list[tuple[str, str, str]]):
    """(win fraction {(a, b): share}, non-tied counts {(a, b): n}, average win rate)."""
    no_ties = [(a, b, w) for a, b, w in battles if "tie" not in w]
    a_won, b_won, n = Counter(), Counter(), Counter()
    for a, b, w in no_ties:
        n[a, b] += 1
        (a_won if w == "model_a" else b_won)[a, b] += 1
    models = sorted({m for a, b, _ in no_ties for m in (a, b)})
    frac, count = {}, {}
    for i in models:
        for j in models:
            total = n[i, j] + n[j, i]
            count[i, j] = total
            if i != j and total:
                frac[i, j] = (a_won[i, j] + b_won[j, i]) / total
    avg = {}
    for i in models:
        row = [frac[i, j] for j in models if (i, j) in frac]
        avg[i] = sum(row) / len(row) if row else None
    return frac, count, avg


def fastchat_rank_ub(rows: list[dict]) -> dict[str, int]:
    return {r["model"]: 1 + sum(o["lower"] > r["upper"] for o in rows if o is not r) for r in rows}



def kept_battles(lake: Lake, months, language: str | None = None):
    frame = lake.read_months("battles", months, columns=["model_a", "model_b", "winner",
                                                          "keep", "language"])
    frame = frame.filter(pl.col("keep") & pl.col("winner").is_not_null())
    if language:
        frame = frame.filter(pl.col("language") == language)
    return list(frame.select("model_a", "model_b", "winner").iter_rows())


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
            expected is None or got == pytest.approx(expected, abs=1e-12)), model
    return cells


def assert_ranks_match(site_month: Path, board_page: str, board: str) -> None:
    """The page's Rank (UB), both views, against the reference on the CSV's intervals."""
    rows = pl.read_csv(site_month / "downloads" / "boards.csv").filter(
        (pl.col("board") == board) & ~pl.col("style_control") & (pl.col("status") == "ranked"))
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
