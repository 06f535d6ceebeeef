"""`build_battles`: every vote event of a month as one battle row, with its flags.

Order of the rules (fixed; a removed battle is counted once, under its first reason):

1. ``not_anonymous``   the voter saw the model names;
2. ``same_model``      both sides are the same model after aliasing (no information);
3. ``identity_leak``   an answer names a model (itself or another);
4. ``anomalous_voter`` the voter failed the sequential test (`anomaly`), all their votes;
5. ``vote_burst``      the vote sits in a dense burst of the same voter's votes;
6. ``daily_cap``       the voter's votes beyond the daily cap;
7. ``linked_anomalous``, ``linked_burst``, ``linked_daily_cap``  rules 4-6 per cluster of
   linked accounts (`linking.py`);
8. ``selective_voter``, ``selective_cluster``  served but not voted: votes cast only with
   one model on screen, per voter and per signature group (`selective.py`);
9. ``dedup_sampled_out`` an over-popular prompt's battle outside the seeded sample.

Beside the removals, the votes that survive rules 1-8 get a ``weight`` (1 unless
down-weighted) and a ``weight_reason``: accounts without history, and cohorts whose votes
on a model deviate from the established voters' (`cohort.py`). A down-weighted vote is
kept; the boards honour its weight.

Rules 1-8 are evaluated on every vote (the voter rules look at behaviour, whatever else
happened to the vote); rule 9 draws its sample among the votes that survive 1-8, so a
popular prompt ends with exactly the threshold number of kept battles. Aliasing is not a
removal; its count is reported. Raw messages are not carried (they are unredacted): the
release joins the redacted conversations on ``conv_id_a`` / ``conv_id_b``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl

from arena_assets.battles.anomaly import anomalous_voters
from arena_assets.battles.cohort import cohort_weights
from arena_assets.battles.config import BattleConfig, identity_table
from arena_assets.battles.content import apply_aliases, identity_pattern, leaked_names
from arena_assets.battles.newcomers import newcomer_excess
from arena_assets.battles.reference import crowd_counts
from arena_assets.battles.rigging import RIGGING_FLAGS, rigging_flags
from arena_assets.battles.sampling import dedup_sampled_out, in_burst, over_daily_cap
from arena_assets.battles.schema import REMOVAL_REASONS, TAIL_COLUMNS
from arena_assets.battles.style import style_columns
from arena_assets.contracts import SERVED_TYPE, VOTE_TYPES, WINNER_OF_VOTE


@dataclass
class BattleResult:
    battles: pl.DataFrame  # one row per vote event, flags and `keep`
    removed_by_reason: dict[str, int]  # each removed battle once, under its first reason
    flag_totals: dict[str, int]  # every battle carrying each flag
    voters: pl.DataFrame  # per-voter outcome of the sequential test
    metadata: dict = field(default_factory=dict)
    # per linked cluster / signature group: the sequential test's outcome (rigging.py)
    groups: pl.DataFrame = field(default_factory=pl.DataFrame)

    @property
    def kept(self) -> pl.DataFrame:
        return self.battles.filter("keep")


def _conversation_facts(conversations: pl.DataFrame) -> pl.DataFrame:
    """conv_id -> language, dedup_key (latest snapshot when a conv_id repeats)."""
    return (
        conversations.sort("tstamp")
        .unique("conv_id", keep="last")
        .select("conv_id", "language", "dedup_key")
    )


def _base_rows(
    raw_logs: pl.DataFrame, conversations: pl.DataFrame, config: BattleConfig
) -> pl.DataFrame:
    rules = config.alias_rules()
    votes = (
        raw_logs.filter(pl.col("type").is_in(VOTE_TYPES))
        .sort(["tstamp", "event_id"])
        .with_columns(pl.col("tstamp").dt.date().alias("_date"))
    )
    votes = votes.with_columns(
        pl.col("model_a").alias("model_a_raw"),
        pl.col("model_b").alias("model_b_raw"),
        apply_aliases("model_a", rules).alias("model_a"),
        apply_aliases("model_b", rules).alias("model_b"),
    ).with_columns(
        (
            (pl.col("model_a") != pl.col("model_a_raw"))
            | (pl.col("model_b") != pl.col("model_b_raw"))
        )
        .fill_null(False)
        .alias("alias_applied")
    )
    facts = _conversation_facts(conversations)
    fa = facts.rename({c: f"{c}_a" for c in facts.columns})
    fb = facts.rename({c: f"{c}_b" for c in facts.columns})
    votes = votes.join(fa, on="conv_id_a", how="left").join(fb, on="conv_id_b", how="left")
    # a release's own fields (ingest/releases.py), absent from lakes ingested before them
    tags = [
        pl.col(c) if c in votes.columns else pl.lit(None, pl.String).alias(c)
        for c in ("category_tag", "release_tags")
    ]
    user_turns = (
        pl.col("messages_a")
        .list.eval((pl.element().struct.field("role") == "user").cast(pl.Int32))
        .list.sum()
    )
    return votes.select(
        pl.col("event_id").alias("battle_id"),
        "month",
        "tstamp",
        "model_a",
        "model_b",
        pl.col("type").replace_strict(WINNER_OF_VOTE, return_dtype=pl.String).alias("winner"),
        pl.col("anony").fill_null(False),
        user_turns.cast(pl.Int32).alias("turn"),
        pl.coalesce("language_a", "language_b").alias("language"),
        pl.col("user_hash").alias("voter_hash"),
        *[
            pl.col(c) if c in votes.columns else pl.lit(None, dtype=pl.String).alias(c)
            for c in ("ip_hash", "net_hash", "device_hash")
        ],
        "conv_id_a",
        "conv_id_b",
        pl.coalesce("dedup_key_a", "dedup_key_b").alias("dedup_key"),
        "model_a_raw",
        "model_b_raw",
        "alias_applied",
        *tags,
        *style_columns("messages_a", "_a"),
        *style_columns("messages_b", "_b"),
        "messages_a",
        "messages_b",
    )


def battle_rows(
    raw_logs: pl.DataFrame, conversations: pl.DataFrame, config: BattleConfig | None = None
) -> pl.DataFrame:
    """The row-local part of `build_battles`: one row per vote event with its models
    (aliased), winner, conversation facts, style columns and the content flags
    (``not_anonymous``, ``same_model``, ``identity_leak``), sorted by (tstamp, battle_id).
    Nothing in a row depends on another row, so rows prepared apart may be concatenated
    and passed to `judge_battles` (the rigging benchmark prepares its honest month once),
    provided each part reads the same leak vocabulary: the month's models are part of it,
    so give ``config.known_models`` when the parts may not all hold every model."""
    config = config or BattleConfig()
    rows = _base_rows(raw_logs, conversations, config)
    models = pl.concat([rows["model_a"], rows["model_b"], rows["model_a_raw"], rows["model_b_raw"]])
    table = identity_table(models.drop_nulls().unique().to_list(), config)
    names = [n for ns in table.values() for n in ns] + list(config.extra_identity_words)
    pattern = identity_pattern(names)
    rows = rows.with_columns(
        leaked_names("messages_a", pattern).alias("leaked_names_a"),
        leaked_names("messages_b", pattern).alias("leaked_names_b"),
    ).drop("messages_a", "messages_b")
    return rows.with_columns(
        (~pl.col("anony")).alias("not_anonymous"),
        (pl.col("model_a") == pl.col("model_b")).fill_null(False).alias("same_model"),
        (
            (pl.col("leaked_names_a").list.len() > 0) | (pl.col("leaked_names_b").list.len() > 0)
        ).alias("identity_leak"),
    )


def build_battles(
    raw_logs: pl.DataFrame,
    conversations: pl.DataFrame,
    config: BattleConfig | None = None,
    *,
    crowd: pl.DataFrame | None = None,
    history: pl.DataFrame | None = None,
) -> BattleResult:
    """Battles of one month (see module docstring for the rules and their order).

    `crowd`: optional earlier votes (``model_a, model_b, winner`` and optional count ``n``)
    that strengthen the crowd the anomaly test compares voters with. `history`: the
    voters (``voter_hash``) of earlier months; those not in it are fresh accounts, and
    only established voters' votes of this month enter the reference (None: no history,
    every voter is fresh and counts). ``raw_logs`` may hold ``served`` events (battles
    served without a vote) and identity hashes: the rigging stages read them.
    """
    config = config or BattleConfig()
    return judge_battles(
        battle_rows(raw_logs, conversations, config),
        served_rows(raw_logs, config),
        config,
        crowd=crowd,
        history=history,
    )


def judge_battles(
    rows: pl.DataFrame,
    served: pl.DataFrame,
    config: BattleConfig | None = None,
    *,
    crowd: pl.DataFrame | None = None,
    history: pl.DataFrame | None = None,
) -> BattleResult:
    """The rules of `build_battles` on prepared rows (`battle_rows`) and the month's
    served events (`served_rows`)."""
    config = config or BattleConfig()
    rows = rows.sort(["tstamp", "battle_id"]).with_columns(over_daily_cap(config.daily_vote_cap))
    models = pl.concat([rows["model_a"], rows["model_b"], rows["model_a_raw"], rows["model_b_raw"]])
    table = identity_table(models.drop_nulls().unique().to_list(), config)

    tested = rows.filter(pl.col("anony") & ~pl.col("same_model"))
    seen_before = None if history is None else history["voter_hash"]
    established = (
        None
        if seen_before is None
        else tested.filter(pl.col("voter_hash").is_in(seen_before.implode()))["voter_hash"].unique()
    )
    voters = anomalous_voters(tested, config.anomaly, crowd, established=established)
    rows = (
        rows.join(
            voters.select("voter_hash", "anomalous", "anomaly_log_lr", "anomaly_alternative"),
            on="voter_hash",
            how="left",
            maintain_order="left",
        )
        .with_columns(pl.col("anomalous").fill_null(False).alias("anomalous_voter"))
        .drop("anomalous")
    )
    rows = rows.with_columns(
        in_burst(rows, config.anomaly.burst_min_votes, config.anomaly.burst_window_s)
    )
    groups = pl.DataFrame()
    rig_meta: dict = {}
    if config.rigging.enabled:
        flagged = (
            set(voters.filter("anomalous")["voter_hash"].to_list()) if voters.height else set()
        )
        rig = rigging_flags(rows, served, config, crowd, history, flagged)
        rows = rows.join(rig.flags, on="battle_id", how="left", maintain_order="left").with_columns(
            [pl.col(c).fill_null(False) for c in RIGGING_FLAGS]
            + [pl.col("voter_fresh").fill_null(False)]
        )
        groups, rig_meta = rig.groups, rig.metadata
    else:
        rows = rows.with_columns(
            [pl.lit(False).alias(c) for c in (*RIGGING_FLAGS, "voter_fresh")]
            + [pl.lit(None, dtype=pl.String).alias("link_cluster")]
        )

    earlier = pl.any_horizontal([pl.col(r) for r in REMOVAL_REASONS[:-1]])
    rows, cohort_meta = _weighted(rows, served, earlier, config, crowd, seen_before)
    dedup, threshold = dedup_sampled_out(
        rows, ~earlier, config.dedup_percentile, config.dedup_min_threshold, config.seed
    )
    rows = rows.with_columns(dedup)

    reasons = pl.concat_list(
        [
            pl.when(pl.col(r)).then(pl.lit([r])).otherwise(pl.lit([], dtype=pl.List(pl.String)))
            for r in REMOVAL_REASONS
        ]
    )
    rows = (
        rows.with_columns(reasons.alias("flag_reasons"))
        .with_columns(
            pl.col("flag_reasons").list.first().alias("removed_reason"),
        )
        .with_columns(pl.col("removed_reason").is_null().alias("keep"))
    )
    flags_last = [c for c in rows.columns if c not in REMOVAL_REASONS + TAIL_COLUMNS] + list(
        REMOVAL_REASONS
    )
    rows = rows.select(*flags_last, *TAIL_COLUMNS)

    first = rows["removed_reason"].value_counts()
    counted = dict(zip(first["removed_reason"].to_list(), first["count"].to_list()))
    removed_by_reason = {r: int(counted.get(r, 0)) for r in REMOVAL_REASONS}
    flag_totals = {r: int(rows[r].sum()) for r in REMOVAL_REASONS}
    metadata = {
        "votes": rows.height,
        "kept": int(rows["keep"].sum()),
        "alias_applied": int(rows["alias_applied"].sum()),
        "dedup_threshold": threshold,
        "anomalous_voters": int(voters["anomalous"].sum()) if voters.height else 0,
        "voters_tested": voters.height,
        "identity_names": table,
        "reason_order": list(REMOVAL_REASONS),
        "rigging": rig_meta,
        "cohort": cohort_meta,
    }
    return BattleResult(rows, removed_by_reason, flag_totals, voters, metadata, groups)


def _weighted(
    rows: pl.DataFrame,
    served: pl.DataFrame,
    removed: pl.Expr,
    config: BattleConfig,
    crowd: pl.DataFrame | None,
    seen_before: pl.Series | None,
) -> tuple[pl.DataFrame, dict]:
    """``weight`` and ``weight_reason`` of the votes no rule removed (`cohort.py`); every
    other row weighs 1 with no reason."""
    on = config.rigging.enabled and config.cohort.enabled
    tested = rows.filter(
        ~removed
        & pl.col("anony")
        & ~pl.col("same_model")
        & (pl.col("model_a") != pl.col("model_b"))
    ).select("battle_id", "voter_hash", "model_a", "model_b", "winner")
    meta: dict = {}
    weights = pl.DataFrame(
        schema={"battle_id": pl.String, "weight": pl.Float64, "weight_reason": pl.String}
    )
    if on and tested.height:
        established = (
            None
            if seen_before is None
            else set(tested["voter_hash"].unique().to_list()) & set(seen_before.to_list())
        )
        shown = served.filter(pl.col("anony") & (pl.col("model_a") != pl.col("model_b")))
        result = cohort_weights(
            tested,
            shown.select("voter_hash", "model_a", "model_b") if shown.height else None,
            established,
            crowd_counts(crowd),
            config.anomaly,
            config.cohort,
        )
        weights, meta = result.weights, result.metadata
        if established is not None:  # the newcomer share: a signal, no weight changes
            fresh = set(tested["voter_hash"].unique().to_list()) - established
            z0 = meta.get("cohort_z_threshold", math.inf)
            meta["newcomer_excess"] = newcomer_excess(
                tested, fresh, z0, config.cohort.cohort_min_votes
            )
    rows = rows.join(weights, on="battle_id", how="left", maintain_order="left")
    return rows.with_columns(pl.col("weight").fill_null(1.0)), meta


def served_rows(raw_logs: pl.DataFrame, config: BattleConfig) -> pl.DataFrame:
    """The month's served events, aliased like the votes, in the rigging stages' columns."""
    rules = config.alias_rules()
    served = raw_logs.filter(pl.col("type") == SERVED_TYPE).with_columns(
        pl.col("tstamp").dt.date().alias("_date")
    )
    return served.select(
        pl.col("user_hash").alias("voter_hash"),
        "tstamp",
        pl.col("anony").fill_null(False),
        apply_aliases("model_a", rules).alias("model_a"),
        apply_aliases("model_b", rules).alias("model_b"),
        *[
            pl.col(c) if c in served.columns else pl.lit(None, dtype=pl.String).alias(c)
            for c in ("ip_hash", "net_hash", "device_hash")
        ],
    )
