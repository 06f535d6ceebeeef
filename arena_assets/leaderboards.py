"""Monthly arena boards from cumulative battles: overall, style-controlled, per category.

Pure logic over the ranking library; the Dagster asset only reads battles and writes the
frame this returns (one row per board and model).
"""

from __future__ import annotations

import zlib

import polars as pl

from arena_assets.ranking import STYLE_FEATURES, TooFewModels, fit_bt, fit_style_controlled

BOARD_SCHEMA = {
    "month": pl.String,
    "board": pl.String,  # overall | style_control | language:<iso>
    "model": pl.String,
    "rating": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
    "rank": pl.Int64,
    "rank_ub": pl.Int64,
    "battles": pl.Int64,
    "ci_method": pl.String,
    "ci_level": pl.Float64,
    "rank_change": pl.Int64,  # style_control only: + = higher once style is controlled
}


def month_seed(seed: int, month: str) -> int:
    """A stable per-month seed, so a month's snapshot is reproducible on its own."""
    return (seed * 1_000_003 + zlib.crc32(month.encode())) % (2**31)


def _board(table: pl.DataFrame, month: str, board: str) -> pl.DataFrame:
    if "rank_change" not in table.columns:
        table = table.with_columns(rank_change=pl.lit(None, pl.Int64))
    return table.with_columns(month=pl.lit(month), board=pl.lit(board)).select(
        [pl.col(c).cast(t) for c, t in BOARD_SCHEMA.items()]
    )


def connected_battles(battles: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """Battles among the largest group of models linked by battles, and the models left out.

    Bradley-Terry ratings of two groups that never met (a language where some models were
    only paired among themselves) have no common scale; fitting them together would print
    arbitrary offsets, so only the largest connected group is ranked.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    models = pl.concat([battles["model_a"], battles["model_b"]]).unique().sort()
    if models.len() < 2:
        return battles, []
    index = {m: i for i, m in enumerate(models.to_list())}
    a = battles["model_a"].replace_strict(index, return_dtype=pl.Int64).to_numpy()
    b = battles["model_b"].replace_strict(index, return_dtype=pl.Int64).to_numpy()
    graph = coo_matrix(([1] * len(a), (a, b)), shape=(len(index), len(index)))
    _, label = connected_components(graph, directed=False)
    main = label == pl.Series(label).mode().sort()[0]
    keep = {m for m, i in index.items() if main[i]}
    dropped = sorted(set(index) - keep)
    if not dropped:
        return battles, []
    return battles.filter(pl.col("model_a").is_in(keep) & pl.col("model_b").is_in(keep)), dropped


def arena_boards(
    battles: pl.DataFrame,
    *,
    month: str,
    bootstrap_rounds: int = 200,
    level: float = 0.95,
    anchor: tuple[str, float] | None = None,
    min_battles: int = 300,
    min_category_battles: int = 1000,
    seed: int = 0,
) -> tuple[pl.DataFrame, dict]:
    """Boards as of ``month`` from ``battles`` (all months <= month, with ``keep``)."""
    kept, disconnected = connected_battles(
        battles.filter(pl.col("keep") & pl.col("winner").is_not_null()))
    removed = battles.filter(~pl.col("keep"))["removed_reason"].value_counts()
    info: dict = {
        "battles_used": kept.height,
        "removed_by_reason": dict(removed.iter_rows()),
        "boards": {},
        "style_coefficients": pl.DataFrame(),
        "models_not_connected": disconnected,
    }
    rs = month_seed(seed, month)
    ci = "bootstrap" if bootstrap_rounds > 0 else "sandwich"
    common = dict(anchor=anchor, ci=ci, level=level, bootstrap_rounds=bootstrap_rounds,
                  seed=rs, min_battles=min_battles)
    frames = [pl.DataFrame(schema=BOARD_SCHEMA)]
    # an early or small month may leave fewer than two models above min_battles: that
    # board is skipped (and said so in `boards`), the others are still published
    try:
        overall = fit_bt(kept, **common)
        frames.append(_board(overall.table, month, "overall"))
        info["boards"]["overall"] = kept.height
        styled = fit_style_controlled(kept, features=STYLE_FEATURES, **common)
        frames.append(_board(styled.table, month, "style_control"))
        info["boards"]["style_control"] = kept.height
        info["style_coefficients"] = styled.coefficients
    except TooFewModels as exc:
        info["boards"]["overall"] = f"skipped: {exc}"
        return pl.concat(frames), info

    # per-category boards: languages now; topic categories join once topic labels exist
    by_language = kept.group_by("language").len().filter(pl.col("len") >= min_category_battles)
    for language in sorted(by_language["language"].drop_nulls().to_list()):
        subset, _ = connected_battles(kept.filter(pl.col("language") == language))
        try:
            board = fit_bt(subset, **common)
        except TooFewModels:
            continue
        frames.append(_board(board.table, month, f"language:{language}"))
        info["boards"][f"language:{language}"] = subset.height
    return pl.concat(frames), info
