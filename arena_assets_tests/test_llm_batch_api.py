"""A task in batch mode against the simulated arena's Batch API, over HTTP with the
``openai`` client: the same results as online mode, jobs recorded so that a killed run
resumes them instead of submitting again, and every request accounted for whatever a job
does (errored lines, lost lines, expiry)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, embed_texts, run_batch
from arena_assets.llm.batch_files import METADATA_KEY, JobRecord, JobRecords, request_set
from arena_assets.llm.batch_jobs import BatchesPending
from arena_assets.llm.budget import spending
from arena_assets.llm.plan import BudgetExceeded
from arena_assets.simulator.api import start_endpoint
from arena_assets.simulator.faults import Faults
from arena_assets_tests.batch_kill_child import requests as child_requests

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def arena():
    ep = start_endpoint(seed=7)
    yield ep
    ep.stop()


@pytest.fixture
def fresh(arena):
    arena.set_faults(Faults())
    arena.reset_counts()
    return arena


def _task(ep, **kw) -> LLMTask:
    base = dict(
        model="sim-labeler-large",
        base_url=ep.base_url,
        max_concurrency=4,
        price_input_per_1m=2.0,
        price_output_per_1m=8.0,
        price_input_per_1m_batch=1.0,
        price_output_per_1m_batch=4.0,
        batch_poll_s=0.02,
    )
    return LLMTask(**(base | kw))


def _reqs(n: int, dupes: int = 0, tag: str = "") -> list[LLMRequest]:
    texts = [f"Explain topic {i}{tag} with an example in code" for i in range(n)]
    texts += texts[:dupes]
    return [
        LLMRequest(f"item{i}", criteria_messages(t), CRITERIA_VERSION) for i, t in enumerate(texts)
    ]


def _rows(results) -> list[tuple]:
    return [
        (r.item_id, r.status, r.content, r.prompt_tokens, r.completion_tokens, r.error)
        for r in results
    ]


def test_batch_mode_gives_online_modes_results_at_batch_prices(fresh, tmp_path):
    reqs = _reqs(60, dupes=6)
    online, on = run_batch(_task(fresh), reqs, ResponseCache(str(tmp_path), "on"), parse_criteria)
    assert fresh.call_count(route="chat/completions") == 60
    fresh.reset_counts()
    task = _task(fresh, mode="batch")
    batched, rep = run_batch(task, reqs, ResponseCache(str(tmp_path), "b"), parse_criteria)
    assert _rows(batched) == _rows(online)
    assert [r.value for r in batched] == [r.value for r in online]
    # no call online: one job of 60 distinct requests, duplicates asked once
    assert fresh.call_count(route="chat/completions") == 0
    assert fresh.call_count(route="batches", status=200) == 1
    assert fresh.call_count(route="batch/chat/completions") == 60
    assert (rep.calls, rep.batch_requests, rep.batches_submitted, rep.mode) == (0, 60, 1, "batch")
    assert rep.statuses == on.statuses == {"ok": 66, "parse_failed": 0, "failed": 0}
    assert (rep.prompt_tokens, rep.completion_tokens) == (on.prompt_tokens, on.completion_tokens)
    assert rep.cost == pytest.approx(on.cost / 2)  # the batch prices are half here
    # the job's record is gone once its answers are cached; a rerun submits nothing
    assert JobRecords(ResponseCache(str(tmp_path), "b")).all() == []
    again, rep2 = run_batch(task, reqs, ResponseCache(str(tmp_path), "b"), parse_criteria)
    assert rep2.cache_hits == 60 and fresh.call_count(route="batches") == 1
    assert _rows(again) == [(*row[:5], None) for row in _rows(online)]


def test_embeddings_in_batch_mode_equal_online(fresh, tmp_path):
    texts = [f"how do I sort a list {i} in python" for i in range(70)] + ["dup", "dup"]
    task = _task(fresh, model="sim-embed-large")
    online, _ = embed_texts(task, texts, ResponseCache(str(tmp_path), "on"), batch_size=16)
    calls = fresh.call_count(route="embeddings")
    batched, rep = embed_texts(
        replace(task, mode="batch"), texts, ResponseCache(str(tmp_path), "b"), batch_size=16
    )
    np.testing.assert_array_equal(batched, online)
    assert fresh.call_count(route="embeddings") == calls  # nothing online in batch mode
    assert (rep.batch_requests, rep.batches_submitted, rep.calls) == (71, 1, 0)


@pytest.mark.parametrize(
    ("faults", "jobs"),
    [
        (Faults(batch_error_rate=0.2, seed=1), 1),  # errored lines: a few, asked online
        (Faults(batch_missing_rate=0.2, seed=2), 1),  # lines in neither file: the same
        (Faults(batch_expire=1.0, batch_expire_done=0.5, seed=3), 2),  # 150 left: a 2nd job
        (Faults(rate_garbage=0.1, rate_500=0.05, seed=4), 1),  # the calls' faults, in lines
    ],
    ids=["errored-lines", "missing-lines", "expired-jobs", "garbage-and-500"],
)
def test_a_jobs_faults_lose_nothing_and_every_item_is_counted(fresh, tmp_path, faults, jobs):
    reqs = _reqs(300, dupes=10, tag=f" {faults.seed}")
    expected, _ = run_batch(_task(fresh), reqs, ResponseCache(str(tmp_path), "on"), parse_criteria)
    fresh.reset_counts()
    fresh.set_faults(faults)
    cache = ResponseCache(str(tmp_path), "b")
    results, rep = run_batch(_task(fresh, mode="batch"), reqs, cache, parse_criteria)
    fresh.set_faults(Faults())
    assert [r.item_id for r in results] == [r.item_id for r in reqs]  # one result per item
    assert sum(rep.statuses.values()) == rep.items == 310
    assert rep.batches_submitted == jobs == fresh.call_count(route="batches", status=200)
    # every distinct request answered by a job or asked online (a 500 online is retried
    # by the client: more attempts than calls), none lost
    online_calls = fresh.call_count(route="chat/completions")
    assert rep.calls <= online_calls and rep.batch_requests + rep.calls >= 300
    lost = sum(r.status != "ok" for r in results)
    if faults.rate_garbage:  # a garbage answer asked again once, as online mode does
        assert rep.statuses["failed"] == 0 and lost == rep.statuses["parse_failed"] <= 3
    else:  # every failure of a job was asked again: the rows are online mode's
        assert rep.statuses == {"ok": 310, "parse_failed": 0, "failed": 0}
        assert _rows(results) == _rows(expected) and online_calls > 0
    assert JobRecords(cache).all() == []


def test_a_killed_run_resumes_its_job_without_submitting_again(fresh, tmp_path):
    """SIGKILL as soon as the job exists (its record may or may not name it yet: written
    before the upload, named after the creation): the rerun finds the same job, by its
    record or by the request set in its metadata; the arena saw one submission."""
    fresh.set_faults(Faults(batch_hold=True))  # the job stays in flight until released
    root = tmp_path / "cache"
    cmd = [sys.executable, "-m", "arena_assets_tests.batch_kill_child", fresh.base_url, str(root)]
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert fresh.batches.wait_created(1, timeout=60), "the child never submitted its job"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    assert len(JobRecords(ResponseCache(str(root), "kill")).all()) == 1  # before the upload
    assert child.returncode == -signal.SIGKILL
    fresh.set_faults(Faults())  # the job may end now
    task = _task(fresh, mode="batch")
    _, rep = run_batch(task, child_requests(), ResponseCache(str(root), "kill"), parse_criteria)
    assert rep.statuses["ok"] == 40 and (rep.batches_resumed, rep.batches_submitted) == (1, 0)
    assert fresh.call_count(route="batches") == 1 and fresh.batches.created == 1
    assert JobRecords(ResponseCache(str(root), "kill")).all() == []


def test_a_record_written_before_its_job_was_created_finds_the_job(fresh, tmp_path):
    """A kill between the record and the job's creation: the job made is found by the
    request set in its metadata; a job never made is submitted then, once."""
    task = _task(fresh, mode="batch")
    reqs = _reqs(12, tag=" meta")
    cache = ResponseCache(str(tmp_path), "m")
    keys = [_key(task, r) for r in reqs]
    name = request_set(task.base_url, task.model, "/v1/chat/completions", keys)
    JobRecords(cache).write(
        JobRecord(name, task.base_url, task.model, "/v1/chat/completions", keys)
    )
    import openai

    from arena_assets.llm.batch_files import request_line
    from arena_assets.llm.online import chat_body

    client = openai.OpenAI(base_url=fresh.base_url, api_key="x")
    data = b"\n".join(
        request_line(k, "/v1/chat/completions", chat_body(task, r.messages))
        for k, r in zip(keys, reqs)
    )
    f = client.files.create(file=("in.jsonl", data), purpose="batch")
    client.batches.create(
        input_file_id=f.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={METADATA_KEY: name},
    )
    _, rep = run_batch(task, reqs, cache, parse_criteria)
    assert rep.statuses["ok"] == 12 and (rep.batches_resumed, rep.batches_submitted) == (1, 0)
    assert fresh.batches.created == 1
    # a record whose job was never created: submitted anew, once
    other = _reqs(5, tag=" never")
    keys = [_key(task, r) for r in other]
    name = request_set(task.base_url, task.model, "/v1/chat/completions", keys)
    JobRecords(cache).write(
        JobRecord(name, task.base_url, task.model, "/v1/chat/completions", keys)
    )
    _, rep = run_batch(task, other, cache, parse_criteria)
    assert rep.statuses["ok"] == 5 and (rep.batches_resumed, rep.batches_submitted) == (0, 1)
    assert fresh.batches.created == 2 and JobRecords(cache).all() == []


def test_a_run_that_stops_waiting_leaves_its_job_to_the_next(fresh, tmp_path):
    fresh.set_faults(Faults(batch_hold=True))
    task = _task(fresh, mode="batch", batch_wait_s=0.2)
    reqs = _reqs(8, tag=" wait")
    with pytest.raises(BatchesPending, match="stays recorded"):
        run_batch(task, reqs, ResponseCache(str(tmp_path), "w"), parse_criteria)
    assert len(JobRecords(ResponseCache(str(tmp_path), "w")).all()) == 1
    fresh.set_faults(Faults())
    _, rep = run_batch(task, reqs, ResponseCache(str(tmp_path), "w"), parse_criteria)
    assert rep.statuses["ok"] == 8 and rep.batches_resumed == 1 and fresh.batches.created == 1


def test_a_job_over_the_budget_is_not_submitted(fresh, tmp_path):
    task = _task(fresh, mode="batch")
    with spending(0.0001, "labels 2024-01"), pytest.raises(BudgetExceeded, match="at least"):
        run_batch(task, _reqs(50, tag=" budget"), ResponseCache(str(tmp_path), "x"), parse_criteria)
    assert fresh.batches.created == 0
    with spending(1.0, "labels 2024-01") as held:
        _, rep = run_batch(task, _reqs(50, tag=" budget"), ResponseCache(str(tmp_path), "x"), parse_criteria)  # fmt: skip
    assert held.spent == pytest.approx(rep.cost) and held.reserved == 0 and held.in_flight == 0


def _key(task: LLMTask, req: LLMRequest) -> str:
    from arena_assets.llm.cache import request_key

    return request_key(task.model, req.messages, task.generation_params(), req.prompt_version)


def test_a_job_the_endpoint_refuses_fails_the_run_and_is_not_waited_for_again(fresh, tmp_path):
    """A job that fails whole (its file refused: here a line for another route) is an
    error naming the job and its reason; its record goes, so a rerun submits anew."""
    from arena_assets.llm.batch_files import request_line
    from arena_assets.llm.batch_jobs import run_jobs
    from arena_assets.llm.client import LLMEndpointError, make_client

    task = _task(fresh, mode="batch")
    cache = ResponseCache(str(tmp_path), "refused")
    line_of = lambda k: request_line(k, "/v1/embeddings", {"model": task.model, "input": k})
    with pytest.raises(LLMEndpointError, match=r"refused batch .* invalid_request"):
        run_jobs(task, "/v1/chat/completions", ["a", "b"], line_of, cache, make_client(task),
                 lambda job, got: 0.0, what="refused")  # fmt: skip
    assert fresh.batches.created == 1 and JobRecords(cache).all() == []


def test_batch_prices_default_to_half_at_openai_and_to_the_online_ones_elsewhere():
    from arena_assets.defs.llm_resources import LLMTaskResource

    prices = dict(price_input_per_1m=2.0, price_output_per_1m=8.0)
    at_openai = LLMTask("gpt-x", "https://api.openai.com/v1", mode="batch", **prices)
    assert at_openai.batch_prices() == (1.0, 4.0) and at_openai.cost(1e6, 1e6) == 5.0
    assert at_openai.online().cost(1e6, 1e6) == 10.0  # a re-ask online: the online price
    assert LLMTask("m", "http://gpu-box:8000/v1", **prices).batch_prices() == (2.0, 8.0)
    set_ = LLMTask("m", "https://api.openai.com/v1", price_input_per_1m_batch=0.3, **prices)
    assert set_.batch_prices() == (0.3, 4.0)  # the one set; the other half at OpenAI
    reward = LLMTask("r", "https://api.openai.com/v1", batchable=False, **prices)
    assert reward.batch_prices() == (2.0, 8.0)
    with pytest.raises(ValueError, match="no Batch-API form"):
        replace(reward, mode="batch")
    resource = LLMTaskResource(model="m", base_url="http://x/v1", env_prefix="JUDGE", mode="later")
    with pytest.raises(ValueError, match="ARENA_JUDGE_MODE must be one of online, batch"):
        resource.task()
    bad = LLMTaskResource(model="m", base_url="http://x/v1", env_prefix="JUDGE", mode="batch",
                          price_input_per_1m_batch="half")  # fmt: skip
    with pytest.raises(ValueError, match="ARENA_JUDGE_PRICE_INPUT_PER_1M_BATCH must be a number"):
        bad.task()
    ok = LLMTaskResource(model="m", base_url="http://x/v1", env_prefix="JUDGE", mode="batch")
    task = ok.task()
    assert (task.mode, task.setting, task.batch_poll_s, task.batch_wait_s) == ("batch", "JUDGE", 30.0, None)  # fmt: skip


def test_a_job_cancelled_by_an_operator_is_collected_and_what_it_left_asked_again(fresh, tmp_path):
    """Cancelled at the endpoint while the run waits (an operator's dashboard): the run
    collects what the job answered, asks the rest, and loses nothing."""
    import threading

    import openai

    fresh.set_faults(Faults(batch_hold=True))
    task = _task(fresh, mode="batch")
    reqs = _reqs(30, tag=" cancel")
    out: dict = {}

    def ask() -> None:
        out["results"], out["report"] = run_batch(
            task, reqs, ResponseCache(str(tmp_path), "c"), parse_criteria
        )

    client = openai.OpenAI(base_url=fresh.base_url, api_key="x")
    earlier = {
        j.id for j in client.batches.list()
    }  # the session's endpoint keeps other tests' jobs
    run = threading.Thread(target=ask)
    run.start()
    assert fresh.batches.wait_created(1, timeout=30)
    (job,) = [j for j in client.batches.list() if j.id not in earlier]
    assert client.batches.cancel(job.id).status in ("cancelling", "cancelled")
    run.join(timeout=60)
    assert not run.is_alive()
    assert client.batches.retrieve(job.id).status == "cancelled"
    rep = out["report"]
    assert rep.statuses == {"ok": 30, "parse_failed": 0, "failed": 0}
    assert rep.batch_requests + rep.calls == 30 and fresh.batches.created == 1
