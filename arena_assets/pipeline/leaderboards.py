"""The leaderboards steps: cumulative battles -> ``arena_leaderboard`` (boards as of a
month) and the boards so far -> ``leaderboard_history``; figures and plots included.

Month M's snapshot is fitted on the kept battles of every month <= M in the lake, so it
never depends on later months.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from arena_assets.ranking.boards import LABEL_COLUMNS, arena_boards
from arena_assets.ranking.options import FitOptions
from arena_assets.ranking.schema import HISTORY_SCHEMA
from arena_assets.storage import Lake


TOPIC_LABEL_COLUMNS = ["conv_id", *LABEL_COLUMNS, "refusal"]


@dataclass
class LeaderboardMonth:
    """What the arena_leaderboard step wrote and the figures its metadata and check need."""

    month: str
    boards: pl.DataFrame
    info: dict  # arena_boards' info: battles per board, left_out, style coefficients, ...
    months: list[str]  # the battle months covered
    url: str
    png: bytes  # the overall board with its intervals
    png_url: str
    bad_interval_rows: int  # rows where rating is outside [lower, upper]

    @property
    def overall(self) -> pl.DataFrame:
        return self.boards.filter(pl.col("board") == "overall")

    def top(self) -> pl.DataFrame:
        return self.overall.select("rank", "rank_ub", "model", pl.col("rating").round(1),
                                   pl.col("lower").round(1), pl.col("upper").round(1), "battles")


def arena_leaderboard_month(
    lake: Lake, month: str, options: FitOptions | None = None, *, min_category_battles: int = 1000
) -> LeaderboardMonth:
    """Boards as of ``month`` from every month's battles up to it -> ``arena_leaderboard``."""
    from arena_assets.ranking.plots import ratings_with_intervals

    months = lake.months("battles", upto=month)
    labelled = [m for m in months if lake.exists("topic_labels", m)]
    labels = (lake.read_months("topic_labels", labelled, columns=TOPIC_LABEL_COLUMNS)
              if labelled else None)
    boards, info = arena_boards(lake.read_months("battles", months), month=month,
                                options=options, min_category_battles=min_category_battles,
                                labels=labels)
    # a month without topic labels gives no category boards for its battles (said here)
    info["months_without_topic_labels"] = [m for m in months if m not in labelled]
    url = lake.write("arena_leaderboard", month, boards)
    overall = boards.filter(pl.col("board") == "overall")
    png = ratings_with_intervals(overall, f"Arena leaderboard up to {month}")
    png_url = lake.write_blob("arena_leaderboard", f"{month}.png", png)
    bad = boards.filter((pl.col("lower") > pl.col("rating")) | (pl.col("rating") > pl.col("upper")))
    return LeaderboardMonth(month, boards, info, months, url, png, png_url, bad.height)


@dataclass
class HistoryMonth:
    month: str
    history: pl.DataFrame
    url: str
    png: bytes
    png_url: str


def leaderboard_history_month(lake: Lake, month: str) -> HistoryMonth:
    """Every model's overall rating and interval per snapshot month up to ``month``."""
    from arena_assets.ranking.plots import rating_history

    months = lake.months("arena_leaderboard", upto=month)
    history = (
        lake.read_months("arena_leaderboard", months)
        .filter(pl.col("board") == "overall")
        .select(pl.col("month").alias("snapshot_month"), "model", "rating", "lower",
                "upper", "rank", "rank_ub", "battles")
        .sort("snapshot_month", "rank", "model")
    )
    # `month` is the partition (history as of that month), as in every other table
    history = history.select(pl.lit(month).alias("month"), pl.all())
    history = history.select([pl.col(c).cast(t) for c, t in HISTORY_SCHEMA.items()])
    url = lake.write("leaderboard_history", month, history)
    png = rating_history(history, f"Rating history up to {month}")
    png_url = lake.write_blob("leaderboard_history", f"{month}.png", png)
    return HistoryMonth(month, history, url, png, png_url)
