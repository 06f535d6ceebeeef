"""Who is in a model's cohorts (`cohort.py`): chosen by *who* votes, never by how.

``fresh`` (accounts without history), ``concentrated`` (half or more of the account's
votes on the model's battles) and ``selective`` (the account's votes fell on the model's
battles more often than the battles it was served allow: a hypergeometric tail). Split
from the tests themselves so that each reads on its own.
"""

from __future__ import annotations

import polars as pl
from scipy.stats import hypergeom

from arena_assets.battles.config import CohortConfig


def members(
    long: pl.DataFrame, fresh: set[str] | None, cfg: CohortConfig, served: pl.DataFrame | None
) -> pl.DataFrame:
    """(cohort, model, voter_hash) for every voter in a cohort of m (module docstring).
    ``long``: each tested vote twice, from each model's side (battle_id, voter_hash,
    model, ...); ``served``: the month's anonymous battles served without a vote
    (voter_hash, model_a, model_b), None without an impression log."""
    parts = []
    if fresh is not None:
        parts.append(
            long.filter(
                pl.col("voter_hash").is_in(pl.Series(list(fresh), dtype=pl.String).implode())
            )
            .select(pl.lit("fresh").alias("cohort"), "model", "voter_hash")
            .unique()
        )
    per_voter = long.group_by("voter_hash").agg(pl.col("battle_id").n_unique().alias("k"))
    per_model = long.group_by("voter_hash", "model").agg(pl.len().alias("k_m"))
    voted = per_model.join(per_voter, on="voter_hash")
    parts.append(
        voted.filter(pl.col("k_m") >= cfg.concentration * pl.col("k")).select(
            pl.lit("concentrated").alias("cohort"), "model", "voter_hash"
        )
    )
    if served is not None and served.height:
        skipped = pl.concat(
            [served.select("voter_hash", pl.col(c).alias("model")) for c in ("model_a", "model_b")]
        )
        n = served.group_by("voter_hash").agg(pl.len().alias("_s"))
        n_m = skipped.group_by("voter_hash", "model").agg(pl.len().alias("_s_m"))
        sel = (
            voted.join(n, on="voter_hash", how="left")
            .join(n_m, on=["voter_hash", "model"], how="left")
            .with_columns(pl.col("_s", "_s_m").fill_null(0))
            .filter(pl.col("_s") > 0)
        )
        if sel.height:
            sel = sel.with_columns(pl.col("k", "k_m", "_s", "_s_m").cast(pl.Int64))
            total = (sel["k"] + sel["_s"]).to_numpy()
            with_m = (sel["k_m"] + sel["_s_m"]).to_numpy()
            # P(X >= k_m), X ~ Hyper(total, with_m, k); signed ints (scipy misreads uint)
            tail = hypergeom.sf(sel["k_m"].to_numpy() - 1, total, with_m, sel["k"].to_numpy())
            parts.append(
                sel.filter(pl.Series(tail <= cfg.selection_p)).select(
                    pl.lit("selective").alias("cohort"), "model", "voter_hash"
                )
            )
    return pl.concat(parts)
