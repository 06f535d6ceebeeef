"""What a batch's call phase does to the process around it: the garbage collector's full
passes leave out what existed before the calls (llm.client.calls_in_flight) until the last
batch running ends, and each batch says when it ran (BatchReport.started_at)."""

from __future__ import annotations

import gc
import threading
import time
from functools import partial

import pytest

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, concurrently, run_batch
from arena_assets.llm.client import calls_in_flight
from arena_assets_tests.labelling_server import LabellingServer


def _task(server: LabellingServer, model: str) -> LLMTask:
    return LLMTask(
        model=model, base_url=server.base_url, api_key="test-key", max_concurrency=3, timeout=10
    )


def _reqs(n: int, tag: str) -> list[LLMRequest]:
    return [
        LLMRequest(f"{tag}{i}", criteria_messages(f"Explain {tag} topic {i}"), CRITERIA_VERSION)
        for i in range(n)
    ]


def test_objects_are_frozen_while_any_batch_calls_and_thawed_after(tmp_path):
    assert gc.get_freeze_count() == 0
    seen: dict[str, list[tuple[float, int]]] = {"short": [], "long": []}
    lock = threading.Lock()

    def parse(tag: str, content: str):
        with lock:  # parse runs in the batch's call threads, during its calls
            seen[tag].append((time.time(), gc.get_freeze_count()))
        return parse_criteria(content)

    with LabellingServer(latency_s=0.02) as srv:
        before = time.time()
        (_, short), (_, long) = concurrently(
            [
                partial(
                    run_batch,
                    _task(srv, "labeler-strong"),
                    _reqs(2, "s"),
                    ResponseCache(str(tmp_path), "s"),
                    partial(parse, "short"),
                ),
                partial(
                    run_batch,
                    _task(srv, "labeler-cheap"),
                    _reqs(30, "l"),
                    ResponseCache(str(tmp_path), "l"),
                    partial(parse, "long"),
                ),
            ]
        )
        after = time.time()
    assert gc.get_freeze_count() == 0  # thawed: cyclic garbage from before is collectable again
    assert len(seen["short"]) == 2 and len(seen["long"]) == 30
    assert all(frozen > 0 for _, frozen in seen["short"] + seen["long"])
    short_end = short.started_at + short.elapsed_s
    # the short batch ended while the long one still called, and that kept the freeze
    assert any(t > short_end for t, _ in seen["long"])
    for report, calls in ((short, seen["short"]), (long, seen["long"])):
        assert before <= report.started_at <= min(t for t, _ in calls)
        assert max(t for t, _ in calls) <= report.started_at + report.elapsed_s <= after


def test_a_pool_that_raises_thaws_and_leaves_the_others_frozen():
    """An error raised through a call pool (an interruption, a failure inside it) still
    ends its freeze; a pool running beside it keeps its own until it ends."""
    with calls_in_flight():
        with pytest.raises(RuntimeError, match="a call failed"), calls_in_flight():
            raise RuntimeError("a call failed")
        assert gc.get_freeze_count() > 0  # the outer pool still calling
    assert gc.get_freeze_count() == 0
    with pytest.raises(KeyboardInterrupt), calls_in_flight():
        raise KeyboardInterrupt
    assert gc.get_freeze_count() == 0


def test_a_failed_batch_thaws_too(tmp_path):
    def parse(content: str):
        raise RuntimeError("a parser bug")  # not a parse failure: the batch fails

    with LabellingServer() as srv, pytest.raises(RuntimeError, match="a parser bug"):
        run_batch(
            _task(srv, "labeler-strong"),
            _reqs(3, "f"),
            ResponseCache(str(tmp_path), "f"),
            parse,
        )
    assert gc.get_freeze_count() == 0
