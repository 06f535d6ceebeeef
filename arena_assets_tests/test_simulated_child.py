"""The simulated arena in a child process (what `arena-assets demo` and `make ui` start and
hand to the runs by URL), and the endpoint seeing a month's truth written after it started
listing the truth folder."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

from arena_assets.cli.arena_child import arena_process, simulated_arena_for_runs
from arena_assets.simulator import simulate_months
from arena_assets.simulator.api import start_endpoint
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


def test_simulated_tasks_go_to_an_arena_elsewhere_and_still_say_simulated():
    from arena_assets.defs.llm_resources import LLMTaskResource
    from arena_assets.llm.endpoints import public_base_url

    elsewhere = "http://127.0.0.1:9/v1"
    task = LLMTaskResource(
        base_url="simulated", model="sim-labeler-large", sim_seed=5, sim_base_url=elsewhere
    ).task()
    assert task.base_url == elsewhere
    # metadata and logs name it (the port is gone once the demo ends)
    assert public_base_url(elsewhere) == "simulated (world seed 5)"
    # a task set to a real endpoint is not redirected
    real = LLMTaskResource(
        base_url="https://api.example.com/v1", model="m", sim_base_url=elsewhere
    ).task()
    assert real.base_url == "https://api.example.com/v1"


def test_runs_get_an_arena_only_when_a_task_wants_one_and_none_is_named(raw, monkeypatch):
    settings = {"ARENA_JUDGE_BASE_URL": "simulated", "ARENA_SIM_WORLD_SEED": "5"}
    monkeypatch.delenv("ARENA_SIM_BASE_URL", raising=False)

    def setting(name, default):
        return settings.get(name, default)

    with simulated_arena_for_runs(setting, str(raw)) as url:
        assert url and os.environ["ARENA_SIM_BASE_URL"] == url  # what the runs inherit
        assert len([m for m in _models(url) if m["owned_by"] != "simulated-arena"]) == 9
    assert "ARENA_SIM_BASE_URL" not in os.environ  # restored after the block
    settings["ARENA_SIM_BASE_URL"] = "http://127.0.0.1:9/v1"  # an arena named already
    with simulated_arena_for_runs(setting, str(raw)) as url:
        assert url is None
    settings.pop("ARENA_SIM_BASE_URL")
    settings["ARENA_JUDGE_BASE_URL"] = "https://api.example.com/v1"  # nobody wants one
    with simulated_arena_for_runs(setting, str(raw)) as url:
        assert url is None


def test_the_truth_folder_is_listed_again_only_when_it_changed(tmp_path, monkeypatch):
    import os
    import pathlib
    import time

    simulate_months(tmp_path, ["2024-01"], 60, seed=5, config=WorldConfig(n_models=9))
    folder = tmp_path / "_truth" / "prompts"
    old = time.time_ns() - 10_000_000_000
    os.utime(folder, ns=(old, old))  # unchanged for 10 s
    listings = []
    real_glob = pathlib.Path.glob
    monkeypatch.setattr(
        pathlib.Path,
        "glob",
        lambda self, pattern: listings.append(self) or real_glob(self, pattern),
    )
    ep = start_endpoint(seed=5, config=WorldConfig(n_models=9), truth_root=tmp_path)
    try:
        assert ep.truth_read.wait(timeout=60)  # the start's own read of the truth, done first
        first = len(ep.truth_index())
        seen = len(listings)
        for _ in range(5):
            ep.truth_index()
        assert len(listings) == seen  # an unchanged folder is not listed per request
        # a month written in the same clock tick as the last listing: the folder's mtime
        # does not move (set back here), but it changed under a second ago, so it is listed
        simulate_months(tmp_path, ["2024-02"], 60, seed=5, config=WorldConfig(n_models=9))
        recent = time.time_ns() - 200_000_000
        os.utime(folder, ns=(recent, recent))
        ep._index_stamp = recent  # as if the last listing had seen this very mtime
        assert len(ep.truth_index()) > first
    finally:
        ep.stop()


def test_serve_arena_stops_on_sigterm_even_when_its_parent_ignored_it():
    """A process that ran Dagster maps SIGTERM to its SIGINT handler (SIG_IGN in a
    pytest-xdist worker), and an ignored signal survives exec: arena-sim serve resets both,
    so terminate() stops it (it had kept a test waiting, then failing, on its clean-up)."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "arena_assets.simulator.cli", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN),
    )
    try:
        assert "simulated arena at http://127.0.0.1:" in proc.stdout.readline()
        proc.terminate()
        assert proc.wait(timeout=20) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
