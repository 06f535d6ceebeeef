"""Population-level defences: votes weighed by who casts them, as a cohort.

Careful sybils (fresh accounts of a few votes each, each on its own address and device,
voting only when their model is on screen and skipping no more battles than an honest
newcomer) and compromised aged accounts are, one account at a time, honest users. Together
they are not: they give one model wins that the established voters, on the same opponents,
do not give it. Two rules act on that, both down-weights with a reason the operator reads
(``weight``, ``weight_reason``), never removals:

* ``no_history``: a vote of an account without history (no vote in any earlier month of
  the lake: its age comes from the lake, ``history``) weighs ``fresh_weight``; an
  established account's vote weighs 1. Accounts cost an attacker nothing to create,
  history costs a month: this bounds what a month of new accounts can do before any test
  has seen them. Without an earlier month nobody has history, and every vote weighs 1.
* ``cohort``: per model m and per cohort chosen by *who* votes, never by how:

  - ``fresh``: the accounts without history;
  - ``concentrated``: the accounts (any age) with at least ``concentration`` of their
    anonymous votes this month on battles with m on screen;
  - ``selective``: the accounts (any age) whose votes fell on m's battles more often than
    chance among the anonymous battles they were served (``served`` events: voted or
    not): the hypergeometric tail P(X >= k_m), X ~ Hyper(n served, n_m with m, k voted),
    at most ``selection_p``. Battles are anonymous, so which ones an honest voter votes
    on does not depend on m and an honest account enters with probability at most
    ``selection_p``; an account that votes for m and skips the rest (a target-only voter,
    also between its owner's honest votes) enters after a few votes. Without an
    impression log this cohort is empty;

  the cohort's votes on m are compared with the established voters outside the cohort,
  this month, on the same opponents (a pair they barely voted on leans on the earlier
  months' outcome mix on it, ``prior_votes`` votes' worth: the test stays within the
  month, so a model that simply does better this month than before is no deviation,
  and accounts without history never enter the reference). From m's
  side a vote scores y = 1 (m won), 1/2 (tie, both bad) or 0; the reference gives its
  expectation e and variance v per opponent, and S = Σ (y − e) over the cohort's votes,
  V = Σ v (1 + n_pair / n_ref): the second term is the reference's own sampling error
  (a two-sample test). z = S / √V. Cohorts are chosen without looking at outcomes, so an
  honest cohort's z is about standard normal (measured on simulated honest months: standard
  deviations 1.0-1.3 over the models, a voter's votes not being independent); the
  threshold z₀ is Bonferroni over every
  test of the month (3 cohorts × models × 2 directions) at ``cohort_alpha``. A cohort is
  judged only when the pairs its votes fall on hold, on average over its votes, at least
  ``cohort_min_reference`` votes behind their expectation (the month's established votes
  and the earlier months', not the prior's pseudo-votes): thinner, the expectation is
  mostly the prior mix, blind to how strong m is, and honest newcomers of a strong or
  weak model look like a deviation (a young lake; measured on real 2023 votes, whose
  months share almost no voter). Such cohorts are listed (``cohorts_thin_reference``),
  not weighed. A cohort past the threshold, with at least ``cohort_min_votes`` votes on
  m, keeps ``(z₀ / z)⁴`` of its votes' weight on m: a cohort just past the threshold (an
  honest one, by chance) loses little, a planted one almost all: its pull on m,
  S·(z₀/z)⁴, falls as the attack grows (z² grows like S). Reason ``cohort:<cohort>:<for|against>:<m> z=<z>``.

The honest cost is the weight of honest newcomers' votes (``no_history``) and of honest
members of a flagged cohort; ``benchmarks/rigging.py`` measures both and how far the
honest board moves. What this cannot see: aged accounts that vote like the crowd on other
models between their rigged votes (then no cohort is concentrated on m, selective for m or
fresh).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist

import polars as pl

from arena_assets.battles.cohort_members import members
from arena_assets.battles.config import AnomalyConfig, CohortConfig
from arena_assets.battles.reference import outcome_counts, pair_frame

COHORTS = ("fresh", "concentrated", "selective")
FACTOR_POWER = 4  # a flagged cohort keeps (z0 / z) ** FACTOR_POWER of its weight
_O = ("x", "y", "tie", "bothbad")


@dataclass
class CohortResult:
    weights: pl.DataFrame  # battle_id, weight, weight_reason (tested votes only)
    tests: pl.DataFrame  # one row per (cohort, model) tested: n, S, V, z, flagged, factor
    metadata: dict = field(default_factory=dict)


def threshold(n_models: int, alpha: float) -> float:
    """z₀: one-sided normal quantile at alpha over the cohorts x models x 2 directions."""
    tests = max(1, 2 * len(COHORTS) * n_models)
    return NormalDist().inv_cdf(1.0 - alpha / tests)


def _sides(framed: pl.DataFrame) -> pl.DataFrame:
    """Each vote twice, once from each model's side: model, y (1 / 0.5 / 0), m_is_x."""
    out = []
    for side, win in (("_x", "x"), ("_y", "y")):
        out.append(
            framed.select(
                "battle_id",
                "voter_hash",
                "_x",
                "_y",
                "_outcome",
                pl.col(side).alias("model"),
                pl.lit(side == "_x").alias("m_is_x"),
                pl.when(pl.col("_outcome") == win)
                .then(1.0)
                .when(pl.col("_outcome").is_in(["tie", "bothbad"]))
                .then(0.5)
                .otherwise(0.0)
                .alias("y"),
            )
        )
    return pl.concat(out)


def cohort_tests(
    framed: pl.DataFrame,
    long: pl.DataFrame,
    cohorts: pl.DataFrame,
    established: set[str] | None,
    prior: pl.DataFrame | None,
    anomaly: AnomalyConfig,
    cfg: CohortConfig,
    skip: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per (cohort, model) with enough votes: n, S, V, z. ``framed``: the month's
    surviving anonymous votes (battle_id, voter_hash, model_a, model_b, winner) in
    `reference.pair_frame`; ``long``: their `_sides`; ``cohorts``: `members`;
    ``established``: voters with history (None: no history, the reference is every voter
    outside the cohort); ``prior``: ``reference.crowd_counts``; ``skip`` (cohort,
    battle_id): votes left out of a cohort's sample (already explained by a deviation
    found earlier), never put back into the reference."""
    pool = (
        framed
        if established is None
        else framed.filter(
            pl.col("voter_hash").is_in(pl.Series(list(established), dtype=pl.String).implode())
        )
    )
    base = outcome_counts(pool, ["_x", "_y"])
    totals = [float(base[f"_n_{o}"].sum()) for o in _O] if base.height else [0.0] * 4
    n_all = max(sum(totals), 1.0)
    share = (totals[0] + totals[1]) / n_all / 2
    mix = {"x": share, "y": share, "tie": totals[2] / n_all, "bothbad": totals[3] / n_all}
    # a thin pair leans on the earlier months' mix on it (``prior_votes`` votes' worth),
    # else on the month's overall mix; the test itself is within the month
    s = cfg.prior_votes
    if prior is not None and prior.height:
        hist = prior.with_columns(_h=pl.sum_horizontal([pl.col(f"_n_{o}") for o in _O])).select(
            "_x",
            "_y",
            "_h",
            *[
                (
                    (pl.col(f"_n_{o}") + anomaly.crowd_prior_votes * mix[o])
                    / (pl.col("_h") + anomaly.crowd_prior_votes)
                ).alias(f"_mix_{o}")
                for o in _O
            ],
        )
    else:
        hist = pl.DataFrame(
            schema={"_x": pl.String, "_y": pl.String, "_h": pl.Float64}
            | {f"_mix_{o}": pl.Float64 for o in _O}
        )
    votes = long.join(cohorts, on=["model", "voter_hash"])
    # the cohort's own votes in the reference pool (established members) leave it
    own = (
        votes.join(pool.select("battle_id"), on="battle_id")
        .unique(["cohort", "model", "battle_id"])
        .group_by("cohort", "model", "_x", "_y")
        .agg([(pl.col("_outcome") == o).sum().cast(pl.Float64).alias(f"_own_{o}") for o in _O])
    )
    sample = votes if skip is None else votes.join(skip, on=["cohort", "battle_id"], how="anti")
    cells = (
        sample.group_by("cohort", "model", "_x", "_y", "m_is_x")
        .agg(pl.len().alias("n"), pl.col("y").sum().alias("sum_y"))
        .join(base, on=["_x", "_y"], how="left")
        .join(own, on=["cohort", "model", "_x", "_y"], how="left")
        .join(hist, on=["_x", "_y"], how="left")
        .with_columns(
            [
                (
                    (pl.col(f"_n_{o}").fill_null(0.0) - pl.col(f"_own_{o}").fill_null(0.0)).clip(
                        lower_bound=0.0
                    )
                ).alias(f"_m_{o}")
                for o in _O
            ]
        )
        .with_columns(
            [
                (pl.col(f"_m_{o}") + s * pl.col(f"_mix_{o}").fill_null(mix[o])).alias(f"_c_{o}")
                for o in _O
            ]
        )
    )
    n_ref = pl.sum_horizontal([pl.col(f"_c_{o}") for o in _O])
    p_m = pl.when("m_is_x").then(pl.col("_c_x")).otherwise(pl.col("_c_y")) / n_ref
    p_t = (pl.col("_c_tie") + pl.col("_c_bothbad")) / n_ref
    e = p_m + 0.5 * p_t
    var = (p_m + 0.25 * p_t - e**2).clip(lower_bound=1e-6)
    # the votes behind the pair's expectation: the month's established votes and the
    # earlier months' (not the prior's pseudo-votes, which know no pair)
    real = pl.col("_h").fill_null(0.0) + pl.sum_horizontal([pl.col(f"_m_{o}") for o in _O])
    # an opponent with no reference vote at all (n_ref 0) says nothing: its 0/0 would be a
    # NaN, which polars orders above every threshold, and a NaN weight breaks the fit
    cells = cells.filter(n_ref > 0).with_columns(
        (pl.col("sum_y") - pl.col("n") * e).alias("S"),
        (pl.col("n") * var * (1.0 + pl.col("n") / n_ref)).alias("V"),
        (pl.col("n") * real).alias("ref"),
    )
    out = (
        cells.group_by("cohort", "model")
        .agg(pl.col("n").sum(), pl.col("S").sum(), pl.col("V").sum(), pl.col("ref").sum())
        .filter(pl.col("n") >= cfg.cohort_min_votes)
        .with_columns(
            (pl.col("S") / pl.col("V").sqrt()).alias("z"),
            # per pair, averaged over the cohort's votes: a rich pair does not vouch for
            # a thin one, and a model with many opponents is not favoured
            (pl.col("ref") / pl.col("n")).alias("ref"),
        )
        .with_columns((pl.col("ref") >= cfg.cohort_min_reference).alias("testable"))
        .sort("cohort", "model")
    )
    return out


def explained(
    framed: pl.DataFrame,
    long: pl.DataFrame,
    cohorts: pl.DataFrame,
    established: set[str] | None,
    prior: pl.DataFrame | None,
    anomaly: AnomalyConfig,
    cfg: CohortConfig,
    z0: float,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The tests of the month and the (cohort, model) deviations past ``z0``, found one at
    a time, largest |z| first: a cohort's votes for a model it favours are also defeats
    of that model's opponents, so once a deviation is found its votes leave the cohort's
    sample and the opponents are tested without them (otherwise honest newcomers' votes
    on every opponent of a rigged model would be down-weighted too). Each flagged row
    keeps the z it had when found, its direction and its weight factor (z0 / z)⁴."""
    skip = pl.DataFrame(schema={"cohort": pl.String, "battle_id": pl.String})
    found: list[pl.DataFrame] = []
    first = None
    for _ in range(len(COHORTS) * max(1, long["model"].n_unique())):
        tests = cohort_tests(framed, long, cohorts, established, prior, anomaly, cfg, skip)
        first = tests if first is None else first
        done = pl.concat([f.select("cohort", "model") for f in found]) if found else None
        open_ = tests if done is None else tests.join(done, on=["cohort", "model"], how="anti")
        worst = open_.filter("testable", pl.col("z").abs() >= z0).sort(
            pl.col("z").abs(), descending=True
        )
        if worst.height == 0:
            break
        row = worst.head(1)
        found.append(row)
        cohort, model = row["cohort"][0], row["model"][0]
        explained_ids = (
            long.filter(pl.col("model") == model)
            .join(cohorts.filter(pl.col("cohort") == cohort), on=["model", "voter_hash"])
            .select("cohort", "battle_id")
        )
        skip = pl.concat([skip, explained_ids]).unique()
    flagged = (
        pl.concat(found)
        if found
        else pl.DataFrame(
            schema={"cohort": pl.String, "model": pl.String, "n": pl.UInt32}
            | {"S": pl.Float64, "V": pl.Float64, "ref": pl.Float64, "z": pl.Float64}
        )
    )
    flagged = flagged.with_columns(
        ((z0 / pl.col("z").abs()) ** FACTOR_POWER).alias("factor"),
        pl.when(pl.col("z") >= 0).then(pl.lit("for")).otherwise(pl.lit("against")).alias("way"),
    )
    return first, flagged


def cohort_weights(
    tested: pl.DataFrame,
    served: pl.DataFrame | None,
    established: set[str] | None,
    prior: pl.DataFrame | None,
    anomaly: AnomalyConfig,
    cfg: CohortConfig,
) -> CohortResult:
    """Weights and reasons of the ``tested`` votes (module docstring). ``served``: the
    month's anonymous battles served without a vote; ``established``: the tested voters
    with history, None when the lake has no earlier month (then nobody is fresh)."""
    schema = {"battle_id": pl.String, "weight": pl.Float64, "weight_reason": pl.String}
    if tested.height == 0 or not cfg.enabled:
        return CohortResult(pl.DataFrame(schema=schema), pl.DataFrame(), {})
    history_given = established is not None
    n_models = pl.concat([tested["model_a"], tested["model_b"]]).n_unique()
    z0 = threshold(n_models, cfg.cohort_alpha)
    fresh = set(tested["voter_hash"].unique().to_list()) - established if history_given else set()
    framed = pair_frame(tested)
    long = _sides(framed)
    cohorts = members(long, fresh if history_given else None, cfg, served)
    tests, flagged = explained(framed, long, cohorts, established, prior, anomaly, cfg, z0)
    base = tested.select(
        "battle_id",
        pl.when(pl.col("voter_hash").is_in(pl.Series(list(fresh), dtype=pl.String).implode()))
        .then(cfg.fresh_weight)
        .otherwise(1.0)
        .alias("_age"),
        pl.when(pl.col("voter_hash").is_in(pl.Series(list(fresh), dtype=pl.String).implode()))
        .then(pl.lit("no_history"))
        .alias("_age_reason"),
    )
    factors = pl.DataFrame(
        schema={"battle_id": pl.String, "_factor": pl.Float64, "_reason": pl.String}
    )
    if flagged.height:
        hit = (
            long.join(cohorts, on=["model", "voter_hash"])
            .join(flagged.select("cohort", "model", "z", "factor", "way"), on=["cohort", "model"])
            .with_columns(
                (
                    pl.lit("cohort:")
                    + pl.col("cohort")
                    + ":"
                    + pl.col("way")
                    + ":"
                    + pl.col("model")
                    + " z="
                    + pl.col("z").round(1).cast(pl.String)
                ).alias("_reason")
            )
        )
        # the strongest factor applies; every flagged cohort the vote belongs to is named
        factors = (
            hit.sort("factor", "_reason")
            .group_by("battle_id", maintain_order=True)
            .agg(
                pl.col("factor").min().alias("_factor"),
                pl.col("_reason").unique(maintain_order=True).str.join("; "),
            )
        )
    weights = (
        base.join(factors, on="battle_id", how="left")
        .with_columns(
            (pl.col("_age") * pl.col("_factor").fill_null(1.0)).alias("weight"),
            pl.concat_str(
                [pl.col("_age_reason"), pl.col("_reason")], separator="; ", ignore_nulls=True
            )
            .replace("", None)
            .alias("weight_reason"),
        )
        .select(list(schema))
    )
    testable = tests.filter("testable")
    metadata = {
        "cohort_z_threshold": round(z0, 2),
        "fresh_weight": cfg.fresh_weight if history_given else 1.0,
        "votes_no_history": int(base["_age_reason"].is_not_null().sum()),
        "cohorts_flagged": [
            {
                "cohort": c,
                "model": m,
                "direction": w,
                "z": round(z, 1),
                "votes": int(n),
                "weight_factor": round(f, 4),
            }
            for c, m, w, z, n, f in flagged.select(
                "cohort", "model", "way", "z", "n", "factor"
            ).iter_rows()
        ],
        "max_abs_cohort_z": round(float(testable["z"].abs().max()), 2) if testable.height else 0.0,
        "cohort_min_reference": cfg.cohort_min_reference,
        # cohorts with enough votes but too thin a reference to judge, listed for the
        # operator: a young lake's (or a small deployment's) deviations go unjudged
        "cohorts_thin_reference": [
            {"cohort": c, "model": m, "votes": int(n), "reference_per_pair": round(r, 1)}
            | {"z": round(z, 1)}
            for c, m, n, r, z in tests.filter(~pl.col("testable"))
            .sort(pl.col("z").abs(), descending=True)
            .head(20)
            .select("cohort", "model", "n", "ref", "z")
            .iter_rows()
        ],
    }
    return CohortResult(weights, tests, metadata)
