"""The bench leaderboard as a markdown table and a PNG (for the asset's metadata)."""

from __future__ import annotations

import io

import polars as pl

_COLUMNS = (
    "category",
    "model",
    "baseline",
    "win_rate",
    "lower",
    "upper",
    "games",
    "unparsed",
    "sc_win_rate",
    "sc_lower",
    "sc_upper",
    "sc_rows",
    "bt_rating",
    "style_rating",
    "single_score",
    "avg_tokens",
)
_FORMAT = {
    "win_rate": "{:.3f}",
    "lower": "{:.3f}",
    "upper": "{:.3f}",
    "sc_win_rate": "{:.3f}",
    "sc_lower": "{:.3f}",
    "sc_upper": "{:.3f}",
    "bt_rating": "{:.0f}",
    "style_rating": "{:.0f}",
    "single_score": "{:.2f}",
    "avg_tokens": "{:.0f}",
}


def board_markdown(board: pl.DataFrame) -> str:
    cols = [c for c in _COLUMNS if c in board.columns]
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    from arena_assets.report import md_escape

    # model and category names are user data: escaped so `<...>` or `|` cannot break the table
    lines = [
        "| "
        + " | ".join(
            ""
            if r[c] is None
            else md_escape(str(r[c]))
            if c in ("category", "model", "baseline")
            else _FORMAT.get(c, "{}").format(r[c])
            for c in cols
        )
        + " |"
        for r in board.select(cols).iter_rows(named=True)
    ]
    return head + "\n".join(lines)


def board_png(board: pl.DataFrame, month: str) -> bytes:
    """Win rate against the baseline with its interval, one bar per (category, model)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b = board.filter(pl.col("win_rate").is_not_null()).sort("win_rate")  # unscored: table only
    labels = b["model"].to_list()
    if "category" in b.columns and b["category"].n_unique() > 1:
        labels = [f"{c}: {m}" for c, m in zip(b["category"], b["model"])]
    fig, ax = plt.subplots(figsize=(6, 0.4 * b.height + 1.2))
    wr = b["win_rate"].to_numpy()
    err = [wr - b["lower"].to_numpy(), b["upper"].to_numpy() - wr]
    ax.barh(labels, wr, xerr=err, color="#4c72b0", capsize=3)
    ax.set_xlim(0, 1)
    level = b["level"][0] if "level" in b.columns else 0.95
    protocol = b["protocol"][0] if "protocol" in b.columns else ""
    ax.set_xlabel(f"score vs baseline ({level:.0%} bootstrap interval, {protocol})")
    ax.set_title(f"bench leaderboard {month}")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
