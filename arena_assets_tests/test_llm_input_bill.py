"""The bill's input tokens follow the endpoint's tokenizer: every answer
cached records what the endpoint billed beside the plan's count of the request, and the
next plans scale their count by the ratio (``llm.plan.input_scale``)."""

from __future__ import annotations

import pytest

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, run_batch
from arena_assets.llm.budget import BatchGuard, spending
from arena_assets.llm.plan import AssetPlan, planning
from arena_assets.llm.tokens import chat_prompt_tokens_many
from arena_assets.simulator import read_prompt_truth, simulate_months, start_endpoint


def _within(estimate: float, counted: float, tolerance: float) -> bool:
    return abs(estimate - counted) <= tolerance * counted


def test_the_input_bill_follows_the_endpoints_tokenizer(tmp_path, monkeypatch):
    """An endpoint whose model has another tokenizer bills other prompt tokens than the
    plan's cl100k approximation counts (here 30 % more: the simulated arena's
    ``prompt_token_scale``). A first plan has nothing to compare and counts; every answer
    cached records the billed input beside the plan's count of its request, so after a
    pilot the plan scales its count by their ratio, and the run's billed input (the
    endpoint's usage, summed by run_batch) is within 1 % of it. A month 2 of new requests
    keeps the ratio: it is the cache's, per model and prompt version."""
    from arena_assets.llm.pilot import run_pilots
    from arena_assets.llm.plan import APPROX_BASIS, input_scale, sampling_pilots
    from arena_assets.simulator.faults import Faults

    raw = tmp_path / "raw"
    simulate_months(raw, ["2024-01"], 400, seed=11)
    texts = read_prompt_truth(raw, "2024-01")["text"].unique(maintain_order=True).to_list()[:200]
    requests = [
        LLMRequest(str(i), criteria_messages(t), CRITERIA_VERSION) for i, t in enumerate(texts)
    ]
    month1, month2 = requests[:160], requests[160:]
    with start_endpoint(seed=11, truth_root=raw, faults=Faults(prompt_token_scale=1.3)) as ep:
        task = LLMTask(
            model="sim-labeler-large",
            base_url=ep.base_url,
            max_concurrency=8,
            price_input_per_1m=0.15,
            price_output_per_1m=0.6,
        )
        cache = ResponseCache(str(tmp_path / "cache"), "labels")

        def plan(batch: list[LLMRequest]) -> AssetPlan:
            with sampling_pilots(30), planning() as batches:
                run_batch(task, batch, cache, parse_criteria)
            return AssetPlan("topic_labels", "2024-01", batches)

        first = plan(month1)
        assert first.batches[0].input_basis == APPROX_BASIS
        piloted = run_pilots([first], 30)
        assert [p.calls for p in piloted] == [30]
        assert "the endpoint billed 1.30x the plan's count of input tokens" in piloted[0].line()
        after = plan(month1)
        assert after.batches[0].input_basis.startswith(f"{APPROX_BASIS} x 1.3")
        assert "30 cached answers" in after.batches[0].input_basis
        assert "input at 1.30x the count as the endpoint billed" in after.line()
        assert "input at" not in first.line()
        _, done = run_batch(task, month1, cache, parse_criteria)
        assert done.calls == after.calls == 130
        assert _within(after.prompt_tokens, done.prompt_tokens, 0.01)
        # the count alone, per call, is the 30 % the endpoint adds under what it bills
        assert not _within(first.prompt_tokens / 160 * 130, done.prompt_tokens, 0.15)
        nxt = plan(month2)  # new requests: the ratio of the 160 answers now cached
        assert "160 cached answers" in nxt.batches[0].input_basis
        # under a budget each call reserves its worst case, its input at the same ratio
        reserved: list[float] = []
        reserve = BatchGuard.reserve
        monkeypatch.setattr(
            BatchGuard,
            "reserve",
            lambda g, worst, halted=None: (reserved.append(worst), reserve(g, worst, halted))[1],
        )
        with spending(100.0, "topic_labels 2024-02"):
            _, done2 = run_batch(task, month2, cache, parse_criteria)
    assert _within(nxt.prompt_tokens, done2.prompt_tokens, 0.01)
    counted = chat_prompt_tokens_many([r.messages for r in month2])
    assert len(reserved) == 40 and sum(reserved) == pytest.approx(
        task.cost(1.3 * sum(counted), 40 * task.max_tokens), rel=1e-3
    )
    # answers without usage, or cached before the count was recorded, calibrate nothing;
    # with fewer than 20 of both the count stands
    bare = ResponseCache(str(tmp_path / "cache"), "bare")
    for i in range(40):
        bare.put(
            f"u{i}",
            model=task.model,
            prompt_version="v",
            content="{}",
            prompt_tokens=0,
            counted_prompt_tokens=100,
        )
        bare.put(f"o{i}", model=task.model, prompt_version="v", content="{}", prompt_tokens=130)
    for i in range(19):
        bare.put(
            f"b{i}",
            model=task.model,
            prompt_version="v",
            content="{}",
            prompt_tokens=200,
            counted_prompt_tokens=100,
        )
    assert input_scale(task, bare, ["v"]) == (1.0, APPROX_BASIS)
    bare.put(
        "b19",
        model=task.model,
        prompt_version="v",
        content="{}",
        prompt_tokens=200,
        counted_prompt_tokens=100,
    )
    assert input_scale(task, bare, ["v"])[0] == 2.0
    bare.flush()  # read back from the chunks: the same
    assert input_scale(task, ResponseCache(str(tmp_path / "cache"), "bare"), ["v"])[0] == 2.0


def test_a_reward_models_plan_follows_its_billed_input(tmp_path):
    """The reward model's scores are cached with the endpoint's billed input beside the
    plan's count, so the next plan bills new conversations at the endpoint's rate (a
    stand-in vLLM /pooling server that bills 50 tokens a conversation)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import polars as pl

    from arena_assets.evaluators.judges import reward_verdicts

    class Pooling(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reply = json.dumps(
                {
                    "data": [{"index": 0, "data": [0.5]}],
                    "usage": {"prompt_tokens": 50, "total_tokens": 50},
                }
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(reply.encode())

    def sample(start: int) -> pl.DataFrame:  # sides of one length: one count each
        sides = [
            json.dumps(
                [
                    {"role": "user", "content": f"question number {i:04d}"},
                    {"role": "assistant", "content": f"answer number {i:04d}"},
                ]
            )
            for i in range(start, start + 40)
        ]
        return pl.DataFrame(
            {
                "battle_id": [f"b{start + i}" for i in range(20)],
                "conversation_a": sides[:20],
                "conversation_b": sides[20:],
            }
        )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Pooling)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        task = LLMTask(
            model="rm",
            base_url=f"http://127.0.0.1:{server.server_port}/v1",
            max_retries=0,
            price_input_per_1m=1.0,
        )
        cache = ResponseCache(str(tmp_path), "reward")
        with planning() as before:
            reward_verdicts(task, sample(0), cache)
        _, report = reward_verdicts(task, sample(0), cache)
        with planning() as after:
            reward_verdicts(task, sample(100), cache)
    finally:
        server.shutdown()
    assert report.calls == 40 and report.prompt_tokens == 40 * 50
    assert (
        before[0].input_basis == "approximate cl100k count" and before[0].prompt_tokens != 40 * 50
    )
    assert after[0].calls == 40 and after[0].prompt_tokens == 40 * 50
    assert "x " in after[0].input_basis and "40 cached answers" in after[0].input_basis


def test_a_cache_written_before_the_count_reads_back(tmp_path):
    """A chunk written before ``counted_prompt_tokens`` existed (the nine earlier columns)
    reads back on a local folder and on an object store's path (fsspec's memory store):
    its answers are there, their count is null, and they calibrate nothing."""
    import uuid

    import fsspec
    import polars as pl

    from arena_assets.llm.cache import CACHE_SCHEMA
    from arena_assets.llm.plan import input_scale

    old = {c: t for c, t in CACHE_SCHEMA.items() if c != "counted_prompt_tokens"}
    frame = pl.DataFrame(
        {
            "key": [f"k{i}" for i in range(30)],
            "model": ["m"] * 30,
            "prompt_version": ["v"] * 30,
            "content": ["{}"] * 30,
            "reasoning": [None] * 30,
            "embedding": [None] * 30,
            "prompt_tokens": [130] * 30,
            "completion_tokens": [7] * 30,
            "created_at": [1.0] * 30,
        },
        schema=old,
    )
    task = LLMTask(model="m", base_url="http://127.0.0.1:9/v1")
    for root in (str(tmp_path), f"memory://old-cache-{uuid.uuid4().hex}"):
        fs, base = fsspec.core.url_to_fs(root)
        fs.makedirs(f"{base}/ns", exist_ok=True)
        with fs.open(f"{base}/ns/chunk-{uuid.uuid4().hex}.parquet", "wb") as fh:
            frame.write_parquet(fh)
        cache = ResponseCache(root, "ns")
        assert (
            cache.get("k3")["content"] == "{}" and cache.get("k3")["counted_prompt_tokens"] is None
        )
        assert cache.completion_tokens("m", "v") == (30 * 7, 30) and cache.input_tokens(
            "m", "v"
        ) == (0, 0, 0)
        assert input_scale(task, cache, ["v"])[0] == 1.0
        # new answers beside the old ones: only they calibrate
        for i in range(20):
            cache.put(
                f"n{i}",
                model="m",
                prompt_version="v",
                content="{}",
                prompt_tokens=120,
                counted_prompt_tokens=100,
            )
        cache.flush()
        again = ResponseCache(root, "ns")
        assert again.input_tokens("m", "v") == (20 * 120, 20 * 100, 20) and len(again) == 50
        assert input_scale(task, again, ["v"])[0] == 1.2
