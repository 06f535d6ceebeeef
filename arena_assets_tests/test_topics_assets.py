"""The topics assets through Dagster: labels and clusters from the in-process simulated arena,
a rerun that makes no call (counted at the endpoint), and endpoint errors that fail the run
with a message saying what to fix while the previous partition stays as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest

from arena_assets.simulator import simulate_months
from arena_assets.simulator.shared import simulated_endpoint
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize
from arena_assets_tests.labelling_server import LabellingServer

MONTH = "2024-01"
UPSTREAM = "raw_logs,raw_rejects,conversations"
TOPICS = "topic_labels,topic_clusters"


def _digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _meta(result, asset: str) -> dict:
    (event,) = [
        e
        for e in result.get_asset_materialization_events()
        if e.materialization.asset_key.to_user_string() == asset
    ]
    return {k: v.value for k, v in event.materialization.metadata.items()}


@pytest.fixture
def month_with_topics(arena_env):
    # the world seed the endpoint uses (ARENA_SIM_WORLD_SEED) is the one the logs come from
    simulate_months(
        arena_env["ARENA_RAW_ROOT"], [MONTH], 250, seed=int(arena_env["ARENA_SIM_WORLD_SEED"])
    )
    assert materialize(MONTH, UPSTREAM).success
    result = materialize(MONTH, TOPICS)
    assert result.success
    return arena_env, result


def test_labels_and_clusters_materialize_and_rerun_makes_no_call(month_with_topics):
    env, result = month_with_topics
    lake = Lake(env["ARENA_LAKE_ROOT"])
    labels = lake.read("topic_labels", MONTH)
    conv = lake.read("conversations", MONTH, columns=["conv_id", "dedup_key"])
    assert labels.height == conv.height and labels["conv_id"].is_unique().all()
    assert (labels["criteria_status"] == "ok").mean() > 0.95
    meta = _meta(result, "topic_labels")
    assert meta["calls_made"] > 0 and meta["cache_hits"] == 0
    # asked once per distinct labeller input (all user turns joined), as recorded per row
    assert (
        meta["distinct_prompts"] == labels["label_key"].n_unique() >= conv["dedup_key"].n_unique()
    )
    assert meta["prompt_set"] == f"arena-assets-default ({labels['prompt_set_hash'][0]})"
    assert meta["prompt_tokens"] > 0
    # ARENA_LABELER_PRICE_* are set in the fixture: the cost follows from the tokens
    expected = (meta["prompt_tokens"] * 0.15 + meta["completion_tokens"] * 0.6) / 1e6
    assert meta["estimated_cost"] == pytest.approx(expected, abs=1e-6)  # rounded to 6 places
    assert 0 < meta["label_shares"]["hard"] < 1
    # each label group's batch: its calls add up, and when it ran, one group after another
    groups = meta["calls"]
    assert (
        set(groups) == set(meta["calls_by_group"])
        and sum(g["calls"] for g in groups.values()) == meta["calls_made"]
    )
    spans = sorted(
        (g["started_at"], g["started_at"] + g["elapsed_s"]) for g in groups.values() if g["calls"]
    )
    assert spans and all(a > 0 and b >= a for a, b in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {
        "parse_failure_rate_low": True,
        "labels_in_range": True,
        "labels_answered": True,
    }
    clusters = lake.read("topic_clusters", MONTH)
    assert set(clusters["dedup_key"]) == set(conv["dedup_key"])
    assert clusters["cluster_name"].null_count() == 0
    cmeta = _meta(result, "topic_clusters")
    assert cmeta["clusters"] == lake.read("topic_cluster_summary", MONTH).height > 1
    assert cmeta["embedding_calls"] > 0 and "cluster\\_id" in cmeta["cluster_summary"]
    assert sum(b["calls"] for b in cmeta["calls"].values()) == cmeta["calls_made"]
    assert Path(cmeta["clusters_png"]).stat().st_size > 1000

    # the same month again: every answer and vector comes from the cache
    endpoint = simulated_endpoint(env["ARENA_RAW_ROOT"], int(env["ARENA_SIM_WORLD_SEED"]))
    before = endpoint.call_count()
    digests = {a: _digest(lake.url(a, MONTH)) for a in ("topic_labels", "topic_clusters")}
    again = materialize(MONTH, TOPICS)
    assert again.success
    assert endpoint.call_count() == before
    assert _meta(again, "topic_labels")["calls_made"] == 0
    assert _meta(again, "topic_labels")["cache_hits"] > 0
    assert {a: _digest(lake.url(a, MONTH)) for a in digests} == digests


@pytest.mark.parametrize(
    "setting, message",
    [
        ({"ARENA_LABELER_API_KEY": "wrong"}, "refused the API key"),
        ({"ARENA_LABELER_MODEL": "gpt-nope"}, "does not serve model 'gpt-nope'"),
        ({"ARENA_LABELER_BASE_URL": "gone"}, "cannot reach the LLM endpoint"),
    ],
)
def test_endpoint_errors_fail_the_run_and_keep_the_partition(
    arena_env, monkeypatch, setting, message
):
    from arena_assets_tests.test_label_images import png_bytes_of

    simulate_months(arena_env["ARENA_RAW_ROOT"], [MONTH], 60, seed=7)
    assert materialize(MONTH, UPSTREAM).success
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    # an endpoint other than the simulated arena needs the images themselves: a folder of
    # them, as the platform stores uploads (<sha256>.png)
    images = Path(arena_env["ARENA_LAKE_ROOT"]).parent / "images"
    images.mkdir()
    shas = lake.read("conversations", MONTH).select(
        pl.col("messages")
        .list.eval(pl.element().struct.field("images").explode(empty_as_null=True))
        .explode(empty_as_null=True)
        .drop_nulls()
        .unique()
    )
    for sha in shas.to_series():
        (images / f"{sha}.png").write_bytes(png_bytes_of(4, 4, 1))
    monkeypatch.setenv("ARENA_IMAGE_ROOT", str(images))
    with LabellingServer() as srv:
        monkeypatch.setenv("ARENA_LABELER_BASE_URL", srv.base_url)
        monkeypatch.setenv("ARENA_LABELER_MODEL", "labeler-strong")
        monkeypatch.setenv("ARENA_LABELER_API_KEY", "test-key")
        assert materialize(MONTH, "topic_labels").success
        before = _digest(lake.url("topic_labels", MONTH))
        url = srv.base_url
    stopped = "ARENA_LABELER_BASE_URL" in setting
    for key, value in setting.items():
        monkeypatch.setenv(key, url if value == "gone" else value)  # "gone": the server stopped
    if not stopped:
        srv = LabellingServer().__enter__()  # a live server again for key / model errors
        monkeypatch.setenv("ARENA_LABELER_BASE_URL", srv.base_url)
    # an empty answer cache, so every request needs the endpoint
    monkeypatch.setenv(
        "ARENA_LLM_CACHE_ROOT", str(Path(arena_env["ARENA_LAKE_ROOT"]).parent / "other_cache")
    )
    try:
        result = materialize(MONTH, "topic_labels", raise_on_error=False)
    finally:
        if not stopped:
            srv.__exit__(None, None, None)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    text = str(failure.event_specific_data.error)
    assert message in text and "previous partition is intact" in text
    assert _digest(lake.url("topic_labels", MONTH)) == before
    assert (
        lake.read("topic_labels", MONTH).height
        == pl.scan_parquet(lake.url("conversations", MONTH)).select(pl.len()).collect().item()
    )
