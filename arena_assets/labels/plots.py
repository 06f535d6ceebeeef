"""PNG of the month's topic clusters for the materialization metadata."""

from __future__ import annotations

import polars as pl

from arena_assets.figures import plt, png_bytes


def topic_clusters_png(summary: pl.DataFrame, title: str, top: int = 30) -> bytes:
    """Largest clusters as bars (conversations), coloured by mean criteria count (0-7)."""
    rows = summary.sort("n_conversations", descending=True).head(top)
    fig, ax = plt.subplots(figsize=(7, 0.26 * max(rows.height, 4) + 1.2))
    y = list(range(rows.height))[::-1]
    crit = rows["mean_criteria"].fill_null(0).to_list()
    ax.barh(y, rows["n_conversations"].to_list(), color=plt.cm.viridis([c / 7 for c in crit]))
    names = [n if len(n) <= 40 else n[:39] + "…" for n in rows["cluster_name"].to_list()]
    ax.set_yticks(y, names, fontsize=7)
    ax.set_xlabel("conversations")
    ax.set_title(title, fontsize=9)
    sm = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(0, 7))
    fig.colorbar(sm, ax=ax, label="mean criteria (of 7)", fraction=0.04)
    ax.grid(axis="x", alpha=0.3)
    return png_bytes(fig)
