"""A labeller endpoint that answers garbage, empty or truncated text leaves no
unparsed answer in the cache; the blocking check counts labels whose call failed or did not
parse (threshold ARENA_LABEL_MAX_MISSING_RATE) and fails the month; a rerun against the
healed endpoint asks exactly those again and fills them."""

from __future__ import annotations

import polars as pl
import pytest

from arena_assets.simulator import simulate_months
from arena_assets.simulator.faults import Faults
from arena_assets.simulator.shared import simulated_endpoint
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTH = "2024-03"


def test_missing_label_shares_count_failed_and_unparsed() -> None:
    from arena_assets.pipeline.quality import missing_label_shares

    labels = pl.DataFrame(
        {
            "criteria_status": ["ok", "failed", "parse_failed", "ok", "not_applicable"],
            "vision_status": ["not_applicable"] * 4 + ["ok"],
            "code_status": ["ok"] * 5,
        }
    )
    shares = missing_label_shares(labels)
    assert shares["criteria"] == {"failed": 1, "parse_failed": 1, "asked": 4, "share": 0.5}
    assert shares["vision"]["share"] == 0.0 and shares["vision"]["asked"] == 1
    assert shares["code"]["share"] == 0.0


def _checks(result) -> dict[str, bool]:
    return {e.asset_check_key.name: e.passed for e in result.get_asset_check_evaluations()}


def test_faulty_labeller_fails_the_check_and_a_rerun_fills_the_labels(
    arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = arena_env["ARENA_RAW_ROOT"]
    simulate_months(raw, [MONTH], 80, seed=int(arena_env["ARENA_SIM_WORLD_SEED"]))
    assert materialize(MONTH, "raw_logs,raw_rejects,conversations").success
    ep = simulated_endpoint(f"{raw}/_truth", int(arena_env["ARENA_SIM_WORLD_SEED"]), 0.0)
    ep.set_faults(
        Faults(
            rate_garbage=0.2,
            rate_empty=0.1,
            rate_truncated=0.1,
            rate_429=0.1,
            retry_after=0.01,
            seed=5,
        )
    )
    try:
        first = ep.call_count(route="chat/completions", status=200)
        result = materialize(MONTH, "topic_labels", raise_on_error=False)
        answered = ep.call_count(route="chat/completions", status=200) - first
    finally:
        ep.set_faults(Faults())
    labels = Lake(arena_env["ARENA_LAKE_ROOT"]).read("topic_labels", MONTH)
    statuses = [c for c in labels.columns if c.endswith("_status")]
    missing = labels.select(
        pl.sum_horizontal([pl.col(c).is_in(["failed", "parse_failed"]).sum() for c in statuses])
    ).item()
    unparsed = labels.filter(pl.col("criteria_status") == "parse_failed").height
    assert unparsed > 0 and missing > 0
    assert _checks(result).get("labels_answered") is False  # ~16 % unparsed twice: blocking
    # rerun against the healed endpoint: only what was missing is asked (nothing bad cached)
    before = ep.call_count(route="chat/completions")
    result = materialize(MONTH, "topic_labels")
    labels = Lake(arena_env["ARENA_LAKE_ROOT"]).read("topic_labels", MONTH)
    asked = ep.call_count(route="chat/completions") - before
    assert _checks(result)["labels_answered"] is True
    assert not labels.select(
        pl.any_horizontal([pl.col(c).is_in(["failed", "parse_failed"]) for c in statuses]).any()
    ).item()
    # only what failed is asked again: fewer calls than the month's requests (every one was
    # answered once with 200, good or bad, in the faulty run), and at most one call per
    # missing label and request (a row's vision status stands for up to three requests)
    vision = labels.columns.count("vision_status")
    assert 0 < asked < answered and asked <= missing * (1 + 2 * vision)
    before = ep.call_count(route="chat/completions")
    assert materialize(MONTH, "topic_labels").success
    assert ep.call_count(route="chat/completions") == before  # now all from the cache

    # the threshold is a setting: with 100 % allowed, a faulty month passes the check
    monkeypatch.setenv("ARENA_LABEL_MAX_MISSING_RATE", "1.0")
    ep.set_faults(Faults(rate_garbage=1.0, seed=1))
    try:
        monkeypatch.setenv("ARENA_LLM_CACHE_ROOT", arena_env["ARENA_LAKE_ROOT"] + "/_other_cache")
        result = materialize(MONTH, "topic_labels", raise_on_error=False)
    finally:
        ep.set_faults(Faults())
    assert _checks(result)["labels_answered"] is True
