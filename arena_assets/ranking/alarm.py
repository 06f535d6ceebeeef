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

A move driven by accounts without history warns earlier (``cohort_warnings``): a model
whose rating moved beyond its 95 % interval (|z| >= ``Z_COHORT_MOVE``) while this month's
kept votes on it from fresh accounts (``voter_fresh``) deviate from the established
voters' votes on it in the same direction (a two-sample z, scores 1 / 1/2 /
0 from the model's side; the variance clustered by voter, as one voter's votes are not
independent) past ``cohort_z``: Bonferroni over the board's models at ``COHORT_ALPHA``
(3.40 for 30 models), so an honest month warns on some model with probability about
``COHORT_ALPHA`` x 5 %. It is named with the fresh votes' count, share and net wins; a few
hundred votes from new accounts make both deviations at once. The battle filter's
down-weights of the month (``weight_reason``) are listed beside it
(``downweighted_cohorts``).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import polars as pl

Z_ALARM = 4.5  # WARN above it (honest months stay below; see the README's rigging figures)
Z_COHORT_MOVE = 1.96  # a move beyond its 95 % interval ...
COHORT_ALPHA = 0.01  # ... while the fresh accounts' votes deviate past Bonferroni at this
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


def cohort_z(n_models: int, alpha: float = COHORT_ALPHA) -> float:
    """The fresh deviation a warning needs: one-sided, Bonferroni over the models."""
    return NormalDist().inv_cdf(1.0 - alpha / max(1, n_models))


def _scored(battles: pl.DataFrame, model: str) -> pl.DataFrame:
    """Kept votes on ``model``: its score (1 won, 1/2 tie, 0 lost), freshness, voter."""
    on = (pl.col("model_a") == model) | (pl.col("model_b") == model)
    won = ((pl.col("winner") == "model_a") & (pl.col("model_a") == model)) | (
        (pl.col("winner") == "model_b") & (pl.col("model_b") == model)
    )
    tie = pl.col("winner").is_in(["tie", "tie (bothbad)"])
    fresh = (
        pl.col("voter_fresh").fill_null(False)
        if "voter_fresh" in battles.columns
        else pl.lit(False)
    )
    # without voter ids each vote is its own cluster
    voter = pl.col("voter_hash") if "voter_hash" in battles.columns else pl.col("battle_id")
    return battles.filter(pl.col("keep") & on).select(
        pl.when(won).then(1.0).when(tie).then(0.5).otherwise(0.0).alias("y"),
        fresh.alias("fresh"),
        voter.cast(pl.String).alias("voter"),
    )


def _mean_and_var(votes: pl.DataFrame) -> tuple[float, float]:
    """The mean score and its variance clustered by voter (CR1): a voter who casts ten
    votes the same way is one draw, not ten."""
    mean = float(votes["y"].mean())
    clusters = votes.group_by("voter").agg((pl.col("y") - mean).sum().alias("r"))
    g, n = clusters.height, votes.height
    var = float((clusters["r"] ** 2).sum()) / n**2 * (g / (g - 1) if g > 1 else 1.0)
    return mean, var


def fresh_deviation(battles: pl.DataFrame, model: str) -> dict:
    """This month's kept votes on ``model`` from fresh accounts against the established
    voters' (two-sample z of the mean score, clustered by voter; positive: the fresh ones
    favour it)."""
    scored = _scored(battles, model)
    fresh, old = scored.filter("fresh"), scored.filter(~pl.col("fresh"))
    out = {
        "fresh_votes": fresh.height,
        "fresh_share": round(fresh.height / scored.height, 3) if scored.height else 0.0,
        "fresh_net_wins": int((fresh["y"] == 1.0).sum() - (fresh["y"] == 0.0).sum()),
        "fresh_z": 0.0,
    }
    if fresh["voter"].n_unique() >= 2 and old["voter"].n_unique() >= 2:
        (mean_f, var_f), (mean_o, var_o) = _mean_and_var(fresh), _mean_and_var(old)
        if var_f + var_o > 0:
            out["fresh_z"] = round((mean_f - mean_o) / math.sqrt(var_f + var_o), 2)
    return out


def downweighted_cohorts(battles: pl.DataFrame | None) -> list[dict]:
    """The battle filter's cohort down-weights of the month: one row per reason, with its
    votes and their weight (``battles/cohort.py``)."""
    if battles is None or "weight_reason" not in battles.columns:
        return []
    rows = (
        battles.filter(pl.col("keep") & pl.col("weight_reason").str.contains("cohort:"))
        .with_columns(
            pl.col("weight_reason").str.extract(r"(cohort:[^;]*?) z=").alias("cohort"),
            pl.col("weight_reason").str.extract(r"z=(-?[0-9.]+)").cast(pl.Float64).alias("z"),
        )
        .group_by("cohort")
        .agg(pl.len().alias("votes"), pl.col("weight").sum(), pl.col("z").first())
        .sort("votes", "cohort", descending=[True, False])
    )
    return [
        {"cohort": c, "votes": int(n), "weight": round(float(w), 2), "z": z}
        for c, n, w, z in rows.select("cohort", "votes", "weight", "z").iter_rows()
    ]


def cohort_warnings(
    moves: pl.DataFrame,
    battles: pl.DataFrame | None,
    z_move: float = Z_COHORT_MOVE,
    z_cohort: float | None = None,
) -> list[dict]:
    """Every model whose move is beyond its interval and driven by accounts without
    history (module docstring), with the fresh votes that drove it. ``z_cohort``: the
    fresh deviation needed (None: `cohort_z` over the models that moved or not)."""
    if battles is None or "voter_fresh" not in battles.columns:
        return []
    if z_cohort is None:
        z_cohort = cohort_z(moves.height)
    out = []
    for model, move, z in (
        moves.filter(pl.col("z").abs() >= z_move).select("model", "move", "z").iter_rows()
    ):
        fresh = fresh_deviation(battles, model)
        if fresh["fresh_z"] * math.copysign(1.0, z) >= z_cohort:
            out.append(
                {"model": model, "z": round(z, 2), "move": round(move, 1), **fresh}
                | {"reason": "rating move beyond its interval, driven by accounts without history"}
            )
    return out
