"""The leaderboards steps: a month's battles -> ``battle_cells`` (counted), the cells of
every month so far -> ``arena_leaderboard`` (boards as of a month) and the boards so far ->
``leaderboard_history``; figures and plots included.

Month M's snapshot is fitted on the kept battles of every month <= M in the lake, so it
never depends on later months. It reads earlier months' counted cells, not their rows
(style control reads only its feature columns), so a refresh stays cheap as months pile up.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from arena_assets.labels.tags import CRITERIA, VISION_TAGS
from arena_assets.ranking.battle_cells import CELL_COLUMNS, battle_cells, style_columns
from arena_assets.ranking.boards import CATEGORY_ROW_COLUMNS, LABEL_COLUMNS, boards_from_cells
from arena_assets.ranking.options import FitOptions
from arena_assets.ranking.schema import HISTORY_SCHEMA
from arena_assets.storage import Lake

# what the category boards read from topic_labels; the flat labels and prompt_chars let a
# partition written before `category_tag` and `user_tokens` were stored serve too
TOPIC_LABEL_COLUMNS = [
    "conv_id",
    *LABEL_COLUMNS,
    "refusal",
    "prompt_chars",
    *CRITERIA,
    "math",
    "creative_writing",
    "if_score",
    *(f"vision_{v}" for v in VISION_TAGS),
    "vision_creative_writing",
]


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
        return self.overall.select(
            "rank",
            "rank_ub",
            "model",
            pl.col("rating").round(1),
            pl.col("lower").round(1),
            pl.col("upper").round(1),
            "battles",
        )


@dataclass
class CellsMonth:
    month: str
    cells: pl.DataFrame
    battles: int
    url: str

    @property
    def conserved(self) -> bool:
        return int(self.cells["n"].sum()) == self.battles


def battle_cells_month(lake: Lake, month: str) -> CellsMonth:
    """The month's battles counted per cell -> the lake's ``battle_cells``."""
    battles = read_present(lake, "battles", month, CELL_COLUMNS)
    cells = battle_cells(battles, month)
    return CellsMonth(month, cells, battles.height, lake.write("battle_cells", month, cells))


def rating_alarm_info(lake: Lake, month: str, boards: pl.DataFrame) -> dict:
    """Each model's rating move against the latest earlier snapshot as a z-score, and the
    models past the alarm with the votes that moved them (`ranking/alarm.py`)."""
    from arena_assets.ranking.alarm import (
        alarms,
        cohort_warnings,
        downweighted_cohorts,
        max_abs_z,
        rating_moves,
    )

    earlier = [m for m in lake.months("arena_leaderboard", upto=month) if m != month]
    previous = lake.read("arena_leaderboard", earlier[-1]) if earlier else None
    moves = rating_moves(boards, previous)
    battles = (
        read_present(
            lake,
            "battles",
            month,
            [
                "battle_id",
                "model_a",
                "model_b",
                "winner",
                "keep",
                "voter_hash",
                "link_cluster",
                "voter_fresh",
                "weight",
                "weight_reason",
            ],
        )
        if lake.exists("battles", month)
        else None
    )
    return {
        "rating_moves_vs": earlier[-1] if earlier else None,
        "max_abs_z": max_abs_z(moves),
        "rating_alarms": alarms(moves, battles),
        "cohort_warnings": cohort_warnings(moves, battles),
        "downweighted_cohorts": downweighted_cohorts(battles),
    }


def cells_of(lake: Lake, months: list[str]) -> pl.DataFrame:
    """The ``battle_cells`` of ``months``; a month whose cells were never written (a lake
    from before battle_cells, a library caller that rebuilt battles only) is counted from
    its rows here, not written."""
    counted = set(lake.months("battle_cells"))
    return pl.concat(
        [
            lake.read("battle_cells", m)
            if m in counted
            else battle_cells(read_present(lake, "battles", m, CELL_COLUMNS), m)
            for m in months
        ],
        how="diagonal_relaxed",  # cells counted before weights have no ``w``
    )


def read_present(lake: Lake, asset: str, month: str, wanted) -> pl.DataFrame:
    """The ``wanted`` columns a partition has (battles imported from other formats may lack
    conversation ids or turns; the boards then treat them as unlabelled)."""

    names = set(lake.schema(asset, month).names)
    return lake.read(asset, month, columns=[c for c in wanted if c in names])


def labels_of(lake: Lake, month: str) -> pl.DataFrame:
    """A month's topic labels as the boards read them (``category_tag`` made from the flat
    labels for a partition written before it was stored)."""
    from arena_assets.labels.tags import tag_from_flat

    frame = read_present(lake, "topic_labels", month, TOPIC_LABEL_COLUMNS)
    if "category_tag" not in frame.columns:
        frame = frame.with_columns(category_tag=tag_from_flat())
    if "user_tokens" not in frame.columns:
        frame = frame.with_columns(user_tokens=(pl.col("prompt_chars") // 4).cast(pl.Int32))
    return frame.select("conv_id", *LABEL_COLUMNS)


def arena_leaderboard_month(
    lake: Lake, month: str, options: FitOptions | None = None, *, min_category_battles: int = 1000
) -> LeaderboardMonth:
    """Boards as of ``month`` from every month's battles up to it -> ``arena_leaderboard``."""
    from arena_assets.ranking.boards import board_options
    from arena_assets.ranking.plots import ratings_with_intervals

    options = options or board_options()
    months = lake.months("battles", upto=month)
    if not months:
        raise FileNotFoundError(f"no battles up to {month} in the lake")
    cells = cells_of(lake, months)
    style_rows = pl.concat(
        [read_present(lake, "battles", m, style_columns(options)) for m in months],
        how="diagonal_relaxed",
    )
    # category boards: the rows' few columns joined to the topic labels of those months
    category_rows = pl.concat(
        [read_present(lake, "battles", m, CATEGORY_ROW_COLUMNS) for m in months],
        how="diagonal_relaxed",
    )
    labelled = [m for m in months if lake.exists("topic_labels", m)]
    labels = (
        pl.concat([labels_of(lake, m) for m in labelled], how="diagonal_relaxed")
        if labelled
        else None
    )
    boards, info = boards_from_cells(
        cells,
        style_rows,
        month=month,
        options=options,
        min_category_battles=min_category_battles,
        category_rows=category_rows,
        labels=labels,
    )
    # a month without topic labels gives no category boards for its battles (said here)
    info["months_without_topic_labels"] = [m for m in months if m not in labelled]
    url = lake.write("arena_leaderboard", month, boards)
    # what the table cannot hold (left-out models and why, skipped boards, style
    # coefficients), beside it for readers after this run (the leaderboard site)
    lake.write_blob("arena_leaderboard", f"{month}.json", info_json(info))
    overall = boards.filter(pl.col("board") == "overall")
    png = ratings_with_intervals(overall, f"Arena leaderboard up to {month}")
    png_url = lake.write_blob("arena_leaderboard", f"{month}.png", png)
    bad = boards.filter((pl.col("lower") > pl.col("rating")) | (pl.col("rating") > pl.col("upper")))
    info |= rating_alarm_info(lake, month, boards)
    return LeaderboardMonth(month, boards, info, months, url, png, png_url, bad.height)


def info_json(info: dict) -> bytes:
    """``boards_from_cells``' info as JSON (NaN -> null), keys sorted: same info, same bytes."""
    import json
    import math

    coef = info.get("style_coefficients")
    rows = coef.to_dicts() if isinstance(coef, pl.DataFrame) else []
    rows = [
        {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
        for r in rows
    ]
    keep = {k: v for k, v in info.items() if k != "style_coefficients"}
    return json.dumps(
        {**keep, "style_coefficients": rows}, sort_keys=True, indent=1, allow_nan=False
    ).encode()


def read_info(lake: Lake, month: str) -> dict | None:
    """The info ``arena_leaderboard_month`` wrote beside the month's boards (None if absent)."""
    import json

    path = (
        f"{lake.partition_path('arena_leaderboard', month).rsplit('/', 1)[0]}/_files/{month}.json"
    )
    if not lake.fs.exists(path):
        return None
    with lake.fs.open(path, "rb") as fh:
        return json.loads(fh.read())


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
        .select(
            pl.col("month").alias("snapshot_month"),
            "model",
            "rating",
            "lower",
            "upper",
            "rank",
            "rank_ub",
            "battles",
        )
        .sort("snapshot_month", "rank", "model")
    )
    # `month` is the partition (history as of that month), as in every other table
    history = history.select(pl.lit(month).alias("month"), pl.all())
    history = history.select([pl.col(c).cast(t) for c, t in HISTORY_SCHEMA.items()])
    url = lake.write("leaderboard_history", month, history)
    png = rating_history(history, f"Rating history up to {month}")
    png_url = lake.write_blob("leaderboard_history", f"{month}.png", png)
    return HistoryMonth(month, history, url, png, png_url)
