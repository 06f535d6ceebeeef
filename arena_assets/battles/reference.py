"""The robust reference crowd of the sequential tests.

What an honest vote on a model pair looks like is estimated from votes that an attack
this month cannot write:

* the earlier months' kept votes (``crowd``, counted per model pair and outcome);
* this month's votes of *established* voters only (seen in an earlier month; every voter
  when the lake holds no earlier month), without the voters already flagged;
* this month's weight on each pair capped: at most ``crowd_month_cap_ratio`` times the
  earlier months' votes on that pair, and at least ``crowd_month_cap_min`` votes' worth;
  a pair without earlier votes is capped at ``crowd_first_cap_ratio`` times the month's
  median pair. The month's counts on a capped pair are scaled down as a whole, so its
  outcome mix is kept and only its weight shrinks.

Why: with the month's own votes in the reference, a large attack becomes its own
reference (measured with such a reference: linked sybils caught 7/7 at 200 rigged votes,
0/166 at 5,000). Fresh accounts cannot enter it, and even established ones cannot outweigh the
history of a pair. The voter (or the group) under test is left out too.
"""

from __future__ import annotations

import polars as pl

from arena_assets.battles.config import AnomalyConfig

_OUTCOMES = ("x", "y", "tie", "bothbad")  # in the (x, y) = sorted pair frame


def pair_frame(votes: pl.DataFrame) -> pl.DataFrame:
    """Orientation-free view: x < y by name, outcome in that frame."""
    a, b = pl.col("model_a"), pl.col("model_b")
    swapped = a > b
    winner = pl.col("winner")
    return votes.with_columns(
        pl.when(swapped).then(b).otherwise(a).alias("_x"),
        pl.when(swapped).then(a).otherwise(b).alias("_y"),
        pl.when(winner == "tie")
        .then(pl.lit("tie"))
        .when(winner == "tie (bothbad)")
        .then(pl.lit("bothbad"))
        .when((winner == "model_a") ^ swapped)
        .then(pl.lit("x"))
        .otherwise(pl.lit("y"))
        .alias("_outcome"),
    )


def outcome_counts(frame: pl.DataFrame, keys: list[str], weight: str | None = None) -> pl.DataFrame:
    w = pl.col(weight) if weight else pl.lit(1.0)
    return frame.group_by(keys).agg(
        [(w * (pl.col("_outcome") == o)).sum().cast(pl.Float64).alias(f"_n_{o}") for o in _OUTCOMES]
    )


def crowd_counts(crowd: pl.DataFrame | None) -> pl.DataFrame | None:
    """Normalise a prior crowd table (``model_a, model_b, winner`` and optional ``n``)."""
    if crowd is None or crowd.height == 0:
        return None
    frame = crowd if "n" in crowd.columns else crowd.with_columns(pl.lit(1.0).alias("n"))
    return outcome_counts(
        pair_frame(frame.with_columns(pl.col("n").cast(pl.Float64))), ["_x", "_y"], "n"
    )


def _total(prefix: str) -> pl.Expr:
    return pl.sum_horizontal([pl.col(f"{prefix}{o}") for o in _OUTCOMES])


def month_scale(
    current: pl.DataFrame, prior: pl.DataFrame | None, cfg: AnomalyConfig
) -> pl.DataFrame:
    """Per pair (``_x, _y``): the factor this month's votes are weighted by (<= 1)."""
    totals = current.select("_x", "_y", _total("_n_").alias("_cur"))
    median = float(totals["_cur"].median() or 0.0)
    first_cap = max(cfg.crowd_month_cap_min, cfg.crowd_first_cap_ratio * median)
    if prior is not None:
        totals = totals.join(
            prior.select("_x", "_y", _total("_n_").alias("_prior")), on=["_x", "_y"], how="left"
        )
    else:
        totals = totals.with_columns(pl.lit(None, dtype=pl.Float64).alias("_prior"))
    cap = (
        pl.when(pl.col("_prior").fill_null(0) > 0)
        .then(
            pl.max_horizontal(
                pl.lit(cfg.crowd_month_cap_min), cfg.crowd_month_cap_ratio * pl.col("_prior")
            )
        )
        .otherwise(pl.lit(first_cap))
    )
    return totals.select(
        "_x",
        "_y",
        pl.min_horizontal(pl.lit(1.0), cap / pl.col("_cur").clip(lower_bound=1e-9)).alias("_scale"),
    )


def reference_probabilities(
    tested: pl.DataFrame,
    pool: pl.DataFrame,
    prior: pl.DataFrame | None,
    cfg: AnomalyConfig,
    members: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Adds p(model_a wins) and p(model_b wins) to each row of ``tested`` (pair-framed, its
    unit in ``voter_hash``) from the reference: ``prior`` plus ``pool`` (this month's votes
    that may enter it), less the unit's own votes in ``pool``. ``members`` (voter_hash,
    _group) maps pool voters to the groups under test when the unit is a group."""
    current = outcome_counts(pool, ["_x", "_y"])
    scale = month_scale(current, prior, cfg)
    pair = (
        current.join(scale, on=["_x", "_y"])
        .with_columns([pl.col(f"_n_{o}") * pl.col("_scale") for o in _OUTCOMES])
        .drop("_scale")
    )
    if prior is not None:
        pair = pl.concat([pair, prior], how="vertical").group_by(["_x", "_y"]).sum()
    if members is None:
        own = outcome_counts(pool, ["voter_hash", "_x", "_y"])
    else:
        own = outcome_counts(
            pool.join(members, on="voter_hash").drop("voter_hash").rename({"_group": "voter_hash"}),
            ["voter_hash", "_x", "_y"],
        )
    own = (
        own.join(scale, on=["_x", "_y"], how="left")
        .with_columns([pl.col(f"_n_{o}") * pl.col("_scale").fill_null(1.0) for o in _OUTCOMES])
        .drop("_scale")
    )
    source = pool if pool.height else None
    if source is not None:
        totals = source.select([(pl.col("_outcome") == o).sum().alias(o) for o in _OUTCOMES]).row(0)
    elif prior is not None:
        totals = prior.select([pl.col(f"_n_{o}").sum() for o in _OUTCOMES]).row(0)
    else:
        totals = (0, 0, 0, 0)
    n_all = max(sum(totals), 1)
    win_share = (totals[0] + totals[1]) / n_all / 2
    mix = {"x": win_share, "y": win_share, "tie": totals[2] / n_all, "bothbad": totals[3] / n_all}
    if sum(mix.values()) == 0:
        mix = {"x": 0.5, "y": 0.5, "tie": 0.0, "bothbad": 0.0}
    s = cfg.crowd_prior_votes
    joined = (
        tested.join(pair, on=["_x", "_y"], how="left")
        .join(own, on=["voter_hash", "_x", "_y"], how="left", suffix="_own")
        .with_columns(
            [
                (
                    (pl.col(f"_n_{o}").fill_null(0) - pl.col(f"_n_{o}_own").fill_null(0)).clip(
                        lower_bound=0
                    )
                    + s * mix[o]
                ).alias(f"_c_{o}")
                for o in _OUTCOMES
            ]
        )
    )
    total = _total("_c_")
    p_x, p_y = pl.col("_c_x") / total, pl.col("_c_y") / total
    a_is_x = pl.col("model_a") == pl.col("_x")
    return joined.with_columns(
        pl.when(a_is_x).then(p_x).otherwise(p_y).clip(1e-3, 1 - 1e-3).alias("_p_a"),
        pl.when(a_is_x).then(p_y).otherwise(p_x).clip(1e-3, 1 - 1e-3).alias("_p_b"),
    ).drop([c for c in joined.columns if c.startswith(("_n_", "_c_"))])
