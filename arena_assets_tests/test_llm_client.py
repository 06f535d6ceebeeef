"""The LLM client layer over real HTTP (the `openai` package) against a stand-in server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
from arena_assets.llm import (
    LLMEndpointError,
    LLMRequest,
    LLMTask,
    ResponseCache,
    concurrently,
    embed_texts,
    request_key,
    run_batch,
)
from arena_assets.llm.cache import MERGE_AT, answer_row, text_request_keys
from arena_assets_tests.labelling_server import LabellingServer, expected_answer
from arena_assets_tests.llm_kill_child import requests as kill_requests

ROOT = Path(__file__).resolve().parents[1]


def _task(server: LabellingServer, **kw) -> LLMTask:
    base = dict(
        model="labeler-strong",
        base_url=server.base_url,
        api_key="test-key",
        max_concurrency=4,
        timeout=10,
        price_input_per_1m=2.0,
        price_output_per_1m=8.0,
    )
    return LLMTask(**(base | kw))


def _reqs(n: int, dupes: int = 0) -> list[LLMRequest]:
    texts = [f"Explain topic {i} with an example" for i in range(n)]
    texts += texts[:dupes]  # identical prompts under other ids
    return [
        LLMRequest(f"item{i}", criteria_messages(t), CRITERIA_VERSION) for i, t in enumerate(texts)
    ]


def test_batch_parses_caches_and_reruns_without_calls(tmp_path):
    seen = []
    with LabellingServer() as srv:
        task = _task(srv)
        reqs = _reqs(30, dupes=5)
        results, report = run_batch(
            task,
            reqs,
            ResponseCache(str(tmp_path), "t", chunk_size=8),
            parse_criteria,
            progress=seen.append,
        )
        assert [r.item_id for r in results] == [r.item_id for r in reqs]
        assert report.statuses == {"ok": 35, "parse_failed": 0, "failed": 0}
        assert srv.calls == report.calls == 30  # duplicates asked once
        for r in results[:30]:
            text = r.item_id.replace("item", "")
            want = expected_answer("criteria-v1", f"Explain topic {text} with an example")
            assert r.value.model_dump() == want
        assert report.prompt_tokens > 0 and report.cost == pytest.approx(
            (report.prompt_tokens * 2 + report.completion_tokens * 8) / 1e6
        )
        assert seen[-1].done == seen[-1].total == 30 and seen[-1].rate > 0
        chunks = list((tmp_path / "t").glob("chunk-*.parquet"))
        assert len(chunks) == 4  # 30 answers in chunks of 8
        # a fresh cache object reads the chunks back: zero calls, same answers
        again, report2 = run_batch(
            task, reqs, ResponseCache(str(tmp_path), "t", chunk_size=8), parse_criteria
        )
        assert srv.calls == 30 and report2.calls == 0 and report2.cache_hits == 30
        assert [r.value for r in again] == [r.value for r in results]
        assert ResponseCache(str(tmp_path), "t").compact() == 4
        assert len(list((tmp_path / "t").glob("chunk-*.parquet"))) == 1
        _, report3 = run_batch(task, reqs, ResponseCache(str(tmp_path), "t"), parse_criteria)
        assert report3.cache_hits == 30 and srv.calls == 30
        # another model, prompt version or temperature is another key
        keys = {
            request_key(m, reqs[0].messages, {"temperature": t}, v)
            for m, t, v in [("a", 0, "v1"), ("b", 0, "v1"), ("a", 0.5, "v1"), ("a", 0, "v2")]
        }
        assert len(keys) == 4
    # the embeddings' keys of many texts at once are request_key's, whatever the text holds
    texts = [
        "",
        "plain",
        'quotes " and \\ slashes',
        "line\nbreak\ttab\x00nul\x1f",
        "ünïcödé 中文 😀",
        "\u2028\u2029",
    ]
    for params in ({}, {"temperature": 0.5, "dimensions": 64}):
        assert text_request_keys("emb-model", texts, params, "embed-v1") == [
            request_key("emb-model", t, params, "embed-v1") for t in texts
        ]


def test_cache_reads_back_newest_answers_and_their_lengths(tmp_path):
    """What a cache object answers from the chunks it read and from the answers put since:
    the newest answer of a key wins, each key counts once, and the completion tokens of a
    model and prompt version are summed over exactly those answers (the plan's history)."""
    first = ResponseCache(str(tmp_path), "t", chunk_size=2)
    first.put(
        "a",
        model="m",
        prompt_version="v1",
        content="A1",
        completion_tokens=10,
        prompt_tokens=13,
        counted_prompt_tokens=10,
    )
    first.put(
        "b",
        model="m",
        prompt_version="v1",
        content="B1",
        completion_tokens=20,
        prompt_tokens=50,
        counted_prompt_tokens=40,
    )
    first.put("c", model="other", prompt_version="v1", content="C1", completion_tokens=99)
    first.flush()
    cache = ResponseCache(str(tmp_path), "t", chunk_size=2)  # reads the chunks
    assert cache.get("a")["content"] == "A1" and cache.get("zz") is None
    cache.put(
        "b", model="m", prompt_version="v1", content="B2", completion_tokens=7
    )  # newer than the chunk's
    assert cache.input_tokens("m", "v1") == (13, 10, 1)  # b's newer answer records no count
    cache.put(
        "b",
        model="m",
        prompt_version="v1",
        content="B2",
        completion_tokens=7,
        prompt_tokens=26,
        counted_prompt_tokens=20,
    )
    cache.put("d", model="m", prompt_version="v2", content="D1", completion_tokens=5)
    assert cache.get("b") == {
        "key": "b",
        "model": "m",
        "prompt_version": "v1",
        "content": "B2",
        "reasoning": None,
        "embedding": None,
        "prompt_tokens": 26,
        "completion_tokens": 7,
        "created_at": cache.get("b")["created_at"],
        "counted_prompt_tokens": 20,
    }
    assert len(cache) == 4 and sorted(r["key"] for r in cache.entries()) == ["a", "b", "c", "d"]
    assert cache.completion_tokens("m", "v1") == (10 + 7, 2)
    # billed and counted input over the same answers, those that record both (the plan's
    # input_scale): a's from the chunk, b's newest
    assert cache.input_tokens("m", "v1") == (13 + 26, 10 + 20, 2) and cache.input_tokens(
        "x", "v1"
    ) == (0, 0, 0)
    assert cache.completion_tokens("m", "v2") == (5, 1) and cache.completion_tokens("x", "v1") == (
        0,
        0,
    )
    # many keys' one column at once: what get gives, for the keys cached, newest first
    assert cache.values(["a", "b", "zz", "d"], "content") == {"a": "A1", "b": "B2", "d": "D1"}
    assert cache.values(["c", "b"], "completion_tokens") == {"c": 99, "b": 7}
    assert cache.values(["a", "zz"], "key") == {"a": "a"}
    cache.flush()
    again = ResponseCache(str(tmp_path), "t")  # the newest answer of b from disk too
    assert again.get("b")["content"] == "B2" and again.completion_tokens("m", "v1") == (17, 2)
    assert again.values(["b", "d", "e"], "content") == {"b": "B2", "d": "D1"}


def test_large_chunks_are_not_merged_in_the_background(tmp_path, monkeypatch):
    """A chunk at or above SMALL_CHUNK_BYTES (wide vectors) stays as written, during a run
    as at its end: a background merge takes only small chunks."""
    import arena_assets.llm.cache as cache_module

    monkeypatch.setattr(cache_module, "SMALL_CHUNK_BYTES", 4096)  # a chunk of 1,024 floats is large
    cache = ResponseCache(str(tmp_path), "wide", chunk_size=1)
    rng = np.random.default_rng(0)  # random floats: the file is no smaller than in memory
    for i in range(MERGE_AT + 1):
        cache.put(
            f"k{i}",
            model="m",
            prompt_version="v",
            embedding=rng.standard_normal(1024).astype(np.float32),
        )
    assert cache.settle() == 0
    chunks = list((tmp_path / "wide").glob("chunk-*.parquet"))
    assert len(chunks) == MERGE_AT + 1 and pl.read_parquet(chunks).height == MERGE_AT + 1


def test_small_chunks_are_merged_as_they_pile_up(tmp_path):
    """Every MERGE_AT chunks a run writes are merged into one while it runs, and a run
    ends with fewer than MERGE_AT small chunks in the namespace; a run that only reads
    leaves the files as they are; a reader whose listing a merge made stale lists again;
    a merge of chunks another process already merged does nothing; the answers are the
    same throughout."""
    n = MERGE_AT + 5
    with LabellingServer() as srv:
        task = _task(srv)
        first, report = run_batch(
            task, _reqs(n), ResponseCache(str(tmp_path), "t", chunk_size=1), parse_criteria
        )
        chunks = sorted((tmp_path / "t").glob("chunk-*.parquet"))
        # n chunks of one answer: the first MERGE_AT merged as the run went on, 5 as written
        assert report.calls == n and sorted(pl.read_parquet(c).height for c in chunks) == [
            1
        ] * 5 + [MERGE_AT]
        assert pl.read_parquet(chunks).get_column("key").n_unique() == n
        assert not list((tmp_path / "t" / "_tmp").iterdir())  # no write left half-done
        stamps = [c.stat().st_mtime_ns for c in chunks]
        again, report = run_batch(
            task, _reqs(n), ResponseCache(str(tmp_path), "t", chunk_size=1), parse_criteria
        )
        assert (report.calls, report.cache_hits) == (0, n) and [r.value for r in again] == [
            r.value for r in first
        ]
        assert sorted((tmp_path / "t").glob("chunk-*.parquet")) == chunks
        assert [c.stat().st_mtime_ns for c in chunks] == stamps
        # fewer small chunks than MERGE_AT stay as written
        _, report = run_batch(
            task, _reqs(n + 3), ResponseCache(str(tmp_path), "t", chunk_size=1), parse_criteria
        )
        assert report.calls == 3 and len(list((tmp_path / "t").glob("chunk-*.parquet"))) == 9
        # MERGE_AT of them or more: settle merges the namespace's small chunks into one
        _, report = run_batch(
            task,
            _reqs(n + 3 + MERGE_AT - 9),
            ResponseCache(str(tmp_path), "t", chunk_size=1),
            parse_criteria,
        )
        chunks = list((tmp_path / "t").glob("chunk-*.parquet"))
        assert (
            report.calls == MERGE_AT - 9
            and len(chunks) == 1
            and pl.read_parquet(chunks).height == n + 3 + MERGE_AT - 9
        )

    # the folder as a reader listed it just before another process merged its chunks
    writer = ResponseCache(str(tmp_path), "race", chunk_size=1)
    for i in range(6):
        writer.put(f"k{i}", model="m", prompt_version="v", content=f"answer {i}")
    stale = writer._chunk_paths()

    class ListedBeforeTheMerge(ResponseCache):
        listings = 0

        def _chunk_paths(self, detail=False):
            self.listings += 1
            return stale if self.listings == 1 else super()._chunk_paths(detail)

    assert ResponseCache(str(tmp_path), "race").compact() == 6
    reader = ListedBeforeTheMerge(str(tmp_path), "race")
    assert {k: reader.get(k)["content"] for k in (f"k{i}" for i in range(6))} == {
        f"k{i}": f"answer {i}" for i in range(6)
    }
    assert reader.listings >= 2
    # a second merge of the same (already merged) chunks finds them gone: nothing changes
    assert ResponseCache(str(tmp_path), "race")._merge(stale) == 0
    assert len(ResponseCache(str(tmp_path), "race")) == 6


def test_extra_params_sent_and_reasoning_kept_apart(tmp_path):
    with LabellingServer() as srv:
        plain, think = _task(srv), _task(srv, extra_params={"reasoning_effort": "low"})
        a, _ = run_batch(plain, _reqs(2), ResponseCache(str(tmp_path), "r"), parse_criteria)
        b, _ = run_batch(think, _reqs(2), ResponseCache(str(tmp_path), "r"), parse_criteria)
        assert srv.calls == 4  # another parameter, another cache key
        assert a[0].reasoning is None and b[0].reasoning == "thinking (low) about it"
        assert b[0].value == a[0].value  # the answer itself holds no reasoning
        c, rep = run_batch(think, _reqs(2), ResponseCache(str(tmp_path), "r"), parse_criteria)
        assert rep.calls == 0 and c[0].reasoning == b[0].reasoning


def test_faults_every_item_finishes_once(tmp_path):
    with LabellingServer(fault_rate=0.3, seed=11) as srv:
        task = _task(srv, max_retries=3, parse_retries=1)
        reqs = _reqs(120)
        results, report = run_batch(task, reqs, ResponseCache(str(tmp_path), "f"), parse_criteria)
        assert len(results) == 120 and len({r.item_id for r in results}) == 120
        assert sum(report.statuses.values()) == 120
        assert all(srv.faults[k] > 0 for k in srv.faults)  # every fault kind was exercised
        assert report.statuses["ok"] >= 100  # retries and re-asks heal most faults
        for r in results:
            if r.status == "ok":
                i = r.item_id.replace("item", "")
                assert r.value.model_dump() == expected_answer(
                    "criteria-v1", f"Explain topic {i} with an example"
                )
            else:
                assert r.value is None and r.error
        stored = pl.read_parquet(tmp_path / "f" / "chunk-*.parquet")
        assert stored["key"].n_unique() == stored.height  # no duplicate cache rows
        assert stored.height == report.statuses["ok"]  # only parseable answers are cached
        unfilled = report.statuses["failed"] + report.statuses["parse_failed"]
        print(
            f"30 % faults {srv.faults}: statuses {report.statuses}, {srv.calls} POSTs for 120 items"
        )
        # faults off: the rerun asks for every item that failed or did not parse (neither
        # was cached), and fills them all; then nothing
        srv.fault_rate = 0.0
        before = srv.calls
        _, report2 = run_batch(task, reqs, ResponseCache(str(tmp_path), "f"), parse_criteria)
        assert srv.calls - before == unfilled and report2.statuses["ok"] == 120
        before = srv.calls
        _, report3 = run_batch(task, reqs, ResponseCache(str(tmp_path), "f"), parse_criteria)
        assert srv.calls == before and report3.calls == 0


def test_only_parseable_answers_are_cached_and_bad_cached_ones_are_asked_again(tmp_path):
    """Garbage, empty and truncated answers are not cached, so a rerun against a healthy
    endpoint fills them; a cache that already holds bad answers is asked again for those
    keys, and the healed answer wins from then on."""
    with LabellingServer(fault_rate=1.0, seed=2) as srv:
        task = _task(srv, max_retries=0, parse_retries=0)
        srv.faults_allowed = ("garbage", "empty", "truncated")
        _results, report = run_batch(
            task, _reqs(12), ResponseCache(str(tmp_path), "g"), parse_criteria
        )
        assert report.statuses == {"ok": 0, "parse_failed": 12, "failed": 0}
        assert len(ResponseCache(str(tmp_path), "g")) == 0
        srv.fault_rate = 0.0
        before = srv.calls
        _results, report = run_batch(
            task, _reqs(12), ResponseCache(str(tmp_path), "g"), parse_criteria
        )
        assert srv.calls - before == 12 and report.statuses["ok"] == 12
        # an older cache that stored unparsed answers: asked again, then answered from cache
        legacy = ResponseCache(str(tmp_path), "legacy")
        keys = [
            request_key(task.model, r.messages, task.generation_params(), r.prompt_version)
            for r in _reqs(3)
        ]
        for key in keys:
            legacy.put(
                key,
                model=task.model,
                prompt_version=CRITERIA_VERSION,
                content='{"specificity": tru',
            )
        legacy.flush()
        before = srv.calls
        _, report = run_batch(
            task, _reqs(3), ResponseCache(str(tmp_path), "legacy"), parse_criteria
        )
        assert (srv.calls - before, report.cache_hits, report.statuses["ok"]) == (3, 0, 3)
        _, report = run_batch(
            task, _reqs(3), ResponseCache(str(tmp_path), "legacy"), parse_criteria
        )
        assert (report.calls, report.cache_hits) == (0, 3)
        # compacting keeps the healed answer, not the bad one
        ResponseCache(str(tmp_path), "legacy").compact()
        _, report = run_batch(
            task, _reqs(3), ResponseCache(str(tmp_path), "legacy"), parse_criteria
        )
        assert (report.calls, report.cache_hits) == (0, 3)


def test_timeouts_are_retried_then_recorded_failed(tmp_path):
    with LabellingServer(latency_s=0.3) as srv:
        task = _task(srv, timeout=0.05, max_retries=1)
        results, _report = run_batch(
            task, _reqs(3), ResponseCache(str(tmp_path), "slow"), parse_criteria
        )
        assert [r.status for r in results] == ["failed"] * 3
        assert all("APITimeoutError" in r.error for r in results)
        assert srv.wait_calls(
            6, timeout=10
        )  # each item: the first try and one retry reached the server
        assert not (tmp_path / "slow").exists()  # nothing cached for failures


def test_clear_errors_before_any_output(tmp_path):
    with LabellingServer() as srv:
        cache = ResponseCache(str(tmp_path), "e")
        with pytest.raises(LLMEndpointError, match=rf"{srv.base_url}.*refused the API key"):
            run_batch(_task(srv, api_key="wrong"), _reqs(3), cache, parse_criteria)
        with pytest.raises(
            LLMEndpointError, match=r"does not serve model 'gpt-nope'.*labeler-strong"
        ):
            run_batch(_task(srv, model="gpt-nope"), _reqs(3), cache, parse_criteria)
        assert srv.calls == 0
        url = srv.base_url
    # the server is gone: nothing listens on that port any more
    with pytest.raises(LLMEndpointError, match=rf"cannot reach the LLM endpoint {url}"):
        run_batch(LLMTask(model="m", base_url=url, max_retries=0), _reqs(3), cache, parse_criteria)
    assert not (tmp_path / "e").exists()


def test_key_revoked_mid_batch_stops_it_and_keeps_the_answers(tmp_path):
    with LabellingServer(revoke_key_after=12) as srv:
        task = _task(srv, max_concurrency=2)
        with pytest.raises(LLMEndpointError, match="refused the API key"):
            run_batch(
                task, _reqs(40), ResponseCache(str(tmp_path), "k", chunk_size=5), parse_criteria
            )
        kept = len(ResponseCache(str(tmp_path), "k"))
        assert 10 <= kept <= 13  # every answer received was flushed, though not a whole chunk
        srv.revoke_key_after, srv.api_key = None, "test-key"
        before = srv.calls
        _, report = run_batch(task, _reqs(40), ResponseCache(str(tmp_path), "k"), parse_criteria)
        assert report.cache_hits == kept and srv.calls - before == 40 - kept


def test_embeddings_cached_and_normalised(tmp_path):
    with LabellingServer(dim=12) as srv:
        task = _task(srv)
        texts = [f"text {i}" for i in range(50)] + ["text 0"]
        x, _report = embed_texts(task, texts, ResponseCache(str(tmp_path), "emb"), batch_size=16)
        assert x.shape == (51, 12) and (abs((x**2).sum(axis=1) - 1) < 1e-5).all()
        assert (x[0] == x[50]).all() and srv.calls == 4  # 50 distinct texts / 16 per call
        y, _ = embed_texts(task, texts, ResponseCache(str(tmp_path), "emb"))
        assert srv.calls == 4 and (x == y).all()


def test_vectors_put_as_arrays_read_back_as_written(tmp_path):
    """An embeddings call's vectors go into the cache as arrays (stacked into one float32
    column per chunk); a chunk of lists, or of vectors of several sizes, is written as
    lists: every vector reads back with its own values and size, nulls stay null."""
    import numpy as np

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((5, 8)).astype(np.float32)
    cache = ResponseCache(str(tmp_path), "v", chunk_size=3)
    cache.put_many(
        [
            answer_row(f"k{i}", model="e", prompt_version="v1", embedding=v)
            for i, v in enumerate(vectors)
        ]
    )
    cache.put(
        "odd", model="e", prompt_version="v1", embedding=np.arange(4, dtype=np.float32)
    )  # another size
    cache.put("list", model="e", prompt_version="v1", embedding=[0.5, -1.0])
    cache.put("chat", model="m", prompt_version="v1", content="an answer")
    assert (cache.get("k4")["embedding"] == vectors[4]).all()  # before any write: as put
    cache.flush()
    again = ResponseCache(str(tmp_path), "v")
    for i, v in enumerate(vectors):
        assert np.array_equal(np.asarray(again.get(f"k{i}")["embedding"], np.float32), v)
    assert list(again.get("odd")["embedding"]) == [0, 1, 2, 3] and list(
        again.get("list")["embedding"]
    ) == [0.5, -1.0]
    assert again.get("chat")["embedding"] is None and again.get("chat")["content"] == "an answer"
    assert len(again) == 8


def test_sigkill_mid_run_loses_at_most_one_chunk(tmp_path):
    n, chunk, conc = 200, 20, 4
    with LabellingServer() as srv:  # a clean run's cost, for the comparison
        clean_root = tmp_path / "clean"
        task = _task(srv)
        run_batch(
            task, kill_requests(n), ResponseCache(str(clean_root), "kill", chunk), parse_criteria
        )
        clean_calls = srv.calls
    assert clean_calls == n
    with LabellingServer() as srv:
        root = tmp_path / "killed"
        cmd = [
            sys.executable,
            "-m",
            "arena_assets_tests.llm_kill_child",
            srv.base_url,
            str(root),
            str(n),
            str(chunk),
            str(conc),
        ]
        child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert srv.wait_calls(110), "the child never reached 110 calls"
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=30)
        assert child.returncode == -signal.SIGKILL
        killed_calls = srv.calls
        assert killed_calls < n  # it really died mid-run
        stored = len(ResponseCache(str(root), "kill", chunk))
        assert stored % chunk == 0 and stored >= 100 - chunk  # whole chunks only
        rerun = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
        )
        calls, hits, ok = map(int, rerun.stdout.split())
        assert (hits, ok) == (stored, n) and srv.calls == killed_calls + calls
        # lost: the unflushed buffer (< one chunk) and the calls in flight at the kill
        print(
            f"SIGKILL at {killed_calls} calls: {stored} answers kept, rerun {calls} calls, "
            f"excess over a clean run {srv.calls - clean_calls} (chunk {chunk}, concurrency {conc})"
        )
        assert srv.calls - clean_calls <= chunk + conc


def test_cache_on_s3_is_configuration_only(tmp_path):
    import boto3
    from moto.server import ThreadedMotoServer

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)  # picks its port
    moto.start()
    try:
        host, port = moto.get_host_and_port()
        url = f"http://{host}:{port}"
        boto3.client(
            "s3",
            endpoint_url=url,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        ).create_bucket(Bucket="lake")
        opts = {
            "key": "test",
            "secret": "test",
            "client_kwargs": {"endpoint_url": url, "region_name": "us-east-1"},
        }
        with LabellingServer() as srv:
            task = _task(srv)
            _, r1 = run_batch(
                task, _reqs(10), ResponseCache("s3://lake/_llm_cache", "t", 4, opts), parse_criteria
            )
            _, r2 = run_batch(
                task, _reqs(10), ResponseCache("s3://lake/_llm_cache", "t", 4, opts), parse_criteria
            )
            assert (r1.calls, r2.calls, r2.cache_hits, srv.calls) == (10, 0, 10, 10)
            # a chunk per answer: MERGE_AT of them merged while the run goes on, on the object store too
            _, r3 = run_batch(
                task,
                _reqs(MERGE_AT + 8),
                ResponseCache("s3://lake/_llm_cache", "m", 1, opts),
                parse_criteria,
            )
            listed = boto3.client(
                "s3",
                endpoint_url=url,
                aws_access_key_id="test",
                aws_secret_access_key="test",
                region_name="us-east-1",
            ).list_objects_v2(Bucket="lake", Prefix="_llm_cache/m/")
            assert (
                r3.calls == MERGE_AT + 8
                and [o["Key"].rsplit("/", 1)[1][:6] for o in listed["Contents"]] == ["chunk-"] * 9
            )
            _, r4 = run_batch(
                task,
                _reqs(MERGE_AT + 8),
                ResponseCache("s3://lake/_llm_cache", "m", 1, opts),
                parse_criteria,
            )
            assert (r4.calls, r4.cache_hits) == (0, MERGE_AT + 8)
    finally:
        moto.stop()


def test_against_the_simulated_arena_endpoint(tmp_path):
    """Free-form answers (what model_answers will ask) from the project's own endpoint."""
    from arena_assets.simulator import World, WorldConfig
    from arena_assets.simulator.endpoint import ArenaEndpoint, Faults

    world = World.build(WorldConfig(n_models=4), seed=2)
    faults = Faults(rate_429=0.15, rate_500=0.15, retry_after=0.01, seed=4)
    with ArenaEndpoint(world, faults=faults) as ep:
        task = LLMTask(
            model=world.model_names[0],
            base_url=ep.base_url,
            max_concurrency=4,
            max_retries=6,
            timeout=10,
        )
        reqs = [
            LLMRequest(
                f"q{i}", [{"role": "user", "content": f"Explain idea number {i}"}], "answer-v1"
            )
            for i in range(40)
        ]
        results, report = run_batch(task, reqs, ResponseCache(str(tmp_path), "answers"), str)
        posts = lambda: sum(v for k, v in ep.stats.items() if k.startswith("POST /v1/chat"))
        assert report.statuses["ok"] + report.statuses["failed"] == 40
        assert report.statuses["ok"] >= 36 and all(r.content for r in results if r.status == "ok")
        assert posts() > report.calls  # the faults were retried by the client
        first = posts()
        _, again = run_batch(task, reqs, ResponseCache(str(tmp_path), "answers"), str)
        assert (
            posts() - first == report.statuses["failed"]
            and again.cache_hits == report.statuses["ok"]
        )


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="thread affinity needs Linux and two CPUs",
)
def test_the_calls_threads_share_one_cpu_and_the_caller_keeps_all(tmp_path):
    """run_batch's threads run on one CPU (the interpreter lock passes between them without
    cross-core wake-ups); the calling thread's CPUs are left as they were."""
    before = os.sched_getaffinity(0)
    seen: list[set[int]] = []

    def parse(content: str):
        seen.append(os.sched_getaffinity(0))  # parse runs in the pool's threads
        return parse_criteria(content)

    with LabellingServer() as srv:
        _, report = run_batch(
            _task(srv, max_concurrency=4), _reqs(12), ResponseCache(str(tmp_path), "p"), parse
        )
    assert report.statuses["ok"] == 12 and len(seen) == 12
    assert (
        all(len(cpus) == 1 and cpus <= before for cpus in seen)
        and len({frozenset(c) for c in seen}) == 1
    )
    assert os.sched_getaffinity(0) == before


def test_batches_asked_at_once_share_their_endpoint_limit(tmp_path):
    """Two models' batches through `concurrently`: never more calls at once than the
    endpoint's max_concurrency, and a batch's last call leaves the free slots to the other
    (both in flight together: no drain with the endpoint half idle); every answer as asked
    alone."""
    with LabellingServer(latency_s=0.02) as srv:
        strong, cheap = (
            _task(srv, max_concurrency=3),
            _task(srv, model="labeler-cheap", max_concurrency=3),
        )
        # 25 = 8 waves of 3 and one call: the first batch's last wave leaves 2 slots free
        asked = concurrently(
            [
                partial(
                    run_batch, t, _reqs(25), ResponseCache(str(tmp_path), t.model), parse_criteria
                )
                for t in (strong, cheap)
            ]
        )
        assert srv.calls == 50 and srv.peak_in_flight == 3
        assert frozenset({"labeler-strong", "labeler-cheap"}) in srv.together
        for (results, report), t in zip(asked, (strong, cheap)):
            assert report.model == t.model and report.statuses == {
                "ok": 25,
                "parse_failed": 0,
                "failed": 0,
            }
            assert [r.item_id for r in results] == [f"item{i}" for i in range(25)]
        alone, _ = run_batch(
            strong, _reqs(25), ResponseCache(str(tmp_path), "alone"), parse_criteria
        )
        assert [r.value for r in alone] == [r.value for r in asked[0][0]]


def test_a_failing_batch_stops_the_ones_asked_with_it(tmp_path):
    """An unknown model fails its batch before any call; the batch beside it stops early
    (what it answered is cached) and the real error, not the cancellation, is raised."""
    with LabellingServer(latency_s=0.02) as srv:
        good, bad = _task(srv, max_concurrency=2), _task(srv, model="no-such-model")
        cache = ResponseCache(str(tmp_path), "good", chunk_size=5)
        with pytest.raises(LLMEndpointError, match="no-such-model"):
            concurrently(
                [
                    partial(run_batch, good, _reqs(400), cache, parse_criteria),
                    partial(
                        run_batch,
                        bad,
                        _reqs(5),
                        ResponseCache(str(tmp_path), "bad"),
                        parse_criteria,
                    ),
                ]
            )
        assert srv.calls < 400
        assert len(ResponseCache(str(tmp_path), "good")) == srv.calls  # every answer received kept


def test_a_batch_failing_mid_run_stops_the_one_beside_it_at_once(tmp_path):
    """A failure inside a running batch stops the batch beside it at once, not once the
    failing batch has drained. The failing batch's second worker is held until the other
    batch has ended, so without the immediate stop that batch would make all its calls;
    with it, only the calls in flight at the failure (at most the endpoint's 4) complete."""
    gate, seen = threading.Event(), {}

    def broken(messages):
        seen["calls_at_failure"] = srv.calls
        raise RuntimeError("boom")

    def held(messages):
        assert gate.wait(timeout=60), "the batch beside never ended"
        return messages

    def beside():
        try:
            return run_batch(
                task,
                _reqs(200),
                ResponseCache(str(tmp_path), "beside", chunk_size=5),
                parse_criteria,
            )
        finally:
            gate.set()

    with LabellingServer(latency_s=0.02) as srv:
        task = _task(srv, max_concurrency=4)
        # the first worker takes "held" (keys go out in order), the second fails on "bad"
        failing = [
            LLMRequest("held", criteria_messages("held back"), CRITERIA_VERSION, prepare=held),
            LLMRequest("bad", criteria_messages("never sent"), CRITERIA_VERSION, prepare=broken),
        ]
        with pytest.raises(RuntimeError, match="boom"):
            concurrently(
                [
                    beside,
                    partial(
                        run_batch,
                        replace(task, model="labeler-cheap"),
                        failing,
                        ResponseCache(str(tmp_path), "bad"),
                        parse_criteria,
                    ),
                ]
            )
        assert srv.calls - seen["calls_at_failure"] <= 4 and srv.calls < 200
        assert len(ResponseCache(str(tmp_path), "beside")) == srv.calls  # every answer kept


def test_a_batch_failing_stops_the_reward_scoring_beside_it_at_once(tmp_path):
    """The reward model's scoring (its own pool, as judge-human agreement asks it beside an
    LLM judge) stops at once when the batch beside it fails: only the calls in flight at
    the failure (at most its 4 slots) complete, not its 200, and what it received is
    cached. The failing batch's other worker is held until the scoring has ended, so a
    scoring that only noticed the failure once that batch drained would make every call."""
    import json
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from arena_assets.evaluators.judges import reward_verdicts

    scored, gate, seen = [], threading.Event(), {}

    class Pooling(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(0.02)  # the endpoint's latency, not synchronisation
            scored.append(body)
            reply = json.dumps(
                {"data": [{"index": 0, "data": [float(len(body["messages"][0]["content"]))]}]}
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(reply.encode())

    def broken(messages):
        seen["scored_at_failure"] = len(scored)
        raise RuntimeError("boom")

    def held(messages):
        assert gate.wait(timeout=60), "the reward scoring beside never ended"
        return messages

    sides = [
        json.dumps(
            [{"role": "user", "content": f"prompt {i}"}, {"role": "assistant", "content": "x" * i}]
        )
        for i in range(200)
    ]
    sample = pl.DataFrame(
        {
            "battle_id": [f"b{i}" for i in range(100)],
            "conversation_a": sides[:100],
            "conversation_b": sides[100:],
        }
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pooling)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    reward = LLMTask(
        model="rm",
        base_url=f"http://127.0.0.1:{server.server_port}/v1",
        max_concurrency=4,
        max_retries=0,
        timeout=10,
    )
    cache = ResponseCache(str(tmp_path), "reward", chunk_size=5)

    def beside():
        try:
            return reward_verdicts(reward, sample, cache)
        finally:
            gate.set()

    try:
        with LabellingServer(latency_s=0.02) as srv:
            failing = [
                LLMRequest("held", criteria_messages("held back"), CRITERIA_VERSION, prepare=held),
                LLMRequest(
                    "bad", criteria_messages("never sent"), CRITERIA_VERSION, prepare=broken
                ),
            ]
            with pytest.raises(RuntimeError, match="boom"):
                concurrently(
                    [
                        beside,
                        partial(
                            run_batch,
                            _task(srv, max_concurrency=4),
                            failing,
                            ResponseCache(str(tmp_path), "bad"),
                            parse_criteria,
                        ),
                    ]
                )
    finally:
        server.shutdown()
    assert len(scored) - seen["scored_at_failure"] <= 4 and len(scored) < 200
    assert len(ResponseCache(str(tmp_path), "reward")) == len(scored)  # every score received kept


@pytest.mark.parametrize(
    ("content_type", "body", "expect"),
    [
        ("application/json", b'{"object": "list", "data": [{"id": "m"}, {"id": "n"}]}', ["m", "n"]),
        ("text/plain", b'{"data": [{"id": "m"}]}', ["m"]),  # a gateway's wrong header: still read
        (None, b'[{"id": "m"}]', ["m"]),  # a bare list of models
        ("text/html", b"<html><body>Welcome</body></html>", "base URL ends in /v1"),  # /v1 left out
        ("application/json", b'{"models": []}', "base URL ends in /v1"),
    ],
)
def test_preflight_reads_the_model_listing_as_servers_send_it(content_type, body, expect):
    """The preflight reads /models as bytes, whatever the Content-Type says; a body that is
    no model list is one clear error naming the likely cause, not a crash or "(none)"."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from arena_assets.llm.client import preflight

    class Models(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    task = LLMTask(
        model="m", base_url=f"http://127.0.0.1:{server.server_port}/v1", max_retries=0, timeout=5
    )
    try:
        if isinstance(expect, list):
            assert preflight(task) == expect
        else:
            with pytest.raises(LLMEndpointError, match=expect):
                preflight(task)
    finally:
        server.shutdown()
