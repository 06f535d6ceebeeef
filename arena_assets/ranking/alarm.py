"""Model-level rigging alarm: how far each model's rating moved this month, as a z-score,
and which votes moved it.

The cumulative board of month M contains every battle of month M-1's board plus this
month's, so the two ratings are nested estimates of one quantity. For nested efficient
estimators Var(theta_{M-1} - theta_M) = Var(theta_{M-1}) - Var(theta_M) (Hausman), so

    z = (rating_M - rating_{M-1}) / sqrt(se_{M-1}^2 - se_M^2)

with both ratings centred on the mean of the models rated in both months (a new model
or the anchor moves every rating alike) and the standard errors read back from the
boards' intervals. The variance difference is floored at ``floor`` x se_M^2, so a model
whose interval barely narrowed (few new votes) does not divide by almost nothing. Under
honest traffic z is about standard normal; a planted attack moves its model by many of
its own standard errors. Reference figures: max |z| 3.47 over 90 honest model-months and
z >= 4.8 for target-only sybils at 500+ votes; ``benchmarks/rigging.py`` measures ours.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import polars as pl

Z_ALARM = 4.5  # WARN above it (honest months stay below; see the README's rigging figures)
FLOOR = 0.05


def _se(board: pl.DataFrame) -> pl.Expr:
    level = float(board["ci_level"][0]) if "ci_level" in board.columns and board.height else 0.95
    quantile = NormalDist().inv_cdf(0.5 + level / 2)
    return (pl.col("upper") - pl.col("lower")) / (2 * quantile)


def rating_moves(
    board: pl.DataFrame, previous: pl.DataFrame | None, floor: float = FLOOR
) -> pl.DataFrame:
    """Per model on both overall boards: rating, previous rating, centred move, z."""
    schema = {
        "model": pl.String,
        "rating": pl.Float64,
        "previous": pl.Float64,
        "move": pl.Float64,
        "z": pl.Float64,
    }
    if previous is None or previous.height == 0 or board.height == 0:
        return pl.DataFrame(schema=schema)
    cur = board.filter(pl.col("board") == "overall")
    old = previous.filter(pl.col("board") == "overall")
    both = cur.select("model", "rating", _se(cur).alias("se")).join(
        old.select("model", pl.col("rating").alias("previous"), _se(old).alias("se_prev")),
        on="model",
    )
    if both.height == 0:
        return pl.DataFrame(schema=schema)
    both = both.with_columns(
        pl.col("rating") - pl.col("rating").mean(), pl.col("previous") - pl.col("previous").mean()
    )
    var = pl.max_horizontal(pl.col("se_prev") ** 2 - pl.col("se") ** 2, floor * pl.col("se") ** 2)
    return both.select(
        "model",
        "rating",
        "previous",
        (pl.col("rating") - pl.col("previous")).alias("move"),
        ((pl.col("rating") - pl.col("previous")) / var.sqrt()).alias("z"),
    ).sort("z", descending=True)


def votes_that_moved(battles: pl.DataFrame, model: str, top: int = 10) -> dict:
    """The month's kept votes on ``model``: how many, its net wins (wins - losses), the
    share from fresh accounts, and the voters (or linked clusters) with the largest net
    effect in the direction of the move, each with its battle ids (first 5)."""
    kept = battles.filter(
        pl.col("keep") & ((pl.col("model_a") == model) | (pl.col("model_b") == model))
    )
    won = ((pl.col("winner") == "model_a") & (pl.col("model_a") == model)) | (
        (pl.col("winner") == "model_b") & (pl.col("model_b") == model)
    )
    lost = ((pl.col("winner") == "model_b") & (pl.col("model_a") == model)) | (
        (pl.col("winner") == "model_a") & (pl.col("model_b") == model)
    )
    unit = (
        pl.coalesce("link_cluster", "voter_hash")
        if "link_cluster" in kept.columns
        else pl.col("voter_hash")
    )
    fresh = pl.col("voter_fresh") if "voter_fresh" in kept.columns else pl.lit(False)
    scored = kept.with_columns(
        unit.alias("_unit"), (won.cast(pl.Int32) - lost.cast(pl.Int32)).alias("_net")
    )
    net = int(scored["_net"].sum()) if scored.height else 0
    sign = 1 if net >= 0 else -1
    by_unit = (
        scored.group_by("_unit")
        .agg(
            pl.col("_net").sum(),
            pl.len().alias("votes"),
            pl.col("battle_id").sort().head(5).alias("battle_ids"),
        )
        .sort(pl.col("_net") * sign, "_unit", descending=[True, False])
        .head(top)
    )
    return {
        "model": model,
        "kept_votes": scored.height,
        "net_wins": net,
        "fresh_share": round(float(scored.select(fresh.mean()).item() or 0.0), 3)
        if scored.height
        else 0.0,
        "top_voters": [
            {"voter_or_cluster": u, "net": int(n), "votes": int(v), "battle_ids": ids}
            for u, n, v, ids in by_unit.iter_rows()
        ],
    }


def alarms(
    moves: pl.DataFrame, battles: pl.DataFrame | None, threshold: float = Z_ALARM
) -> list[dict]:
    """Every model with |z| >= threshold, with the votes that moved it."""
    out = []
    for model, move, z in (
        moves.filter(pl.col("z").abs() >= threshold).select("model", "move", "z").iter_rows()
    ):
        entry = {"model": model, "z": round(z, 2), "move": round(move, 1)}
        if battles is not None:
            entry |= votes_that_moved(battles, model)
        out.append(entry)
    return out


def max_abs_z(moves: pl.DataFrame) -> float:
    return float(moves["z"].abs().max()) if moves.height else math.nan
