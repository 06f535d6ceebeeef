"""Run many chat requests through one LLM task: cached, concurrent, every item accounted for.

``run_batch(task, requests, cache, parse)`` returns one ``LLMResult`` per request, in
order, each ``ok`` (parsed value), ``parse_failed`` (the answer is kept, nothing guessed)
or ``failed`` (the error after the client's retries), plus a ``BatchReport`` with calls,
cache hits, tokens and estimated cost. Identical requests in one batch cost one call.

How the requests the cache does not answer are asked is the task's mode: ``online``, one
call each over a pool of ``max_concurrency`` workers (``llm.online``); ``batch``, as
Batch-API jobs (``llm.batch_api``: uploaded, waited for, collected, their failures asked
again). Either way the same parser decides, the same cache is filled, and the results are
the same rows: a stage does not know which mode answered it.

What is cached: answers that ``parse`` accepts (``ok``), and only those: a rerun costs zero
calls for them and reproduces them exactly. Garbage, empty or truncated answers
(``parse_failed``) and ``failed`` calls are not cached, so the next run asks again (against
a healthy endpoint they fill in); ``parse`` is the hook that decides, whatever the task's
format. A cached answer that ``parse`` no longer accepts (a cache written before this rule,
or a stricter parser) counts as a miss and is asked again. Errors no retry can fix
(unreachable, 401, 403, 404) stop the batch with ``LLMEndpointError``; the preflight raises
them before the first call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import openai

from arena_assets.llm.ahead import ahead_run
from arena_assets.llm.budget import batch_guard
from arena_assets.llm.cache import ResponseCache, request_key
from arena_assets.llm.client import LLMEndpointError, make_client, preflight
from arena_assets.llm.concurrency import BatchCancelled, Halt, concurrently, endpoint_slots
from arena_assets.llm.config import LLMTask
from arena_assets.llm.keylog import record_keys
from arena_assets.llm.offline import offline_run
from arena_assets.llm.online import ask_online, billed, chat_body, post_chat, worst_output
from arena_assets.llm.plan import input_scale, plan_requests, recording
from arena_assets.llm.results import (
    STATUSES,
    BatchReport,
    LLMRequest,
    LLMResult,
    Progress,
    ProgressFn,
    parsed_result,
)


def run_batch(
    task: LLMTask,
    requests: Sequence[LLMRequest],
    cache: ResponseCache,
    parse: Callable[[str], Any],
    *,
    progress: ProgressFn | None = None,
    progress_every: int | None = None,
    client: openai.OpenAI | None = None,
) -> tuple[list[LLMResult], BatchReport]:
    """Answer every request (see module docstring). ``parse`` raises on a bad answer."""
    ids = [r.item_id for r in requests]
    if len(set(ids)) != len(ids):
        raise ValueError("run_batch: item_id values must be unique within a batch")
    if (plans := recording()) is not None:  # llm.plan.planning(): count, do not call
        what = ", ".join(dict.fromkeys(r.prompt_version for r in requests)) or "empty"
        plans.append(plan_requests(task, requests, cache, what, parse))
        if (offline := offline_run()) is not None:  # export-batch / import-batch (llm.offline)
            offline.chat(task, requests, cache, parse)
        if task.batch and (ahead := ahead_run()) is not None:  # jobs submitted ahead (llm.ahead)
            ahead.chat(task, requests, cache, parse)
        return (
            [LLMResult(r.item_id, "failed", error="planned") for r in requests],
            BatchReport(model=task.model, base_url=task.base_url, items=len(requests)),
        )
    report = BatchReport(
        model=task.model,
        base_url=task.base_url,
        items=len(requests),
        started_at=time.time(),
        mode=task.mode,
    )
    started = time.monotonic()
    params = task.generation_params()
    keys = [request_key(task.model, r.messages, params, r.prompt_version) for r in requests]
    record_keys(cache.namespace, ids, keys)  # whose prompts these answers come from (llm.keylog)
    by_key: dict[str, LLMRequest] = {}
    for k, r in zip(keys, requests):
        by_key.setdefault(k, r)
    report.unique_requests = len(by_key)

    outcomes: dict[str, LLMResult] = {}
    for k in by_key:
        hit = cache.get(k)
        if hit is not None:
            cached = parsed_result(
                k,
                hit["content"],
                parse,
                hit["prompt_tokens"],
                hit["completion_tokens"],
                cached=True,
            )
            if cached.status == "ok":  # an answer parse no longer accepts is asked again
                cached.reasoning = hit.get("reasoning")
                outcomes[k] = cached
    report.cache_hits = len(outcomes)
    todo = [k for k in by_key if k not in outcomes]

    lock = threading.Lock()
    every = progress_every or max(1, len(by_key) // 20)

    def record(key: str, result: LLMResult) -> None:
        with lock:
            outcomes[key] = result
            if progress and (len(outcomes) % every == 0 or len(outcomes) == len(by_key)):
                progress(
                    Progress(
                        len(outcomes),
                        len(by_key),
                        report.calls + report.batch_requests,
                        time.monotonic() - started,
                        report.cache_hits,
                    )
                )

    guard = batch_guard(len(todo), len(by_key))  # the month's budget, when one is set (llm.budget)
    # under a budget, a call's worst case counts its input at the endpoint's billing where the
    # cache knows it (llm.plan.input_scale), never under the plan's count
    factor = (
        max(1.0, input_scale(task, cache, list({by_key[k].prompt_version for k in todo}))[0])
        if guard and todo
        else 1.0
    )
    if todo:
        client = client or make_client(task)
        preflight(task, client)  # raises LLMEndpointError before any call or output
        try:
            if task.batch:
                from arena_assets.llm.batch_api import answer_in_batches

                answer_in_batches(
                    task, todo, by_key, cache, parse, report, record, client=client, guard=guard
                )
            else:
                ask_online(
                    task,
                    todo,
                    by_key,
                    cache,
                    parse,
                    report,
                    record,
                    client=client,
                    guard=guard,
                    factor=factor,
                )
        finally:
            cache.flush()
        cache.settle()  # merges the small chunks once they pile up (llm.cache)
    elif progress:
        progress(
            Progress(len(outcomes), len(by_key), 0, time.monotonic() - started, report.cache_hits)
        )

    results = []
    for k, r in zip(keys, requests):
        o = outcomes[k]
        # the outcome itself for the request that asked it; a copy under each other item id
        # that shared its key (one object per item, not two: memory at 10^6 items)
        results.append(o if o.item_id == r.item_id else replace(o, item_id=r.item_id))
        report.statuses[o.status] += 1
    report.elapsed_s = time.monotonic() - started
    return results, report


__all__ = [
    "STATUSES",
    "BatchCancelled",
    "BatchReport",
    "Halt",
    "LLMEndpointError",
    "LLMRequest",
    "LLMResult",
    "Progress",
    "ProgressFn",
    "billed",
    "chat_body",
    "concurrently",
    "endpoint_slots",
    "post_chat",
    "run_batch",
    "worst_output",
]
