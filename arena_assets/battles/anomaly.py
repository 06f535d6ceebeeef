"""Anomalous voters: a sequential likelihood-ratio test of each voter against the crowd.

The test
--------
For every vote the *crowd* says how likely each outcome is on that model pair: the
frequencies of model_x wins / model_y wins / tie / both bad among all *other* voters' votes
on the pair, smoothed towards the month's overall outcome mix by a Dirichlet prior of
``crowd_prior_votes`` pseudo-votes. Leaving the voter out matters: a heavy voter must not
be judged against their own votes. The crowd is robust (``reference.py``): the
earlier months' kept votes, plus this month's votes of established voters only, this
month's weight per pair capped, so an attack cannot become its own reference.

H0: the voter's outcomes follow the crowd's probabilities.

H1 is a mixture of simple "distortions", one per alternative k; the five families
(for, against, side, coin, for|coin) get equal weight, and the members of a family share it
equally:

* ``for:<m>``     the voter picks model m whenever m is on screen (boosting);
* ``against:<m>`` the voter picks m's opponent whenever m is on screen (sabotage);
* ``side:a`` / ``side:b``  the voter always picks the same side;
* ``coin``        the voter ignores the answers: picks a side by coin and rarely ties;
* ``for:<m>|coin`` boosting m, coin elsewhere (a booster that does not read the answers).

Under alternative k a vote that concerns k is a *hit* (the outcome k predicts) with
probability q and otherwise spreads like the crowd; votes that do not concern k have the
crowd's probabilities. q is a predictable plug-in estimate: the voter's own hit rate on k
*before* this vote, under a Beta(prior_hits, prior_misses) prior, kept between the crowd's
hit probability p and ``q_ceil`` (H1 only claims "more hits than the crowd"). Each vote
multiplies LR_k by q/p on a hit and (1-q)/(1-p) on a miss. The coin alternative has the
same kind of plug-in for the voter's decisive (non-tie) rate. Only anonymous votes are
tested: with names shown, brand preference is legitimate and would look like boosting.

Because q is fixed before the vote is seen, every LR_k, and hence the mixture
LR = sum_k w_k LR_k, is a non-negative martingale with mean 1 under H0. Ville's inequality
then bounds the chance that an honest voter's LR *ever* reaches 1/alpha, whatever the
number of votes, by alpha: this is Wald's upper boundary A = (1-beta)/alpha ~ 1/alpha of
an open-ended SPRT. There is no lower boundary: a voter is never cleared for good, so a
clean start does not buy a later attack. Default alpha = 1e-3 (log threshold 6.9): at most
0.1 % of honest voters if the crowd model were exact. It is not (the crowd is estimated per
pair, and honest users differ, e.g. by the categories they ask about): over 12 simulated
months the largest honest log LR was 2.1-4.5, once 6.6, against the threshold 6.9. No
honest voter crossed; alpha = 1e-4 (9.2) costs ~3 points of recall on boosters.

Decision: a voter whose LR crosses 1/alpha has *all* their votes of the month removed, not only those after the crossing: the votes before the crossing are the evidence
itself (for a voter with 20 votes, a crossing at vote 15 would otherwise keep most of the
abuse), and the bound above is on voters, so the honest cost stays <= alpha per voter.

Two passes: the second recomputes the crowd without the voters flagged by the first, so a
group of abusers boosting the same model does not shift the crowd towards itself.
"""

from __future__ import annotations

import math

import polars as pl

from arena_assets.battles.config import AnomalyConfig
from arena_assets.battles.reference import crowd_counts, pair_frame, reference_probabilities

_LOG_CAP = 200.0  # LR_k kept below e^200: far past any threshold, far from overflow


_FAMILIES = ("for", "against", "side")


def _alternative_rows(votes: pl.DataFrame) -> pl.DataFrame:
    """One row per (vote, alternative it concerns) with the crowd's hit probability."""
    a_won = pl.col("winner") == "model_a"
    b_won = pl.col("winner") == "model_b"
    specs = [
        ("for", pl.lit("for:") + pl.col("model_a"), a_won, "_p_a"),
        ("for", pl.lit("for:") + pl.col("model_b"), b_won, "_p_b"),
        ("against", pl.lit("against:") + pl.col("model_a"), b_won, "_p_b"),
        ("against", pl.lit("against:") + pl.col("model_b"), a_won, "_p_a"),
        ("side", pl.lit("side:a"), a_won, "_p_a"),
        ("side", pl.lit("side:b"), b_won, "_p_b"),
    ]
    return pl.concat(
        [
            votes.select(
                "voter_hash",
                "_order",
                "_coin",
                pl.lit(family).alias("family"),
                alt.alias("alt"),
                hit.alias("hit"),
                pl.col(p).alias("p"),
                pl.lit(i).alias("_spec"),
            )
            for i, (family, alt, hit, p) in enumerate(specs)
        ]
    )


def _coin_llr(cfg: AnomalyConfig) -> pl.Expr:
    """log LR of "picks a side by coin and rarely ties" against the crowd.

    Under this alternative the voter is decisive with probability q_d (plug-in: their own
    decisive rate before this vote, at least the crowd's d = p_a + p_b) and then picks
    either side with probability q_d / 2; ties keep the crowd's split. Needs `votes`
    sorted by (voter, time).
    """
    p_a, p_b = pl.col("_p_a"), pl.col("_p_b")
    d = p_a + p_b
    decisive = pl.col("winner").is_in(["model_a", "model_b"]).cast(pl.Float64)
    before = decisive.cum_sum().over("voter_hash") - decisive
    q_d = (before + cfg.prior_hits) / (pl.col("_order") + cfg.prior_hits + cfg.prior_misses)
    q_d = pl.min_horizontal(pl.max_horizontal(q_d, d), pl.max_horizontal(d, pl.lit(cfg.q_ceil)))
    return (
        pl.when(pl.col("winner") == "model_a")
        .then((q_d / 2 / p_a).log())
        .when(pl.col("winner") == "model_b")
        .then((q_d / 2 / p_b).log())
        .otherwise(((1 - q_d) / (1 - d).clip(lower_bound=1e-3)).log())
    )


def _sequential_test(votes: pl.DataFrame, n_models: int, cfg: AnomalyConfig) -> pl.DataFrame:
    """Per voter: max log mixture LR over time, vote index of the crossing, best alternative."""
    votes = votes.sort("voter_hash", "_order").with_columns(_coin_llr(cfg).alias("_coin"))
    rows = _alternative_rows(votes).sort(["voter_hash", "_order", "_spec"])
    keys = ["voter_hash", "alt"]
    hit = pl.col("hit").cast(pl.Float64)
    hits_before = hit.cum_sum().over(keys) - hit
    n_before = pl.int_range(pl.len()).over(keys).cast(pl.Float64)
    q_plugin = (hits_before + cfg.prior_hits) / (n_before + cfg.prior_hits + cfg.prior_misses)
    p = pl.col("p")
    q = pl.max_horizontal(q_plugin, p, pl.lit(cfg.q_floor))
    q = pl.min_horizontal(q, pl.max_horizontal(p, pl.lit(cfg.q_ceil)))
    llr = pl.when(pl.col("hit")).then((q / p).log()).otherwise(((1 - q) / (1 - p)).log())
    rows = rows.with_columns(llr.alias("llr")).with_columns(
        pl.col("llr").cum_sum().over(keys).alias("L"),
        (pl.col("llr") - pl.col("_coin")).cum_sum().over(keys).alias("Lc"),
    )

    def delta(cur: str, step: pl.Expr) -> pl.Expr:
        new = pl.col(cur).clip(upper_bound=_LOG_CAP)
        old = (pl.col(cur) - step).clip(upper_bound=_LOG_CAP)
        return new.exp() - old.exp()

    w_model, w_side = 1.0 / max(n_models, 1), 0.5
    fam = pl.col("family")
    rows = rows.with_columns(
        pl.when(fam == "for")
        .then(w_model * delta("L", pl.col("llr")))
        .otherwise(0.0)
        .alias("_d_for"),
        pl.when(fam == "against")
        .then(w_model * delta("L", pl.col("llr")))
        .otherwise(0.0)
        .alias("_d_against"),
        pl.when(fam == "side")
        .then(w_side * delta("L", pl.col("llr")))
        .otherwise(0.0)
        .alias("_d_side"),
        pl.when(fam == "for")
        .then(w_model * delta("Lc", pl.col("llr") - pl.col("_coin")))
        .otherwise(0.0)
        .alias("_d_forcoin"),
    )
    sums = ["_d_for", "_d_against", "_d_side", "_d_forcoin"]
    per_vote = (
        rows.with_columns([pl.col(c).cum_sum().over("voter_hash") for c in sums])
        .group_by("voter_hash", "_order")
        .agg([pl.col(c).last() for c in sums])
        .join(votes.select("voter_hash", "_order", "_coin"), on=["voter_hash", "_order"])
        .sort("voter_hash", "_order")
        .with_columns(pl.col("_coin").cum_sum().over("voter_hash").alias("C"))
    )

    def log_family(col: str) -> pl.Expr:
        return (1.0 + pl.col(col)).clip(lower_bound=1e-300).log()

    # five families, equal prior weight; "for m, coin elsewhere" = e^C * sum_m w e^(L_m - C_m)
    terms = [
        log_family("_d_for"),
        log_family("_d_against"),
        log_family("_d_side"),
        pl.col("C") + log_family("_d_forcoin"),
        pl.col("C"),
    ]
    stacked = pl.concat_list(terms)
    log_mix = (
        stacked.list.max()
        + stacked.list.eval((pl.element() - pl.element().max()).exp()).list.sum().log()
        - math.log(len(terms))
    )
    per_vote = per_vote.with_columns(log_mix.alias("_log_mix"))
    threshold = math.log(1.0 / cfg.alpha)
    # the label: the single alternative with the largest final log LR (coin included)
    best = (
        rows.group_by("voter_hash", "alt")
        .agg(pl.col("L").last())
        .sort("voter_hash", "L", "alt", descending=[False, True, False])
        .group_by("voter_hash", maintain_order=True)
        .first()
        .rename({"alt": "anomaly_alternative", "L": "_best_L"})
    )
    return (
        per_vote.group_by("voter_hash")
        .agg(
            pl.col("_log_mix").max().alias("anomaly_log_lr"),
            pl.col("_order").filter(pl.col("_log_mix") >= threshold).first().alias("_cross_order"),
            pl.col("C").last().alias("_C"),
        )
        .join(best, on="voter_hash", how="left")
        .with_columns(
            (pl.col("anomaly_log_lr") >= threshold).alias("anomalous"),
            pl.when(pl.col("_C") > pl.col("_best_L"))
            .then(pl.lit("coin"))
            .otherwise("anomaly_alternative")
            .alias("anomaly_alternative"),
        )
    )


def anomalous_voters(
    votes: pl.DataFrame,
    cfg: AnomalyConfig,
    crowd: pl.DataFrame | None = None,
    *,
    established: pl.Series | list[str] | None = None,
    exclude: pl.Series | list[str] | None = None,
    members: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Run the test on `votes` (columns battle_id, voter_hash, tstamp, model_a, model_b,
    winner; anonymous votes only is the intended use). Returns one row per voter:
    voter_hash, anomalous, anomaly_log_lr, anomaly_alternative, anomaly_votes_tested,
    anomaly_crossing_vote (1-based index in time order of the vote where LR crossed).

    The reference is `reference.reference_probabilities`: ``crowd`` (earlier months' kept
    votes) plus this month's votes of the ``established`` voters (None: every voter),
    never those of ``exclude`` nor of the voters flagged by the first pass, the month's
    weight per model pair capped. With ``members`` (columns voter_hash, group) the unit
    tested is the group: its members' votes pooled in time order, one row per group in
    the result (``voter_hash`` then holds the group id), each group judged against a
    reference without its own members' votes.
    """
    schema_out = {
        "voter_hash": pl.String,
        "anomalous": pl.Boolean,
        "anomaly_log_lr": pl.Float64,
        "anomaly_alternative": pl.String,
        "anomaly_votes_tested": pl.UInt32,
        "anomaly_crossing_vote": pl.Int64,
    }
    votes = votes.filter(pl.col("model_a") != pl.col("model_b"))
    if votes.height == 0:
        return pl.DataFrame(schema=schema_out)
    framed = pair_frame(votes)
    pool = (
        framed
        if established is None
        else framed.filter(
            pl.col("voter_hash").is_in(pl.Series(list(established), dtype=pl.String).implode())
        )
    )
    if members is None:
        tested, links = framed.with_columns(pl.col("voter_hash").alias("_member")), None
    else:
        links = members.select("voter_hash", pl.col("group").alias("_group")).unique()
        tested = framed.join(links, on="voter_hash").rename(
            {"voter_hash": "_member", "_group": "voter_hash"}
        )
        if tested.height == 0:
            return pl.DataFrame(schema=schema_out)
    tested = tested.sort(["voter_hash", "tstamp", "battle_id"]).with_columns(
        pl.int_range(pl.len()).over("voter_hash").alias("_order")
    )
    prior = crowd_counts(crowd)
    n_models = pl.concat([votes["model_a"], votes["model_b"]]).n_unique()
    fixed = set(exclude if exclude is not None else [])
    flagged: set[str] = set()
    result = None
    for _ in range(max(cfg.passes, 1)):
        out = set(fixed)
        if flagged:
            out |= (
                flagged
                if links is None
                else set(links.filter(pl.col("_group").is_in(list(flagged)))["voter_hash"])
            )
        reference = pool.filter(
            ~pl.col("voter_hash").is_in(pl.Series(list(out), dtype=pl.String).implode())
        )
        probs = reference_probabilities(tested, reference, prior, cfg, links)
        result = _sequential_test(probs, n_models, cfg)
        new = set(result.filter("anomalous")["voter_hash"].to_list())
        if new == flagged:
            break
        flagged = new
    counts = tested.group_by("voter_hash").agg(pl.len().alias("anomaly_votes_tested"))
    return (
        result.join(counts, on="voter_hash")
        .with_columns((pl.col("_cross_order") + 1).cast(pl.Int64).alias("anomaly_crossing_vote"))
        .select(list(schema_out))
        .sort("voter_hash")
    )
