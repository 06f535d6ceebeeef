"""The population rules of the battle filter (`battles/cohort.py`) on hand-built votes:
a cohort that deviates is down-weighted with its reason, an honest one is not, and
accounts without history weigh ``fresh_weight``."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from arena_assets.battles.cohort import cohort_weights, threshold
from arena_assets.battles.config import AnomalyConfig, CohortConfig
from arena_assets.battles.reference import crowd_counts

STRENGTH = {f"m{i:02d}": 25.0 * i for i in range(12)}
NAMES = list(STRENGTH)
TARGET = "m03"


class Votes:
    """Honest Bradley-Terry votes of established and fresh voters, and attacks."""

    def __init__(self, seed: int = 5) -> None:
        self.rng = np.random.default_rng(seed)
        self.rows: list[tuple] = []
        self.served: list[tuple] = []

    def _pair(self) -> tuple[str, str]:
        a, b = self.rng.choice(len(NAMES), 2, replace=False)
        return NAMES[a], NAMES[b]

    def honest(self, voter: str, votes: int) -> None:
        for _ in range(votes):
            a, b = self._pair()
            p = 1 / (1 + 10 ** ((STRENGTH[b] - STRENGTH[a]) / 400))
            winner = "model_a" if self.rng.random() < p else "model_b"
            self.rows.append((f"b{len(self.rows):06d}", voter, a, b, winner))
            if self.rng.random() < 0.3:  # a battle it left without a vote
                self.served.append((voter, *self._pair()))

    def for_target(self, voter: str, votes: int, skip: int = 0) -> None:
        """Votes for TARGET whenever it shows; ``skip`` battles without it per vote."""
        for _ in range(votes):
            other = NAMES[int(self.rng.integers(len(NAMES)))]
            while other == TARGET:
                other = NAMES[int(self.rng.integers(len(NAMES)))]
            a, b = (TARGET, other) if self.rng.random() < 0.5 else (other, TARGET)
            self.rows.append(
                (f"b{len(self.rows):06d}", voter, a, b, "model_a" if a == TARGET else "model_b")
            )
            for _ in range(skip):
                pair = self._pair()
                while TARGET in pair:
                    pair = self._pair()
                self.served.append((voter, *pair))

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        votes = pl.DataFrame(
            self.rows,
            schema=["battle_id", "voter_hash", "model_a", "model_b", "winner"],
            orient="row",
        )
        served = pl.DataFrame(
            self.served, schema=["voter_hash", "model_a", "model_b"], orient="row"
        )
        return votes, served


def _history(n: int = 20000, seed: int = 11) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        a, b = (NAMES[i] for i in rng.choice(len(NAMES), 2, replace=False))
        p = 1 / (1 + 10 ** ((STRENGTH[b] - STRENGTH[a]) / 400))
        rows.append((a, b, "model_a" if rng.random() < p else "model_b"))
    frame = pl.DataFrame(rows, schema=["model_a", "model_b", "winner"], orient="row")
    return crowd_counts(frame.group_by("model_a", "model_b", "winner").agg(pl.len().alias("n")))


def _month(attack=None) -> tuple[pl.DataFrame, pl.DataFrame, set[str]]:
    month = Votes()
    for v in range(600):
        month.honest(f"old-{v}", int(month.rng.integers(2, 10)))
    for v in range(400):
        month.honest(f"new-{v}", int(month.rng.integers(1, 4)))
    if attack:
        attack(month)
    votes, served = month.frames()
    return votes, served, {f"old-{v}" for v in range(600)}


def _weights(votes, served, established, **cfg) -> tuple[pl.DataFrame, dict]:
    result = cohort_weights(
        votes, served, established, _history(), AnomalyConfig(), CohortConfig(**cfg)
    )
    return votes.join(result.weights, on="battle_id"), result.metadata


def test_honest_month_weighs_only_accounts_without_history() -> None:
    votes, served, established = _month()
    weighted, meta = _weights(votes, served, established)
    fresh = pl.col("voter_hash").str.starts_with("new-")
    assert weighted.filter(fresh)["weight"].unique().to_list() == [0.25]
    assert weighted.filter(fresh)["weight_reason"].unique().to_list() == ["no_history"]
    assert weighted.filter(~fresh)["weight"].unique().to_list() == [1.0]
    assert weighted.filter(~fresh)["weight_reason"].null_count() == weighted.filter(~fresh).height
    assert meta["cohorts_flagged"] == []
    assert meta["max_abs_cohort_z"] < meta["cohort_z_threshold"]


def test_fresh_cohort_that_favours_one_model_loses_its_weight_on_it() -> None:
    def sybils(month: Votes) -> None:  # 150 fresh accounts, 2 votes each, for the target
        for k in range(150):
            month.for_target(f"syb-{k}", 2)

    votes, served, established = _month(sybils)
    weighted, meta = _weights(votes, served, established)
    flagged = {(f["cohort"], f["model"], f["direction"]) for f in meta["cohorts_flagged"]}
    assert ("fresh", TARGET, "for") in flagged
    rigged = weighted.filter(pl.col("voter_hash").str.starts_with("syb-"))
    assert rigged["weight_reason"].str.contains(f"cohort:fresh:for:{TARGET} z=").all()
    assert rigged["weight_reason"].str.starts_with("no_history; ").all()
    assert rigged["weight"].max() < 0.25 * 0.2  # the age weight times the cohort's factor
    # honest newcomers keep the age weight on every other model
    other = weighted.filter(
        pl.col("voter_hash").str.starts_with("new-")
        & (pl.col("model_a") != TARGET)
        & (pl.col("model_b") != TARGET)
    )
    assert other["weight"].unique().to_list() == [0.25]


def test_a_cohort_judged_against_too_few_established_votes_is_listed_not_weighed() -> None:
    """The same sybils, in a young lake: only 8 voters have history and no earlier
    outcome counts back the pairs, so each pair's expectation rests on under one vote."""

    def sybils(month: Votes) -> None:
        for k in range(150):
            month.for_target(f"syb-{k}", 2)

    votes, served, _ = _month(sybils)
    few = {f"old-{v}" for v in range(8)}

    def judged(**cfg) -> tuple[pl.DataFrame, dict]:
        result = cohort_weights(votes, served, few, None, AnomalyConfig(), CohortConfig(**cfg))
        return votes.join(result.weights, on="battle_id"), result.metadata

    weighted, meta = judged()
    assert meta["cohorts_flagged"] == []
    assert not weighted["weight_reason"].fill_null("").str.contains("cohort:").any()
    thin = {(t["cohort"], t["model"]) for t in meta["cohorts_thin_reference"]}
    assert ("fresh", TARGET) in thin
    assert all(t["votes"] >= 20 for t in meta["cohorts_thin_reference"])  # enough votes
    # with the bar lowered to what this month has, the deviation is judged again
    _, low = judged(cohort_min_reference=0)
    assert (TARGET, "for") in {(f["model"], f["direction"]) for f in low["cohorts_flagged"]}


def test_a_rich_history_backs_a_thin_month() -> None:
    """8 established voters this month, but 20,000 earlier votes behind every pair: the
    expectation is sound, the sybils' cohort is judged and down-weighted."""

    def sybils(month: Votes) -> None:
        for k in range(150):
            month.for_target(f"syb-{k}", 2)

    votes, served, _ = _month(sybils)
    weighted, meta = _weights(votes, served, {f"old-{v}" for v in range(8)})
    assert ("fresh", TARGET, "for") in {
        (f["cohort"], f["model"], f["direction"]) for f in meta["cohorts_flagged"]
    }
    assert weighted.filter(pl.col("voter_hash").str.starts_with("syb-"))["weight"].max() < 0.25


def test_aged_accounts_that_skip_all_but_one_model_form_a_selective_cohort() -> None:
    def taken_over(month: Votes) -> None:  # established accounts, skipping 14 battles a vote
        for k in range(60):
            month.for_target(f"old-{k}", 2, skip=14)

    votes, served, established = _month(taken_over)
    weighted, meta = _weights(votes, served, established)
    flagged = {(f["cohort"], f["model"]) for f in meta["cohorts_flagged"]}
    assert ("selective", TARGET) in flagged
    rigged = weighted.filter(
        pl.col("voter_hash").is_in([f"old-{k}" for k in range(60)])
        & ((pl.col("model_a") == TARGET) | (pl.col("model_b") == TARGET))
        & (pl.col("battle_id") >= "b0")
    )
    assert (rigged["weight"] < 1).mean() > 0.9
    assert rigged["weight_reason"].str.contains("cohort:").mean() > 0.9


def test_without_history_every_vote_weighs_one() -> None:
    votes, served, _ = _month()
    weighted, meta = _weights(votes, served, None)
    assert weighted["weight"].unique().to_list() == [1.0]
    assert meta["fresh_weight"] == 1.0 and meta["votes_no_history"] == 0


def test_rules_off_weigh_nothing() -> None:
    votes, served, established = _month()
    result = cohort_weights(
        votes, served, established, None, AnomalyConfig(), CohortConfig(enabled=False)
    )
    assert result.weights.height == 0


def test_threshold_is_bonferroni_over_every_test_of_the_month() -> None:
    # 3 cohorts x 30 models x 2 directions at 1 %: one-sided 1e-2 / 180
    assert threshold(30, 0.01) == pytest.approx(3.865, abs=1e-3)
    assert threshold(12, 0.01) < threshold(30, 0.01) < threshold(30, 0.001)


def _board(ratings: dict[str, float], se: float) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "board": "overall",
            "model": list(ratings),
            "rating": list(ratings.values()),
            "lower": [r - 1.96 * se for r in ratings.values()],
            "upper": [r + 1.96 * se for r in ratings.values()],
            "ci_level": 0.95,
        }
    )


def test_a_move_driven_by_accounts_without_history_warns_before_the_alarm() -> None:
    from arena_assets.ranking.alarm import Z_ALARM, alarms, cohort_warnings, rating_moves

    before = _board({"a": 1000.0, "b": 1000.0, "c": 1000.0, "d": 1000.0}, se=10.0)
    after = _board({"a": 1018.0, "b": 994.0, "c": 994.0, "d": 994.0}, se=8.0)  # z(a) = 4
    moves = rating_moves(after, before)
    assert 1.96 < moves.filter(pl.col("model") == "a")["z"][0] < Z_ALARM
    assert alarms(moves, None) == []
    rng = np.random.default_rng(1)
    n = 600

    def votes(fresh_wins: float) -> pl.DataFrame:
        fresh = rng.random(n) < 0.2
        p = np.where(fresh, fresh_wins, 0.5)
        return pl.DataFrame(
            {
                "battle_id": [f"x{i}" for i in range(n)],
                "model_a": "a",
                "model_b": rng.choice(["b", "c", "d"], n),
                "winner": np.where(rng.random(n) < p, "model_a", "model_b"),
                "keep": True,
                "voter_hash": [f"v{i}" for i in range(n)],
                "voter_fresh": fresh,
            }
        )

    driven = cohort_warnings(moves, votes(0.95))
    assert [w["model"] for w in driven] == ["a"]
    assert driven[0]["fresh_z"] >= 3 and driven[0]["fresh_votes"] > 0
    assert "without history" in driven[0]["reason"]
    assert cohort_warnings(moves, votes(0.5)) == []  # the same move, the crowd's doing


def test_the_alarm_lists_the_filters_cohort_down_weights() -> None:
    from arena_assets.ranking.alarm import downweighted_cohorts

    battles = pl.DataFrame(
        {
            "keep": [True, True, True, False],
            "weight": [0.01, 0.02, 0.25, 1.0],
            "weight_reason": [
                "no_history; cohort:fresh:for:a z=9.1",
                "cohort:selective:for:a z=6.0",
                "no_history",
                None,
            ],
        }
    )
    listed = downweighted_cohorts(battles)
    assert {c["cohort"] for c in listed} == {"cohort:fresh:for:a", "cohort:selective:for:a"}
    assert next(c for c in listed if c["cohort"] == "cohort:fresh:for:a")["z"] == 9.1


def test_a_month_whose_voters_all_lack_history_gets_finite_weights() -> None:
    """The lake has an earlier month but none of this month's voters voted in it (a thin
    first month, a sampled release): the reference pool is empty, so no cohort can be
    tested, and every weight stays a number the boards can fit (a 0/0 would be a NaN,
    which orders above any threshold)."""
    month = Votes(seed=9)
    for v in range(300):
        month.honest(f"new-{v}", 4)
    votes, served = month.frames()
    result = cohort_weights(votes, served, set(), None, AnomalyConfig(), CohortConfig())
    weighted = votes.join(result.weights, on="battle_id")
    assert weighted.height == votes.height and weighted["weight"].is_finite().all()
    assert weighted["weight"].unique().to_list() == [0.25]  # no history, nothing else
    assert result.metadata["cohorts_flagged"] == []


def test_the_fresh_deviation_counts_a_voter_once_not_once_per_vote() -> None:
    """The same fresh votes (same count, same wins) cast by 200 voters or by 20: the
    two-sample z of 20 voters is smaller (each is one draw of a taste), so a few keen
    honest newcomers do not make a warning on their own."""
    from arena_assets.ranking.alarm import cohort_z, fresh_deviation

    rng = np.random.default_rng(3)
    n_old, n_fresh = 2000, 200
    old_wins = rng.random(n_old) < 0.5
    fresh_wins = np.array([True] * 130 + [False] * 70)

    def battles(fresh_voters: list[str]) -> pl.DataFrame:
        wins = np.concatenate([old_wins, fresh_wins])
        return pl.DataFrame(
            {
                "battle_id": [f"b{i}" for i in range(n_old + n_fresh)],
                "model_a": "a",
                "model_b": "b",
                "winner": np.where(wins, "model_a", "model_b"),
                "keep": True,
                "voter_hash": [f"old-{i % 700}" for i in range(n_old)] + fresh_voters,
                "voter_fresh": [False] * n_old + [True] * n_fresh,
            }
        )

    spread = fresh_deviation(battles([f"new-{i}" for i in range(n_fresh)]), "a")
    # twenty keen voters, 10 votes each, all one way: 13 for the model, 7 against
    keen = [f"new-{i // 10}" for i in range(n_fresh)]
    clustered = fresh_deviation(battles(keen), "a")
    assert spread["fresh_votes"] == clustered["fresh_votes"] == n_fresh
    assert spread["fresh_net_wins"] == clustered["fresh_net_wins"] == 60
    assert spread["fresh_z"] > cohort_z(30) > clustered["fresh_z"] > 0
