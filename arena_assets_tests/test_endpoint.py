"""The simulated OpenAI-compatible endpoint, driven by the real `openai` client over HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import openai
import pytest

from arena_assets.simulator import World, WorldConfig
from arena_assets.simulator.endpoint import ArenaEndpoint, Faults
from arena_assets.simulator.lexicon import TOXIC_MARKERS


@pytest.fixture(scope="module")
def world() -> World:
    return World.build(WorldConfig(n_models=8), seed=3)


@pytest.fixture()
def endpoint(world):
    with ArenaEndpoint(world, port=0) as ep:
        yield ep


def _client(ep: ArenaEndpoint, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=ep.base_url, api_key="sim", timeout=10, **kw)


def _admin(ep: ArenaEndpoint, path: str, body: dict | None = None) -> dict:
    url = ep.base_url.removesuffix("/v1") + path
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def test_models_and_chat_in_the_models_voice(endpoint, world):
    client = _client(endpoint)
    listed = [m.id for m in client.models.list()]
    assert listed[: len(world.model_names)] == world.model_names
    assert {"sim-labeler-small", "sim-labeler-large", "sim-embed-small", "sim-embed-large"} <= set(
        listed
    )
    verbose = max(world.models, key=lambda m: m.verbosity)
    terse = min(world.models, key=lambda m: m.verbosity)
    prompt = [{"role": "user", "content": "Puedes ayudarme con un poema corto sobre el mar?"}]
    lengths = {}
    for spec in (verbose, terse):
        out = client.chat.completions.create(model=spec.name, messages=prompt, temperature=0)
        text = out.choices[0].message.content
        assert out.model == spec.name and out.usage.total_tokens > 0
        again = client.chat.completions.create(model=spec.name, messages=prompt, temperature=0)
        assert again.choices[0].message.content == text  # deterministic per request
        assert any(
            w in text for w in ("ejemplo", "idea", "resultado", "respuesta")
        )  # Spanish voice
        lengths[spec.name] = len(text)
    assert lengths[verbose.name] > lengths[terse.name]
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no-such-model", messages=prompt)


def test_judgment_and_label_requests_parse(endpoint, world):
    client = _client(endpoint)
    from arena_assets.judging.verdicts import pairwise_messages, parse_verdict

    judge = client.chat.completions.create(
        model="sim-judge", messages=pairwise_messages("Question...", "Answer A...", "Answer B...")
    )
    assert parse_verdict(judge.choices[0].message.content) is not None
    # a judge asked anything else answers (it raised KeyError: the connection dropped)
    plain = _client(endpoint, max_retries=0).chat.completions.create(
        model="sim-judge", messages=[{"role": "user", "content": "hi"}]
    )
    assert plain.choices[0].message.content
    label = client.chat.completions.create(
        model=world.model_names[0],
        messages=[
            {
                "role": "user",
                "content": "Return the category as JSON for: a SQL query that joins two tables",
            }
        ],
    )
    assert json.loads(label.choices[0].message.content)["category"] == "coding"


def test_moderation_flags_planted_markers(endpoint):
    client = _client(endpoint)
    toxic = "Tell me a story. " + TOXIC_MARKERS["violence"][0]
    res = client.moderations.create(input=[toxic, "What is the capital of France?"])
    assert res.results[0].flagged and res.results[0].categories.violence
    assert res.results[0].category_scores.violence > 0.5
    assert not res.results[1].flagged


def test_500_surfaces_when_retries_are_off(endpoint, world):
    _admin(endpoint, "/_faults", {"rate_500": 1.0})
    client = _client(endpoint, max_retries=0)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(
            model=world.model_names[0], messages=[{"role": "user", "content": "hi"}]
        )
    assert endpoint.stats["POST /v1/chat/completions 500"] == 1


def test_429_with_retry_after_is_retried(endpoint, world):
    _admin(endpoint, "/_faults", {"script": ["429", "429"], "retry_after": 0.05})
    client = _client(endpoint, max_retries=2)
    out = client.chat.completions.create(
        model=world.model_names[1], messages=[{"role": "user", "content": "hello"}]
    )
    assert out.choices[0].message.content
    assert endpoint.stats["POST /v1/chat/completions 429"] == 2
    assert endpoint.stats["POST /v1/chat/completions 200"] == 1
    assert _admin(endpoint, "/_faults")["script_left"] == []


def test_slow_and_garbage_faults(world):
    with ArenaEndpoint(world, faults=Faults(script=["slow", "garbage"], slow_seconds=1.0)) as ep:
        client = _client(ep, max_retries=0)
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(
                model=world.model_names[0],
                timeout=0.2,
                messages=[{"role": "user", "content": "hello"}],
            )
        junk = client.chat.completions.create(
            model=world.model_names[0],
            messages=[{"role": "user", "content": "Give your final verdict as [[A>B]]"}],
        )
        assert not any(
            v in junk.choices[0].message.content for v in ("[[A>B]]", "[[B>A]]", "[[A=B]]")
        )


def test_fault_admin_rejects_unknown_settings(endpoint):
    with pytest.raises(urllib.error.HTTPError) as err:
        _admin(endpoint, "/_faults", {"nonsense": 1})
    assert err.value.code == 400


def test_moderation_agrees_with_planted_toxic_truth(tmp_path, endpoint):
    from arena_assets.simulator import load_truth, simulate_months

    simulate_months(tmp_path, ["2024-02"], 150, seed=9, config=WorldConfig(toxic_rate=0.2))
    prompts = load_truth(tmp_path)["prompts"]
    res = _client(endpoint).moderations.create(input=list(prompts["text"]))
    flagged = [r.flagged for r in res.results]
    truth = [c is not None for c in prompts["toxic_category"]]
    assert any(truth) and flagged == truth


def test_latency_is_from_arrival_to_reply_and_calls_overlap(world, monkeypatch):
    """Every /v1 reply leaves `latency` after its request arrived (never sooner), its own
    work done within that time (a real endpoint's latency includes its generation), and
    calls in flight together wait together: eight at once take about one latency."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    import arena_assets.simulator.replies as endpoint_module

    work = 0.2  # the simulator's work for an embedding, made slow on purpose
    real_embed = endpoint_module.embed_many

    def slow_embed(*args):
        time.sleep(work)
        return real_embed(*args)

    monkeypatch.setattr(endpoint_module, "embed_many", slow_embed)
    latency = 0.3
    with ArenaEndpoint(world, port=0, faults=Faults(latency=latency)) as ep:
        client = _client(ep, max_retries=0)
        model = world.model_names[0]

        def ask(i: int) -> float:
            started = time.perf_counter()
            client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": f"Write a poem {i}"}]
            )
            return time.perf_counter() - started

        one = ask(-1)
        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            each = list(pool.map(ask, range(8)))
        together = time.perf_counter() - started
        listed = time.perf_counter()
        client.models.list()  # GET routes are not delayed
        listing = time.perf_counter() - listed
        embedded = time.perf_counter()
        client.embeddings.create(model="sim-embed-small", input=["one text"])
        embedding = time.perf_counter() - embedded
    assert one >= latency and min(each) >= latency
    assert together < 4 * latency  # 8 one after another would be >= 8 latencies
    assert listing < latency
    # the work inside the latency: a wait before the work would take latency + work (0.5 s)
    assert latency <= embedding < latency + work / 2
