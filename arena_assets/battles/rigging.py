"""The rigging stages of the battle filter, run after the per-voter rules (`build.py`).

* ``linked_anomalous`` / ``linked_burst`` / ``linked_daily_cap``: the sequential test, the
  burst rule and the daily cap per linked cluster (`linking.py`);
* ``selective_voter``: served but not voted, per voter (`selective.py`);
* ``selective_cluster``: the sequential test per signature group of fresh accounts that
  voted only with one model on screen (`selective.py`), costing the members whose every
  vote went the flagged way.

Every test judges against the robust reference (`reference.py`) without the voters the
per-voter test already flagged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from arena_assets.battles.anomaly import anomalous_voters
from arena_assets.battles.config import BattleConfig
from arena_assets.battles.linking import fresh_voters, linked_clusters
from arena_assets.battles.reference import crowd_counts, pair_frame, reference_probabilities
from arena_assets.battles.sampling import in_burst
from arena_assets.battles.selective import (
    selection,
    selective_voters,
    served_battles,
    signature_members,
)

RIGGING_FLAGS = (
    "linked_anomalous",
    "linked_burst",
    "linked_daily_cap",
    "selective_voter",
    "selective_cluster",
)
_IDS = ("ip_hash", "net_hash", "device_hash")


@dataclass
class RiggingResult:
    flags: pl.DataFrame  # battle_id, every RIGGING_FLAGS column, link_cluster, voter_fresh
    groups: pl.DataFrame  # one row per linked cluster and signature group tested
    selective: pl.DataFrame  # one row per voter with a selection candidate
    metadata: dict = field(default_factory=dict)


def _ids(frame: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in _IDS if c not in frame.columns]
    return frame.with_columns([pl.lit(None, dtype=pl.String).alias(c) for c in missing])


def _in(col: str, values) -> pl.Expr:
    return pl.col(col).is_in(pl.Series(list(values), dtype=pl.String).implode())


def _agreeing(tested: pl.DataFrame, sig: pl.DataFrame, flagged: pl.DataFrame) -> set[str]:
    """Members of flagged signature groups whose every vote went the flagged way on the
    group's model (``for:m``: m won each time; ``against:m``: m lost each time)."""
    out: set[str] = set()
    for group, alternative in flagged.select("voter_hash", "anomaly_alternative").iter_rows():
        model = group.removeprefix("sig:")
        direction = (alternative or "").split(":", 1)[0]
        if direction not in ("for", "against") or not alternative.endswith(":" + model):
            continue  # flagged for a side or coin habit, not for the model it was formed on
        members = sig.filter(pl.col("group") == group)["voter_hash"]
        won = ((pl.col("winner") == "model_a") & (pl.col("model_a") == model)) | (
            (pl.col("winner") == "model_b") & (pl.col("model_b") == model)
        )
        lost = ((pl.col("winner") == "model_b") & (pl.col("model_a") == model)) | (
            (pl.col("winner") == "model_a") & (pl.col("model_b") == model)
        )
        way = won if direction == "for" else lost
        agree = (
            tested.filter(pl.col("voter_hash").is_in(members.implode()))
            .group_by("voter_hash")
            .agg(way.all().alias("_all"))
            .filter("_all")
        )
        out |= set(agree["voter_hash"].to_list())
    return out


def rigging_flags(
    rows: pl.DataFrame,
    served: pl.DataFrame,
    config: BattleConfig,
    crowd: pl.DataFrame | None,
    history: pl.DataFrame | None,
    flagged_voters: set[str],
) -> RiggingResult:
    """Flags per battle row (``rows``: battle_id, voter_hash, tstamp, model_a, model_b,
    winner, anony, same_model and the identity hashes); ``served``: the month's served
    events (voter_hash, tstamp, anony, model_a, model_b, identity hashes)."""
    cfg, rig = config.anomaly, config.rigging
    rows, served = _ids(rows), _ids(served)
    voters = pl.concat([rows["voter_hash"], served["voter_hash"]])
    fresh = fresh_voters(voters, history)
    established = (
        None if history is None else [v for v in voters.unique().to_list() if v not in fresh]
    )
    tested = rows.filter(
        pl.col("anony") & ~pl.col("same_model") & (pl.col("model_a") != pl.col("model_b"))
    )
    n_models = (
        max(pl.concat([tested["model_a"], tested["model_b"]]).n_unique(), 1) if tested.height else 1
    )

    # served but not voted, per voter
    framed = pair_frame(tested)
    pool = framed if established is None else framed.filter(_in("voter_hash", established))
    pool = pool.filter(~_in("voter_hash", flagged_voters))
    probs = reference_probabilities(framed, pool, crowd_counts(crowd), cfg)
    shown = served.filter(pl.col("anony") & (pl.col("model_a") != pl.col("model_b")))
    candidates = (
        selection(served_battles(tested, shown))
        if tested.height
        else pl.DataFrame(
            schema={
                "voter_hash": pl.String,
                "model": pl.String,
                "k": pl.UInt32,
                "n": pl.UInt32,
                "n_m": pl.UInt32,
                "log_sel": pl.Float64,
            }
        )
    )
    selective = selective_voters(probs, candidates, n_models, rig.selective_q, cfg.alpha)
    selective_set = set(selective.filter("selective")["voter_hash"].to_list())

    # linked clusters and signature groups, each through the sequential test; a voter the
    # per-voter rules already flagged is left out of its cluster (its votes are gone
    # anyway): otherwise one planted abuser drags the honest housemates it shares an
    # address with into a flagged cluster (measured: 24 of 25,090 honest votes)
    events = pl.concat([rows.select("voter_hash", *_IDS), served.select("voter_hash", *_IDS)])
    linked = linked_clusters(events, fresh, rig.link_max_accounts)
    sig = signature_members(candidates, fresh, rig.signature_min_ratio)
    unflagged = ~_in("voter_hash", flagged_voters)
    test_votes = tested.filter(unflagged).select(
        "battle_id", "voter_hash", "tstamp", "model_a", "model_b", "winner"
    )
    groups = []
    for kind, members in (("linked", linked), ("signature", sig)):
        if members.height:
            result = anomalous_voters(
                test_votes,
                cfg,
                crowd,
                established=established,
                exclude=list(flagged_voters),
                members=members,
            )
            groups.append(result.with_columns(pl.lit(kind).alias("group_kind")))
    groups = (
        pl.concat(groups)
        if groups
        else pl.DataFrame(
            schema={
                "voter_hash": pl.String,
                "anomalous": pl.Boolean,
                "anomaly_log_lr": pl.Float64,
                "anomaly_alternative": pl.String,
                "anomaly_votes_tested": pl.UInt32,
                "anomaly_crossing_vote": pl.Int64,
                "group_kind": pl.String,
            }
        )
    )
    groups = groups.rename({"voter_hash": "group"})
    bad = groups.filter("anomalous")
    linked_bad = set(linked.filter(_in("group", bad["group"]))["voter_hash"].to_list())
    sig_bad = _agreeing(
        test_votes,
        sig,
        bad.filter(pl.col("group_kind") == "signature").rename({"group": "voter_hash"}),
    )

    # caps and bursts per linked cluster (the voter's own are in build.py), counted on the
    # votes the per-voter rules left
    clustered = rows.join(linked, on="voter_hash", how="left").sort("tstamp", "battle_id")
    gone = ~unflagged | pl.col("vote_burst").fill_null(False) | pl.col("daily_cap").fill_null(False)
    clustered = clustered.with_columns(
        pl.when(gone).then(None).otherwise(pl.col("group")).alias("group")
    )
    as_cluster = clustered.with_columns(
        pl.when(pl.col("group").is_null())
        .then(pl.lit("solo:") + pl.col("voter_hash"))
        .otherwise(pl.col("group"))
        .alias("voter_hash")
    )
    day = pl.col("tstamp").dt.date()
    capped = pl.int_range(pl.len()).over(["voter_hash", day]) >= rig.cluster_daily_cap
    flags = as_cluster.select(
        "battle_id",
        pl.Series(
            clustered.join(
                linked, on="voter_hash", how="left", suffix="_all", maintain_order="left"
            )["group_all"]
        ).alias("link_cluster"),
        (pl.col("group").is_not_null() & capped).alias("linked_daily_cap"),
    ).with_columns(
        (
            in_burst(as_cluster, rig.cluster_burst_min_votes, cfg.burst_window_s)
            & pl.Series(clustered["group"].is_not_null())
        ).alias("linked_burst"),
        pl.Series(
            clustered["voter_hash"].is_in(pl.Series(list(linked_bad), dtype=pl.String).implode())
        ).alias("linked_anomalous"),
        pl.Series(
            clustered["voter_hash"].is_in(pl.Series(list(selective_set), dtype=pl.String).implode())
        ).alias("selective_voter"),
        pl.Series(
            clustered["voter_hash"].is_in(pl.Series(list(sig_bad), dtype=pl.String).implode())
        ).alias("selective_cluster"),
        pl.Series(
            clustered["voter_hash"].is_in(pl.Series(list(fresh), dtype=pl.String).implode())
        ).alias("voter_fresh"),
    )
    metadata = {
        "fresh_voters": len(fresh),
        "linked_clusters": int(linked["group"].n_unique()) if linked.height else 0,
        "linked_accounts": linked.height,
        "linked_clusters_flagged": int(bad.filter(pl.col("group_kind") == "linked").height),
        "signature_groups": int(sig["group"].n_unique()) if sig.height else 0,
        "signature_groups_flagged": int(bad.filter(pl.col("group_kind") == "signature").height),
        "selective_voters": len(selective_set),
        "served_events": served.height,
    }
    return RiggingResult(flags, groups, selective, metadata)
