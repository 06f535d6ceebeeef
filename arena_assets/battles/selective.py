"""Served but not voted: a voter who votes only when one model is on screen.

A target-only attacker must be served battles until its model shows up (2 of 30 slots:
about 15 battles per rigged vote) and leaves the others without a vote. The platform's
impression log (optional ``served`` events) makes that visible. Per voter, over the
month's anonymous battles: ``n`` served (voted or not), ``k`` voted; for a model m,
``n_m`` served with m on screen.

H0: which served battles a voter votes on does not depend on the models on screen (they
are anonymous), so given (n, k) every k-subset is equally likely. The alternative
"votes only when m is on screen" puts the k votes uniformly among the n_m battles with m.
Their likelihood ratio is ``C(n, k) / C(n_m, k)`` when every vote has m on screen, else 0;
its mean under H0 is exactly 1. The votes' outcomes add the direction: under "for m"
(resp. "against m") a vote goes m's way with probability ``selective_q``, against the
reference crowd's probability p (`reference.py`): LR ``q/p`` on a hit, ``(1-q)/(1-p)`` on a
miss, mean 1 under H0 too. The voter's statistic is the mixture over the 2 x n_models
alternatives with equal weights, so Ville's inequality bounds the chance that an honest
voter reaches ``1/alpha`` by alpha, as for the per-voter test. A voter without served
events has n = k and LR_sel = 1: the rule then adds nothing (real logs may have no
impression log). Reason: ``selective_voter``.

One fresh account with one rigged vote cannot reach 1/alpha alone (its best LR is about
n/15 x 2). Such accounts share their *signature*: ``signature_members`` pools the fresh
accounts whose every vote has m on screen and whose selection ratio
``C(n, k)/C(n_m, k)`` is at least ``signature_min_ratio`` into the group ``sig:<m>``, chosen
from which battles they voted on and never from how they voted, so the pooled outcomes
of honest members still follow the reference, and the sequential test (`anomaly.py`) on
the group keeps its alpha. A flagged group costs its members whose every vote went the
flagged way (``selective_cluster``). Honest members are the price: a fresh account that
happened to vote once, for m, after skipping several battles without m; measured in
``benchmarks/rigging.py``.
"""

from __future__ import annotations

import math

import polars as pl


def served_battles(votes: pl.DataFrame, served: pl.DataFrame) -> pl.DataFrame:
    """voter_hash, model_a, model_b, voted: the month's anonymous battles per voter."""
    cols = ["voter_hash", "model_a", "model_b"]
    return pl.concat(
        [
            votes.select(*cols, pl.lit(True).alias("voted")),
            served.select(*cols, pl.lit(False).alias("voted")),
        ]
    )


def _log_comb(n: pl.Expr, k: pl.Expr) -> pl.Expr:
    lg = lambda x: x.cast(pl.Float64).map_batches(  # noqa: E731
        lambda s: pl.Series([math.lgamma(v + 1.0) for v in s.to_list()], dtype=pl.Float64),
        return_dtype=pl.Float64,
    )
    return lg(n) - lg(k) - lg(n - k)


def selection(battles: pl.DataFrame) -> pl.DataFrame:
    """Per (voter_hash, model) whose every vote has the model on screen: k, n, n_m and
    log_sel = ln C(n, k) - ln C(n_m, k)."""
    per_voter = battles.group_by("voter_hash").agg(
        pl.col("voted").sum().alias("k"), pl.len().alias("n")
    )
    long = pl.concat(
        [
            battles.select("voter_hash", pl.col(s).alias("model"), "voted")
            for s in ("model_a", "model_b")
        ]
    )
    per_model = long.group_by("voter_hash", "model").agg(
        pl.col("voted").sum().alias("k_m"), pl.len().alias("n_m")
    )
    return (
        per_model.join(per_voter, on="voter_hash")
        .filter((pl.col("k") >= 1) & (pl.col("k_m") == pl.col("k")))
        .with_columns(
            (_log_comb(pl.col("n"), pl.col("k")) - _log_comb(pl.col("n_m"), pl.col("k"))).alias(
                "log_sel"
            )
        )
        .select("voter_hash", "model", "k", "n", "n_m", "log_sel")
    )


def selective_voters(
    probs: pl.DataFrame, candidates: pl.DataFrame, n_models: int, q: float, alpha: float
) -> pl.DataFrame:
    """Per voter with a candidate model: the mixture log LR, the best (model, direction)
    and whether it reaches ln(1/alpha). ``probs``: the voter's anonymous votes with the
    reference's _p_a / _p_b (`reference.reference_probabilities`)."""
    out_schema = {
        "voter_hash": pl.String,
        "selective_log_lr": pl.Float64,
        "selective_model": pl.String,
        "selective_direction": pl.String,
        "selective": pl.Boolean,
    }
    if candidates.height == 0:
        return pl.DataFrame(schema=out_schema)
    votes = probs.select("voter_hash", "model_a", "model_b", "winner", "_p_a", "_p_b")
    rows = []
    for side, other, p_side, p_other in (
        ("model_a", "model_b", "_p_a", "_p_b"),
        ("model_b", "model_a", "_p_b", "_p_a"),
    ):
        won = pl.col("winner") == side
        lost = pl.col("winner") == other
        for direction, hit, p in (("for", won, pl.col(p_side)), ("against", lost, pl.col(p_other))):
            rows.append(
                votes.select(
                    "voter_hash",
                    pl.col(side).alias("model"),
                    pl.lit(direction).alias("direction"),
                    pl.when(hit)
                    .then((q / p).log())
                    .otherwise(((1 - q) / (1 - p)).log())
                    .alias("llr"),
                )
            )
    outcome = (
        pl.concat(rows)
        .group_by("voter_hash", "model", "direction")
        .agg(pl.col("llr").sum().alias("log_out"))
    )
    weight = -math.log(2.0 * max(n_models, 1))
    scored = candidates.join(outcome, on=["voter_hash", "model"]).with_columns(
        (weight + pl.col("log_sel") + pl.col("log_out")).alias("_term")
    )
    best = (
        scored.sort(
            "voter_hash", "_term", "model", "direction", descending=[False, True, False, False]
        )
        .group_by("voter_hash", maintain_order=True)
        .agg(
            pl.col("model").first().alias("selective_model"),
            pl.col("direction").first().alias("selective_direction"),
            (
                pl.col("_term").max() + (pl.col("_term") - pl.col("_term").max()).exp().sum().log()
            ).alias("selective_log_lr"),
        )
    )
    return best.with_columns(
        (pl.col("selective_log_lr") >= math.log(1.0 / alpha)).alias("selective")
    ).select(list(out_schema))


def signature_members(candidates: pl.DataFrame, fresh: set[str], min_ratio: float) -> pl.DataFrame:
    """(voter_hash, group ``sig:<model>``): fresh accounts that voted only with the model
    on screen after skipping enough battles without it (selection ratio >= min_ratio)."""
    return (
        candidates.filter(
            pl.col("voter_hash").is_in(pl.Series(list(fresh), dtype=pl.String).implode())
            & (pl.col("log_sel") >= math.log(min_ratio))
        )
        .select("voter_hash", ("sig:" + pl.col("model")).alias("group"))
        .sort("group", "voter_hash")
    )
