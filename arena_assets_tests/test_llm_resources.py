"""The shared LLM resources: `simulated` is the arena at ARENA_SIM_BASE_URL, env binding."""

from __future__ import annotations

import openai
import pytest

from arena_assets.defs.llm_resources import LLMCache, LLMTaskResource
from arena_assets.defs.resources import ArenaStorage
from arena_assets.llm.endpoints import SimulatedArenaUnset, public_base_url
from arena_assets.simulator.shared import simulated_endpoint, simulated_endpoint_url


def test_simulated_endpoint_started_once_per_argument_set(tmp_path):
    a = simulated_endpoint_url(str(tmp_path / "_truth"), 7)
    b = simulated_endpoint_url(str(tmp_path), 7)  # the raw root names the same truth
    c = simulated_endpoint_url(str(tmp_path), 8)
    assert a == b and a != c
    assert a.startswith("http://127.0.0.1:") and a.endswith("/v1")
    client = openai.OpenAI(base_url=a, api_key="x")
    served = {m.id for m in client.models.list()}
    assert {"sim-labeler-large", "sim-labeler-small", "sim-embed-large"} <= served
    before = simulated_endpoint(str(tmp_path), 7).call_count()
    client.embeddings.create(model="sim-embed-large", input=["hello"])
    assert simulated_endpoint(str(tmp_path), 7).call_count() > before


def test_task_resource_resolves_simulated_and_prices(tmp_path):
    url = simulated_endpoint_url(str(tmp_path), 7)
    res = LLMTaskResource(
        base_url="simulated",
        model="sim-labeler-large",
        sim_seed=7,
        sim_base_url=url,
        price_input_per_1m="0.5",
        price_output_per_1m="",
    )
    task = res.task()
    assert task.base_url == url  # the arena handed in by URL, as a real endpoint is
    assert public_base_url(url) == "simulated (world seed 7)"  # logs do not show its port
    assert task.price_input_per_1m == 0.5 and task.price_output_per_1m == 0.0
    remote = LLMTaskResource(base_url="http://10.0.0.1:8000/v1", model="m", api_key="k").task()
    assert remote.base_url == "http://10.0.0.1:8000/v1" and remote.api_key == "k"
    assert not LLMTaskResource(base_url="", model="m").configured()


def test_cache_root_defaults_to_the_lake(tmp_path):
    from dagster_duckdb import DuckDBResource

    storage = ArenaStorage(
        catalog=DuckDBResource(database=str(tmp_path / "c.duckdb")),
        lake_root=str(tmp_path / "lake"),
    )
    assert LLMCache(root="").root_for(storage) == f"{tmp_path}/lake/_llm_cache"
    assert LLMCache(root="s3://b/c").root_for(storage) == "s3://b/c"
    cache = LLMCache(root="").cache(storage, "labels/x")
    assert len(cache) == 0


def test_simulated_without_an_arena_url_is_one_line_naming_the_settings():
    res = LLMTaskResource(base_url="simulated", model="m", env_prefix="JUDGE")
    with pytest.raises(SimulatedArenaUnset) as err:
        res.task()
    line = str(err.value)
    assert "\n" not in line
    assert "ARENA_JUDGE_BASE_URL=simulated" in line and "ARENA_SIM_BASE_URL" in line
