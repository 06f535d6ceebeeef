"""The simulated arena in a child process (what `arena-assets demo` uses), and the in-process
endpoint seeing a month's truth written after it started listing the truth folder."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from arena_assets.simulator import simulate_months
from arena_assets.simulator.api import start_endpoint
from arena_assets.simulator.child import arena_process, serving_env
from arena_assets.simulator.config import WorldConfig


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    out = tmp_path_factory.mktemp("raw")
    simulate_months(out, ["2024-01"], 120, seed=5, config=WorldConfig(n_models=9))
    return out


def _models(base_url: str) -> list[dict]:
    with urllib.request.urlopen(f"{base_url}/models", timeout=10) as resp:
        return json.loads(resp.read())["data"]


def test_the_child_serves_the_logs_world_and_stops_with_the_block(raw):
    with arena_process(5, str(raw)) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        world = [m for m in _models(url) if m["owned_by"] != "simulated-arena"]
        # the logs' world (world.json: 9 models), not the default world
        assert len(world) == 9
        labellers = {m["id"] for m in _models(url) if m["owned_by"] == "simulated-arena"}
        assert "sim-labeler-large" in labellers
    with pytest.raises(urllib.error.URLError):
        _models(url)  # the server went with the block


def test_another_seed_gets_the_default_world(raw):
    with arena_process(6, str(raw)) as url:  # world.json has seed 5: not this world's
        world = [m for m in _models(url) if m["owned_by"] != "simulated-arena"]
        assert len(world) == WorldConfig().n_models


def test_only_tasks_set_to_simulated_are_pointed_at_the_child():
    settings = {"ARENA_LABELER_BASE_URL": "simulated", "ARENA_EMBED_BASE_URL": "",
                "ARENA_JUDGE_BASE_URL": "https://api.openai.com/v1", "ARENA_REWARD_BASE_URL": " simulated "}
    assert serving_env("http://127.0.0.1:9/v1", settings) == {
        "ARENA_LABELER_BASE_URL": "http://127.0.0.1:9/v1", "ARENA_REWARD_BASE_URL": "http://127.0.0.1:9/v1"}


def test_a_month_written_right_after_a_lookup_reaches_the_truth_index(tmp_path):
    # the endpoint lists its truth folder again only when the folder changed; a month
    # written in the same clock tick as the last listing must still be seen
    simulate_months(tmp_path, ["2024-01"], 60, seed=5, config=WorldConfig(n_models=9))
    ep = start_endpoint(seed=5, config=WorldConfig(n_models=9), truth_root=tmp_path)
    try:
        first = len(ep.truth_index())
        assert first > 0
        assert ep.truth_index() is ep.truth_index()  # unchanged folder: the same index
        simulate_months(tmp_path, ["2024-02"], 60, seed=5, config=WorldConfig(n_models=9))
        assert len(ep.truth_index()) > first
    finally:
        ep.stop()
