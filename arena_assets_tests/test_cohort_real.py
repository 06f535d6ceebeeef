"""The population rules on real votes: the 2023 hard-English arena votes of
``../shared/real`` (anonymous battles, pseudonymous voters), split into calendar months as
a lake would hold them. Almost no voter votes in two months, so each month's reference of
established voters is thin (2023-05: the 38 votes of 2023-04). An honest month must not
lose weight to a cohort test there; the thin tests are listed instead."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from arena_assets.battles.cohort import cohort_weights
from arena_assets.battles.config import AnomalyConfig, CohortConfig
from arena_assets.battles.reference import crowd_counts


def _votes(real: Path) -> pl.DataFrame:
    rows = []
    path = real / "battles" / "votes_2023_hard_english_with_prompts.jsonl"
    with path.open() as fh:
        for i, line in enumerate(fh):
            r = json.loads(line)
            if not r.get("anony"):
                continue
            month = dt.datetime.fromtimestamp(r["tstamp"], dt.UTC).strftime("%Y-%m")
            rows.append((f"r{i:05d}", r["judge"], r["model_a"], r["model_b"], r["winner"], month))
    schema = ["battle_id", "voter_hash", "model_a", "model_b", "winner", "month"]
    return pl.DataFrame(rows, schema=schema, orient="row")


def _months(votes: pl.DataFrame, cfg: CohortConfig) -> dict[str, tuple[pl.DataFrame, dict]]:
    """Each month judged as the battles step does: the earlier months give the history
    (who is established) and the prior outcome mix."""
    out = {}
    for month in sorted(votes["month"].unique()):
        earlier = votes.filter(pl.col("month") < month)
        now = votes.filter(pl.col("month") == month).drop("month")
        established = set(earlier["voter_hash"]) if earlier.height else None
        prior = (
            crowd_counts(earlier.group_by("model_a", "model_b", "winner").agg(pl.len().alias("n")))
            if earlier.height
            else None
        )
        result = cohort_weights(now, None, established, prior, AnomalyConfig(), cfg)
        out[month] = (now.join(result.weights, on="battle_id", how="left"), result.metadata)
    return out


def test_real_months_with_a_thin_reference_lose_no_weight_to_a_cohort(real_data: Path) -> None:
    votes = _votes(real_data)
    judged = _months(votes, CohortConfig())
    assert sum(frame.height for frame, _ in judged.values()) == votes.height
    thin = 0
    for month, (frame, meta) in judged.items():
        reasons = frame["weight_reason"].fill_null("")
        assert not reasons.str.contains("cohort:").any(), month
        assert meta["cohorts_flagged"] == [], month
        assert frame["weight"].is_finite().all()
        # every vote weighs 1 (first month, or an established voter) or the age weight
        assert set(frame["weight"].unique().to_list()) <= {1.0, 0.25}
        for entry in meta.get("cohorts_thin_reference", []):
            assert entry["votes"] >= 20  # a cohort big enough to test, held back
            thin += 1
    assert thin > 0  # the deviations are listed for the operator, not acted on


def test_without_a_minimum_reference_the_thin_month_is_down_weighted(real_data: Path) -> None:
    """What the minimum reference prevents: judged against its 38 earlier votes, 2023-05
    flags a cohort of honest newcomers."""
    judged = _months(_votes(real_data), CohortConfig(cohort_min_reference=0))
    frame, meta = judged["2023-05"]
    assert meta["cohorts_flagged"]
    assert frame["weight_reason"].fill_null("").str.contains("cohort:").sum() > 0
