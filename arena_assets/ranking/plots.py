"""PNG figures for leaderboards (matplotlib, headless Agg backend), returned as bytes."""

from __future__ import annotations

import polars as pl

from arena_assets.figures import plt, png_bytes


def ratings_with_intervals(board: pl.DataFrame, title: str, top: int = 30) -> bytes:
    """Horizontal bars: rating with its interval, best at the top."""
    rows = board.sort("rating", descending=True).head(top)
    fig, ax = plt.subplots(figsize=(7, 0.28 * max(rows.height, 4) + 1))
    y = list(range(rows.height))[::-1]
    rating = rows["rating"].to_numpy()
    # a bootstrap percentile interval can miss its point estimate on thin data (the
    # intervals_contain_ratings check reports it); matplotlib refuses negative bar lengths
    err = [(rating - rows["lower"].to_numpy()).clip(0), (rows["upper"].to_numpy() - rating).clip(0)]
    ax.errorbar(rating, y, xerr=err, fmt="o", color="#1f5fa6", ecolor="#8fb3de", capsize=2)
    ax.set_yticks(y, rows["model"].to_list(), fontsize=7)
    ax.set_xlabel("rating (Elo scale)")
    ax.set_title(title, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    return png_bytes(fig)


def rating_history(history: pl.DataFrame, title: str, top: int = 10) -> bytes:
    """Rating per snapshot month (column ``snapshot_month``) of the latest leaders."""
    latest = history["snapshot_month"].max()
    # an empty history (no month has a board yet) still gets a plot, saying so
    leaders = (
        []
        if latest is None
        else (
            history.filter(pl.col("snapshot_month") == latest)
            .sort("rating", descending=True)
            .head(top)["model"]
            .to_list()
        )
    )
    fig, ax = plt.subplots(figsize=(7, 4))
    for model in leaders:
        line = history.filter(pl.col("model") == model).sort("snapshot_month")
        ax.plot(line["snapshot_month"].to_list(), line["rating"].to_list(), marker="o", label=model)
        ax.fill_between(
            line["snapshot_month"].to_list(),
            line["lower"].to_list(),
            line["upper"].to_list(),
            alpha=0.12,
        )
    ax.set_ylabel("rating (Elo scale)")
    ax.set_title(title if leaders else f"{title} (no board yet)", fontsize=9)
    if leaders:
        ax.legend(fontsize=6, loc="best")
    ax.grid(alpha=0.3)
    return png_bytes(fig)
