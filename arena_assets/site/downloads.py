"""A month's downloads: the boards in arena-catalog's layout, every row of every board
(``boards.csv`` / ``boards.parquet``: ranked, unranked and hidden models, each with its
votes on the board and off it), the numbers behind the pair figures, the data card and
the history."""

from __future__ import annotations

import io
import json

import numpy as np
import polars as pl

from arena_assets.site.catalog import catalog_files
from arena_assets.site.matrices import average_win_rate, decisive_counts, win_fraction
from arena_assets.site.names import board_slug


def lake_board(key: str, style: bool) -> str:
    """A board's name in the lake's ``arena_leaderboard`` (the overall board's style twin
    is ``style_control``); a published style-controlled category gets ``<key>:style``."""
    if not style:
        return key
    return "style_control" if key == "overall" else f"{key}:style"


def month_downloads(site, tables) -> dict[str, bytes]:
    out = {
        f"downloads/{name}": data
        for name, data in catalog_files(
            [(t.board.key, style, t.board.ranked) for (_, style), t in tables.items()],
            exclude=site.deprecated,
        ).items()
    }
    frame = (
        pl.concat(
            [
                t.every_row().select(
                    pl.lit(site.month).alias("month"),
                    pl.lit(key).alias("board"),
                    pl.lit(style).alias("style_control"),
                    "model",
                    "status",
                    "reason",
                    "shown",
                    "deprecated",
                    "rating",
                    "lower",
                    "upper",
                    "votes",
                    "votes_off_board",
                    pl.col("rank").alias("rank_ub"),
                    pl.col("rank_all").alias("rank_ub_all"),
                    "organization",
                    "license",
                    "knowledge_cutoff",
                )
                for (key, style), t in tables.items()
            ]
        )
        if tables
        else pl.DataFrame()
    )
    out.update(_pair_downloads(tables))
    buf = io.BytesIO()
    frame.write_parquet(buf, compression="zstd", statistics=False)
    out["downloads/boards.parquet"] = buf.getvalue()
    out["downloads/boards.csv"] = frame.write_csv().encode()
    if site.data_card is not None:
        out["downloads/data_card.json"] = json.dumps(
            site.data_card, indent=1, sort_keys=True
        ).encode()
    if site.history is not None and not site.history.is_empty():
        out["downloads/history.csv"] = site.history.write_csv().encode()
    return out


def _pair_downloads(tables) -> dict[str, bytes]:
    """The numbers behind each board's pair figures, for every ranked model (best first):
    FastChat's win fraction and battle count without ties, the tied votes per pair, the
    board's votes (half the sum of both count matrices) and every model's average win
    rate (null where undefined)."""
    out = {}
    for (key, style), table in sorted(tables.items()):
        pairs = table.board.pairs
        if style or pairs is None:
            continue
        ranked = table.rows.filter(pl.col("status") == "ranked")["model"].to_list()
        order = [m for m in ranked if m in pairs.models]
        idx = pairs.index(order)

        def clean(matrix):
            return [[None if v != v else v for v in row] for row in matrix.tolist()]

        rate = average_win_rate(pairs)
        out[f"downloads/pairs/{board_slug(key)}.json"] = json.dumps(
            {
                "board": key,
                "models": order,
                "win_fraction": clean(win_fraction(pairs, order)),
                "battle_counts": decisive_counts(pairs, order).tolist(),
                "tie_counts": pairs.ties[np.ix_(idx, idx)].tolist(),
                "votes": table.board.total_votes(),
                "average_win_rate": {m: (None if v != v else v) for m, v in sorted(rate.items())},
            },
            sort_keys=True,
        ).encode()
    return out
