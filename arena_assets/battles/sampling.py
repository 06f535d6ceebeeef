"""Volume rules: top-prompt dedup, daily vote cap, vote bursts.

Dedup follows FastChat's idea: a handful of prompts ("hi", "who are you?") are sent tens of
thousands of times and would dominate the votes. Prompts counted more often than the
configured percentile of per-prompt counts keep a seeded sample of that many battles.
The sample is chosen by a keyed hash of (seed, battle id), not by a random generator's
draw order, so it does not depend on row order and the same seed gives the same sample.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import polars as pl


def sample_rank(seed: int, battle_id: str) -> int:
    """Stable pseudo-random key of a battle under `seed` (smaller = kept first)."""
    digest = hashlib.blake2b(f"{seed}\x1f{battle_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def dedup_threshold(counts: pl.Series, percentile: float, minimum: int) -> int:
    """Count above which a prompt is over-popular: the percentile of per-prompt counts."""
    if counts.len() == 0:
        return max(minimum, 1)
    value = float(np.percentile(counts.to_numpy(), percentile))
    return max(math.ceil(value), minimum, 1)


def dedup_sampled_out(
    frame: pl.DataFrame, eligible: pl.Expr, percentile: float, minimum: int, seed: int
) -> tuple[pl.Series, int]:
    """Boolean per row: an over-popular prompt's battle left out of the seeded sample.

    Only `eligible` rows (those no earlier rule removed) count and compete for the sample,
    so a popular prompt ends with exactly `threshold` kept battles. Rows without a
    dedup_key are never sampled out.
    """
    pool = frame.with_row_index("_row").filter(eligible & pl.col("dedup_key").is_not_null())
    counts = pool.group_by("dedup_key").agg(pl.len().alias("_n"))
    threshold = dedup_threshold(counts["_n"], percentile, minimum)
    popular = counts.filter(pl.col("_n") > threshold)["dedup_key"]
    hot = pool.filter(pl.col("dedup_key").is_in(popular.implode())).select(
        "_row", "dedup_key", "battle_id"
    )
    out = np.zeros(frame.height, dtype=bool)
    if hot.height:
        ranks = [sample_rank(seed, b) for b in hot["battle_id"].to_list()]
        hot = hot.with_columns(pl.Series("_rank", ranks, dtype=pl.UInt64))
        dropped = hot.with_columns(
            (pl.col("_rank").rank("ordinal").over("dedup_key") > threshold).alias("_drop")
        ).filter("_drop")
        out[dropped["_row"].to_numpy()] = True
    return pl.Series("dedup_sampled_out", out), threshold


def over_daily_cap(cap: int) -> pl.Expr:
    """Votes of a voter after their `cap`-th of the UTC day. Expects the frame sorted by
    (tstamp, battle_id), so row order within a voter-day is time order."""
    day = pl.col("tstamp").dt.date()
    return (pl.int_range(pl.len()).over(["voter_hash", day]) >= cap).alias("daily_cap")


def in_burst(frame: pl.DataFrame, min_votes: int, window_s: float) -> pl.Series:
    """True for votes inside any `window_s`-second window holding >= `min_votes` votes
    of the same voter."""
    if frame.height == 0:
        return pl.Series("vote_burst", [], dtype=pl.Boolean)
    order = frame.with_row_index("_row").sort(["voter_hash", "tstamp", "battle_id"])
    voter = order["voter_hash"].rank("dense").to_numpy().astype(np.int64)
    t = order["tstamp"].dt.epoch("us").to_numpy().astype(np.int64)
    t = (t - t.min()) / 1e6
    # one increasing key per voter so one searchsorted covers every voter at once
    span = float(t.max()) + 2 * window_s + 1.0
    key = voter * span + t
    start = np.searchsorted(key, key - window_s, side="left")
    ends_burst = (np.arange(len(key)) - start + 1) >= min_votes
    # a vote is in a burst if some window ending within window_s after it is dense
    csum = np.concatenate([[0], np.cumsum(ends_burst)])
    last = np.searchsorted(key, key + window_s, side="right")
    flagged_sorted = (csum[last] - csum[np.arange(len(key))]) > 0
    out = np.zeros(frame.height, dtype=bool)
    out[order["_row"].to_numpy()] = flagged_sorted
    return pl.Series("vote_burst", out)
