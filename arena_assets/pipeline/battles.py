"""The battles step: the month's vote events and conversations -> the lake's ``battles``.

The anomaly test's crowd includes the kept votes of every earlier month in the lake, and
its voters tell this month's fresh accounts from established ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from arena_assets.battles import BattleConfig, BattleResult, build_battles
from arena_assets.contracts import SERVED_TYPE, VOTE_TYPES
from arena_assets.storage import Lake


def earlier_crowd(lake: Lake, months: list[str]) -> pl.DataFrame | None:
    """Kept votes of ``months``, counted per (model_a, model_b, winner): the crowd the
    anomaly test compares this month's voters with, besides this month's own votes."""
    if not months:
        return None
    return (
        lake.read_months("battles", months, columns=["model_a", "model_b", "winner", "keep"])
        .filter("keep")
        .group_by("model_a", "model_b", "winner")
        .agg(pl.len().alias("n"))
        .sort("model_a", "model_b", "winner")
    )


def earlier_voters(lake: Lake, months: list[str]) -> pl.DataFrame | None:
    """Every voter of ``months`` (``voter_hash``): the established accounts; those not in
    it are fresh this month (account age). None without earlier months."""
    if not months:
        return None
    return lake.read_months("battles", months, columns=["voter_hash"]).unique().sort("voter_hash")


@dataclass
class BattlesMonth:
    """What the battles step wrote and the figures its checks need."""

    month: str
    result: BattleResult  # .battles is the written frame, sorted by battle_id
    votes_read: int  # vote events in raw_logs
    kept: int
    removed: int
    url: str

    @property
    def votes_conserved(self) -> bool:
        return self.result.battles.height == self.votes_read

    @property
    def removals_accounted(self) -> bool:
        return self.kept + self.removed == self.result.battles.height


def battles_month(lake: Lake, month: str, config: BattleConfig | None = None) -> BattlesMonth:
    """The month's vote events joined to its conversations -> the lake's ``battles``."""
    events = lake.read("raw_logs", month, filters=[("type", "in", [*VOTE_TYPES, SERVED_TYPE])])
    convs = lake.read(
        "conversations", month, columns=["conv_id", "tstamp", "language", "dedup_key"]
    )
    crowd_months = [m for m in lake.months("battles", upto=month) if m != month]
    result = build_battles(
        events,
        convs,
        config,
        crowd=earlier_crowd(lake, crowd_months),
        history=earlier_voters(lake, crowd_months),
    )
    votes = events.filter(pl.col("type").is_in(VOTE_TYPES))
    result.metadata["crowd_months"] = crowd_months
    result.battles = result.battles.sort("battle_id")
    url = lake.write("battles", month, result.battles)
    return BattlesMonth(
        month,
        result,
        votes.height,
        int(result.battles["keep"].sum()),
        sum(result.removed_by_reason.values()),
        url,
    )
