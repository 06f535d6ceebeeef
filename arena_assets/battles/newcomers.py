"""Each model's share of votes from accounts without history, against the platform's rate.

Battles are anonymous and drawn without regard to who votes, so an honest newcomer meets a
model about as often as an established voter does: a model's share of votes cast by
accounts without history is the platform's share, up to chance. An attack that opens
accounts to vote for one model (careful sybils, with or without cover) raises that model's
share whatever the votes say. Cover votes dilute it: they raise the newcomers' share on
every other model, and at a few cover votes per rigged one the excess is gone (the cohort
tests, which read how the votes go, are what stops that attack). The test, per
model m: of its n_m tested votes, f_m come from accounts without history; the base rate p
is the share among the votes *without* m (so the attack does not raise its own reference),
and z = (f_m − n_m p) / √(n_m p (1 − p) D), where D is the design effect of a voter's votes
not being independent (the mean votes per fresh voter on m, at least 1). A model past the
battle filter's Bonferroni threshold is named in the battles' metadata with a line the
operator reads; the rule removes and down-weights nothing (the cohort tests do that,
`cohort.py`): a model that newcomers flock to for honest reasons (a launch in the news)
passes this test too, and is only worth a look.
"""

from __future__ import annotations

import math

import polars as pl


def newcomer_excess(tested: pl.DataFrame, fresh: set[str], z0: float, min_votes: int) -> list[dict]:
    """Models whose share of votes from accounts in ``fresh`` exceeds the rest of the
    platform's at ``z0`` (module docstring), largest z first. ``tested``: battle_id,
    voter_hash, model_a, model_b; a model with fewer than ``min_votes`` fresh votes is not
    tested."""
    if tested.height == 0 or not fresh:
        return []
    is_fresh = pl.col("voter_hash").is_in(pl.Series(list(fresh), dtype=pl.String).implode())
    votes = tested.select("battle_id", "voter_hash", "model_a", "model_b", is_fresh.alias("f"))
    total, total_fresh = votes.height, int(votes["f"].sum())
    long = pl.concat(
        [votes.select("voter_hash", "f", pl.col(c).alias("model")) for c in ("model_a", "model_b")]
    )
    per_model = long.group_by("model").agg(
        pl.len().alias("n"),
        pl.col("f").sum().alias("fresh_votes"),
        pl.col("voter_hash").filter("f").n_unique().alias("fresh_voters"),
    )
    out = []
    for m, n, f, voters in per_model.sort("model").iter_rows():
        rest, rest_fresh = total - n, total_fresh - f
        if f < min_votes or rest <= 0:
            continue
        p = min(max(rest_fresh / rest, 1.0 / rest), 1.0 - 1.0 / rest)
        design = max(f / max(voters, 1), 1.0)
        z = (f - n * p) / math.sqrt(n * p * (1.0 - p) * design)
        if z >= z0:
            out.append(
                {
                    "model": m,
                    "fresh_votes": int(f),
                    "votes": int(n),
                    "fresh_share": round(f / n, 3),
                    "base_rate": round(p, 3),
                    "z": round(z, 1),
                    "reason": f"newcomer_share:{m} {100 * f / n:.0f} % of its votes from "
                    f"accounts without history vs {100 * p:.0f} % elsewhere, z={z:.1f}",
                }
            )
    return sorted(out, key=lambda r: -r["z"])
