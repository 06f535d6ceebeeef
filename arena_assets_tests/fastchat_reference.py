"""A small independent implementation of FastChat's leaderboard formulas (tests only),
written from ``fastchat/serve/monitor/elo_analysis.py`` and ``monitor.py``: the win fraction
is A's wins over the non-tied battles of the pair, the battle count the non-tied battles,
the average win rate the mean of a row of the win fraction over the opponents met, Rank
(UB) = 1 + the number of shown models whose 2.5 % quantile is above this model's 97.5 %
quantile. It imports nothing of arena_assets: battles are read from the lake's Parquet
files with polars. The checks that compare the site's pages with it: ``site_pages``.

Where FastChat's own pandas code departs from this (its documented intent), see
``test_site_inputs.py::test_fastchat_pandas_win_fraction_differs_only_where_a_side_never_won``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl


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


def kept_battles(lake_root, months, language: str | None = None):
    """(model_a, model_b, winner) of the kept battles with a winner of ``months``, read from
    the lake's files (``<lake>/battles/<YYYY-MM>.parquet``)."""
    frame = pl.concat(
        [
            pl.read_parquet(
                Path(lake_root) / "battles" / f"{m}.parquet",
                columns=["model_a", "model_b", "winner", "keep", "language"],
            )
            for m in months
        ]
    )
    frame = frame.filter(pl.col("keep") & pl.col("winner").is_not_null())
    if language:
        frame = frame.filter(pl.col("language") == language)
    return list(frame.select("model_a", "model_b", "winner").iter_rows())
