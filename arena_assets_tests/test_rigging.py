"""The rigging stages of the battle filter on hand-built months: linked identities, the robust
reference, served-but-not-voted (per voter and per signature group), the rating alarm.

The months are written here (no simulator): honest Bradley-Terry voters, each with
served battles it left without a vote, and target-only attackers on fresh accounts, linked or not.
"""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from arena_assets.battles import BattleConfig, build_battles
from arena_assets.battles.build import battle_rows, judge_battles, served_rows
from arena_assets.battles.config import AnomalyConfig
from arena_assets.battles.linking import linked_clusters
from arena_assets.battles.reference import month_scale, outcome_counts, pair_frame
from arena_assets.battles.selective import selection
from arena_assets.clean.schema import CONVERSATIONS_SCHEMA
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA
from arena_assets.ranking.alarm import alarms, rating_moves

START = datetime(2024, 5, 1, tzinfo=UTC)
MODELS = {f"m{i:02d}": 1000 + 25 * i for i in range(12)}
NAMES = list(MODELS)
TARGET = "m02"  # a weak model: boosting it is visible


class Month:
    def __init__(self, seed: int = 3) -> None:
        self.rng = np.random.default_rng(seed)
        self.rows: list[dict] = []
        self.convs: list[dict] = []
        self.rigged: set[str] = set()

    def event(
        self,
        voter: str,
        t: datetime,
        a: str,
        b: str,
        kind: str,
        ip: str | None = None,
        net: str | None = None,
        device: str | None = None,
    ) -> None:
        i = len(self.rows)
        row = {
            "month": "2024-05",
            "event_id": f"e-{i:06d}",
            "source_file": "x",
            "line_no": i + 1,
            "tstamp": t,
            "type": kind,
            "anony": True,
            "user_hash": voter,
            "ip_hash": ip,
            "net_hash": net,
            "device_hash": device,
            "model_a": a,
            "model_b": b,
            "source_format": "native",
        }
        if kind != "served":
            msgs = [
                {"role": "user", "content": f"q{i}", "images": []},
                {"role": "assistant", "content": "ok", "images": []},
            ]
            row |= {
                "conv_id_a": f"c{i}a",
                "conv_id_b": f"c{i}b",
                "messages_a": msgs,
                "messages_b": msgs,
            }
            for side in "ab":
                self.convs.append(
                    {"conv_id": f"c{i}{side}", "tstamp": t, "language": "en", "dedup_key": f"k{i}"}
                )
        self.rows.append(row)

    def pair(self) -> tuple[str, str]:
        a, b = self.rng.choice(len(NAMES), 2, replace=False)
        return NAMES[a], NAMES[b]

    def honest(
        self,
        voter: str,
        battles: int,
        ip: str | None = None,
        net: str | None = None,
        device: str | None = None,
    ) -> None:
        """Votes on ~70 % of the battles it is served, whatever the models."""
        t = START + timedelta(seconds=float(self.rng.uniform(0, 25 * 86400)))
        for _ in range(battles):
            a, b = self.pair()
            t += timedelta(minutes=float(self.rng.uniform(3, 30)))
            if self.rng.random() < 0.3:
                self.event(voter, t, a, b, "served", ip, net, device)
                continue
            p = 1 / (1 + 10 ** ((MODELS[b] - MODELS[a]) / 400))
            kind = "leftvote" if self.rng.random() < p else "rightvote"
            self.event(voter, t, a, b, kind, ip, net, device)

    def target_only(
        self,
        voter: str,
        votes: int,
        ip: str | None = None,
        net: str | None = None,
        device: str | None = None,
    ) -> None:
        """Served battles until TARGET shows, votes for it, leaves the rest."""
        self.rigged.add(voter)
        t = START + timedelta(seconds=float(self.rng.uniform(0, 25 * 86400)))
        cast = 0
        while cast < votes:
            a, b = self.pair()
            t += timedelta(minutes=2)
            if TARGET not in (a, b):
                self.event(voter, t, a, b, "served", ip, net, device)
                continue
            self.event(voter, t, a, b, "leftvote" if a == TARGET else "rightvote", ip, net, device)
            cast += 1

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        conv = pl.DataFrame(self.convs).with_columns(pl.lit("2024-05").alias("month"))
        conv = conv.select(
            [
                pl.col(c).cast(t) if c in conv.columns else pl.lit(None, dtype=t).alias(c)
                for c, t in CONVERSATIONS_SCHEMA.items()
            ]
        )
        return pl.DataFrame(self.rows, schema=RAW_LOGS_SCHEMA), conv


def _honest_crowd(seed: int = 11, n: int = 20000) -> pl.DataFrame:
    """Earlier months' kept votes: honest BT outcomes on every pair."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        a, b = (NAMES[i] for i in rng.choice(len(NAMES), 2, replace=False))
        p = 1 / (1 + 10 ** ((MODELS[b] - MODELS[a]) / 400))
        rows.append((a, b, "model_a" if rng.random() < p else "model_b"))
    return (
        pl.DataFrame(rows, schema=["model_a", "model_b", "winner"], orient="row")
        .group_by("model_a", "model_b", "winner")
        .agg(pl.len().alias("n"))
    )


def _month(attack) -> tuple[Month, object]:
    month = Month()
    for v in range(300):
        month.honest(
            f"old-{v}", int(month.rng.integers(2, 12)), ip=f"ip-old-{v}", net=f"net-{v % 150}"
        )
    for v in range(150):  # fresh honest accounts, some sharing a campus network
        month.honest(
            f"new-{v}", int(month.rng.integers(1, 6)), ip=f"ip-new-{v}", net=f"net-campus-{v % 5}"
        )
    attack(month)
    raw, conv = month.frames()
    history = pl.DataFrame({"voter_hash": [f"old-{v}" for v in range(300)]})
    return month, build_battles(
        raw, conv, BattleConfig(seed=1), crowd=_honest_crowd(), history=history
    )


def _removed(month: Month, result) -> tuple[float, int]:
    b = result.battles
    rigged = pl.col("voter_hash").is_in(list(month.rigged))
    rate = b.filter(rigged).select((~pl.col("keep")).mean()).item()
    honest_new = b.filter(
        ~rigged
        & pl.col("removed_reason").is_in(
            [
                "linked_anomalous",
                "linked_burst",
                "linked_daily_cap",
                "selective_voter",
                "selective_cluster",
            ]
        )
    ).height
    return rate, honest_new


def test_linked_sybils_are_caught_per_cluster() -> None:
    def attack(month: Month) -> None:
        for g in range(6):  # groups of 10 fresh accounts, 1-5 votes each: one address per group
            for k in range(10):
                month.target_only(
                    f"syb-{g}-{k}",
                    int(month.rng.integers(1, 6)),
                    ip=f"ip-farm-{g}",
                    net=f"net-farm-{g}",
                    device=f"dev-{g}-{k}",
                )

    month, result = _month(attack)
    rate, honest_new = _removed(month, result)
    assert rate >= 0.95 and honest_new == 0, (rate, honest_new)
    b = result.battles.filter(pl.col("voter_hash").str.starts_with("syb-"))
    assert b["link_cluster"].str.starts_with("link:").all()
    assert b["voter_fresh"].all()
    # one cluster per farm, its members' votes pooled and flagged
    assert (
        b.group_by("link_cluster").agg(pl.col("voter_hash").n_unique())["voter_hash"].to_list()
        == [10] * 6
    )


def test_unlinked_sybils_are_caught_by_what_they_left_unvoted() -> None:
    def attack(month: Month) -> None:
        for k in range(80):  # each from its own address and network
            month.target_only(
                f"syb-{k}", int(month.rng.integers(1, 6)), ip=f"ip-syb-{k}", net=f"net-syb-{k}"
            )

    month, result = _month(attack)
    rate, honest_new = _removed(month, result)
    assert rate >= 0.9 and honest_new == 0, (rate, honest_new)
    reasons = set(
        result.battles.filter(pl.col("voter_hash").str.starts_with("syb-"))[
            "removed_reason"
        ].drop_nulls()
    )
    assert reasons <= {"selective_voter", "selective_cluster"}, reasons
    groups = result.groups.filter(pl.col("group_kind") == "signature").filter("anomalous")
    assert groups["group"].to_list() == [f"sig:{TARGET}"]
    assert groups["anomaly_alternative"].to_list() == [f"for:{TARGET}"]


def test_honest_month_loses_nothing_to_the_new_rules() -> None:
    month, result = _month(lambda m: None)
    assert _removed(month, result)[1] == 0
    meta = result.metadata["rigging"]
    # campus networks link fresh accounts only; established ones on a shared /24 stay apart
    assert meta["linked_clusters"] == 5 and meta["linked_clusters_flagged"] == 0


def test_shared_identifier_above_the_limit_links_nobody() -> None:
    events = pl.DataFrame(
        {
            "voter_hash": [f"v{i}" for i in range(60)] + ["a", "b"],
            "ip_hash": ["nat"] * 60 + ["home", "home"],
            "net_hash": [None] * 62,
            "device_hash": [None] * 62,
        }
    )
    linked = linked_clusters(events, set(), max_accounts=50)
    assert linked.to_dicts() == [
        {"voter_hash": "a", "group": "link:a"},
        {"voter_hash": "b", "group": "link:a"},
    ]
    # a network links fresh accounts only
    nets = pl.DataFrame(
        {
            "voter_hash": ["x", "y", "z"],
            "ip_hash": [None] * 3,
            "net_hash": ["n1"] * 3,
            "device_hash": [None] * 3,
        }
    )
    assert linked_clusters(nets, {"x", "y"}, 50)["voter_hash"].to_list() == ["x", "y"]


def test_selection_ratio_has_mean_one_under_h0() -> None:
    """Independent check of C(n,k)/C(n_m,k): over every k-subset of a voter's served
    battles (voting blind to the models), the ratio averages exactly 1."""
    served = [
        ("m00", "m01"),
        ("m02", "m03"),
        ("m00", "m04"),
        ("m05", "m06"),
        ("m00", "m07"),
        ("m08", "m09"),
    ]
    for k in (1, 2, 3):
        total, count = 0.0, 0
        for voted in itertools.combinations(range(len(served)), k):
            frame = pl.DataFrame(
                {
                    "voter_hash": ["v"] * len(served),
                    "model_a": [a for a, _ in served],
                    "model_b": [b for _, b in served],
                    "voted": [i in voted for i in range(len(served))],
                }
            )
            cand = selection(frame).filter(pl.col("model") == "m00")
            total += math.exp(cand["log_sel"][0]) if cand.height else 0.0
            count += 1
        assert total / count == pytest.approx(1.0)


def test_reference_caps_the_months_weight_on_a_pair() -> None:
    prior = outcome_counts(
        pair_frame(
            pl.DataFrame(
                {"model_a": ["m00"] * 40, "model_b": ["m01"] * 40, "winner": ["model_b"] * 40}
            )
        ),
        ["_x", "_y"],
    )
    attack = pair_frame(
        pl.DataFrame(
            {
                "model_a": ["m00"] * 1000 + ["m03"] * 10,
                "model_b": ["m01"] * 1000 + ["m04"] * 10,
                "winner": ["model_a"] * 1010,
            }
        )
    )
    scale = month_scale(outcome_counts(attack, ["_x", "_y"]), prior, AnomalyConfig())
    got = dict(zip(scale["_x"] + scale["_y"], scale["_scale"]))
    assert got["m00m01"] == pytest.approx(40 / 1000)  # the month weighs at most the history
    assert got["m03m04"] == 1.0  # no history: capped at 2x the month's median pair (10)


def test_rating_alarm_names_the_moved_model_and_its_votes() -> None:
    def board(ratings: dict[str, float], se: float) -> pl.DataFrame:
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

    before = board({"a": 1000.0, "b": 1050.0, "c": 950.0, "d": 1000.0}, se=10.0)
    after = board({"a": 1040.0, "b": 1040.0, "c": 940.0, "d": 980.0}, se=8.0)  # se_move = 6
    moves = rating_moves(after, before)
    z = dict(zip(moves["model"], moves["z"]))
    # both boards average 1000: a moved +40 against sqrt(10^2 - 8^2) = 6 -> z 6.67
    assert z["a"] == pytest.approx(40.0 / 6.0, rel=1e-4)
    battles = pl.DataFrame(
        {
            "battle_id": ["x1", "x2", "x3"],
            "model_a": ["a", "b", "a"],
            "model_b": ["c", "a", "d"],
            "winner": ["model_a", "model_b", "model_a"],
            "keep": [True, True, True],
            "voter_hash": ["v1", "v1", "v2"],
            "link_cluster": ["link:v1", "link:v1", None],
            "voter_fresh": [True, True, False],
        }
    )
    found = alarms(moves, battles, threshold=4.5)
    assert [f["model"] for f in found] == ["a"]
    assert found[0]["net_wins"] == 3 and found[0]["top_voters"][0]["voter_or_cluster"] == "link:v1"
    assert found[0]["top_voters"][0]["battle_ids"] == ["x1", "x2"]


def test_rows_prepared_apart_judge_like_the_whole_month() -> None:
    """`battle_rows` is row-local: a month prepared in two parts (honest voters, then the
    attack's accounts) and judged together gives the battles `build_battles` gives."""

    def attack(month: Month) -> None:
        for k in range(40):
            month.target_only(
                f"syb-{k}", int(month.rng.integers(1, 6)), ip=f"ip-syb-{k}", net=f"net-syb-{k}"
            )

    month, whole = _month(attack)
    raw, conv = month.frames()
    config = BattleConfig(seed=1, known_models=tuple(NAMES))
    history = pl.DataFrame({"voter_hash": [f"old-{v}" for v in range(300)]})
    rigged = pl.col("user_hash").str.starts_with("syb-")
    parts = [battle_rows(raw.filter(side), conv, config) for side in (~rigged, rigged)]
    apart = judge_battles(
        pl.concat(parts), served_rows(raw, config), config, crowd=_honest_crowd(), history=history
    )
    together = build_battles(raw, conv, config, crowd=_honest_crowd(), history=history)
    assert apart.battles.sort("battle_id").equals(together.battles.sort("battle_id"))
    assert apart.removed_by_reason == together.removed_by_reason
    assert (
        together.battles.filter(pl.col("voter_hash").str.starts_with("syb-"))["keep"].mean() < 0.1
    )
    assert whole.battles.height == together.battles.height
