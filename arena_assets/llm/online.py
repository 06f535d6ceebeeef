"""Requests answered one call at a time: a fixed pool of workers, ``task.max_concurrency``
of them, each sending one chat completion after another through the ``openai`` client
(its retries), an unparsed answer asked again ``task.parse_retries`` times, every answer
that parses cached as it arrives. ``run_batch`` (``llm.batch``) uses it for a task in online
mode, and a batch run (``llm.batch_api``) for its re-asks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import orjson

from arena_assets.llm.budget import BatchGuard, Held
from arena_assets.llm.cache import ResponseCache
from arena_assets.llm.client import calls_in_flight, endpoint_error, one_core
from arena_assets.llm.concurrency import BatchCancelled, Halt, Halted, endpoint_slots
from arena_assets.llm.config import LLMTask
from arena_assets.llm.results import BatchReport, LLMRequest, LLMResult, reply_result
from arena_assets.llm.tokens import chat_prompt_tokens

# (cache key, its result): called once per request asked, from the workers' threads
Record = Callable[[str, LLMResult], None]


def chat_body(task: LLMTask, messages: list[dict]) -> dict:
    """The JSON body of one chat completion: what ``chat.completions.create`` would send,
    extra parameters merged in as its ``extra_body`` would."""
    return {
        "model": task.model,
        "messages": messages,
        "temperature": task.temperature,
        "max_tokens": task.max_tokens,
        **task.extra_params,
    }


def post_chat(client: openai.OpenAI, body: dict) -> dict:
    """One chat completion through the ``openai`` client's own ``post`` (its retries,
    backoff, auth and error types), the reply decoded by orjson.

    Why not ``chat.completions.create``: it walks every message through the SDK's
    TypedDict transform (~40 % of its CPU in a profile) and builds pydantic models of the
    reply: ~0.9 ms of CPU a call against ~0.5 ms this way, one call at a time
    (``benchmarks/bench_llm_client.py``), while a real endpoint at 300 ms latency and
    concurrency 64 asks ~210 calls a second of the client. Raises ``ValueError`` when the
    reply is not a JSON object.
    """
    # the client's default headers say application/json; orjson writes the body faster
    # than the SDK's json.dumps
    resp = client.post("/chat/completions", cast_to=httpx.Response, content=orjson.dumps(body))
    data = orjson.loads(resp.content)  # orjson.JSONDecodeError is a ValueError
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    return data


def cache_answer(
    task: LLMTask, cache: ResponseCache, key: str, req: LLMRequest, result: LLMResult
) -> None:
    """An answer that parsed, into the cache, with the plan's count of the request's input
    beside the billed one (~50 us): their ratio calibrates the next plans to the endpoint's
    tokenizer (``llm.plan.input_scale``)."""
    cache.put(
        key,
        model=task.model,
        prompt_version=req.prompt_version,
        content=result.content,
        reasoning=result.reasoning,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        counted_prompt_tokens=chat_prompt_tokens(req.messages),
    )


def ask_online(
    task: LLMTask,
    keys: Sequence[str],
    by_key: dict[str, LLMRequest],
    cache: ResponseCache,
    parse: Callable[[str], Any],
    report: BatchReport,
    record: Record,
    *,
    client: openai.OpenAI,
    guard: BatchGuard | None = None,
    factor: float = 1.0,
) -> None:
    """Ask ``keys`` (``by_key``'s requests) one call each, ``task.max_concurrency`` at a
    time; answers that parse are cached, every result goes to ``record``. Call it in the
    batch's calling thread (its ``Halt`` reads that thread's context). Raises the first
    fatal error (``LLMEndpointError``, ``BudgetExceeded``), after the calls in flight."""
    if not keys:
        return
    lock = threading.Lock()
    halted = Halt()  # made here, in the caller's context (concurrently's shared event)

    def work(key: str) -> None:
        if halted():
            return
        try:
            result = ask_one(task, client, by_key[key], parse, report, lock, halted, guard, factor)
        except Halted:  # stopped while waiting for the endpoint: no call made
            return
        if result.status == "ok":  # only what parses is cached (llm.batch's docstring)
            cache_answer(task, cache, key, by_key[key], result)
        record(key, result)

    # a fixed set of workers pulling keys, not a future per key: a production month's
    # batch has ~10^6 keys, and a stop reaches the workers without cancelling them all
    pending = iter(keys)
    take = threading.Lock()

    def worker() -> None:
        while not halted():
            with take:
                key = next(pending, None)
            if key is None:
                return
            try:
                work(key)
            except BaseException:
                halted.fail()
                raise

    try:
        with (
            calls_in_flight(),
            ThreadPoolExecutor(
                max_workers=task.max_concurrency,
                thread_name_prefix="llm",
                initializer=one_core(),
            ) as pool,
        ):
            workers = [pool.submit(worker) for _ in range(min(task.max_concurrency, len(keys)))]
    except BaseException:  # interrupted while waiting: the workers stop after their call
        halted.stop()
        raise
    failed = [f.exception() for f in workers if f.exception() is not None]
    if failed:
        raise failed[0]
    if halted.by_sibling:
        raise BatchCancelled(f"{task.model}: stopped, a batch asked at the same time failed")


def ask_one(
    task: LLMTask,
    client: openai.OpenAI,
    req: LLMRequest,
    parse: Callable[[str], Any],
    report: BatchReport,
    lock: threading.Lock,
    halted: Callable[[], bool] | None = None,
    guard: BatchGuard | None = None,
    factor: float = 1.0,
) -> LLMResult:
    """One request: sent, and sent again while its answer does not parse (up to
    ``task.parse_retries`` more times); the last result."""
    result = LLMResult(req.item_id, "failed")
    try:
        messages = req.prepare(req.messages) if req.prepare else req.messages
    except (OSError, ValueError) as exc:
        return LLMResult(req.item_id, "failed", error=f"{type(exc).__name__}: {exc}")
    body = chat_body(task, messages)
    slots = endpoint_slots(task)
    # under a budget (llm.budget): the most this call can cost, held while it is in flight
    worst = task.cost(factor * chat_prompt_tokens(messages), worst_output(task)) if guard else 0.0
    for _ in range(1 + task.parse_retries):
        try:
            with slots:  # the endpoint's concurrency, shared with batches asked at the same time
                if halted is not None and halted():  # stopped while waiting for the slot
                    raise Halted
                # over the budget: not sent, the batch stops; stopped while it waited for
                # room: not sent either (Halted)
                with Held(guard, worst, halted) as call:
                    try:
                        data = post_chat(client, body)
                    except openai.APIError as exc:  # a refused key or model fails the batch: halted
                        # before the settle wakes the calls waiting for room, so none is sent
                        if halted is not None and endpoint_error(task, exc) is not None:
                            halted.fail()
                        raise
                    if guard:  # without a budget nothing more on this path
                        call.cost = billed(task, data, worst)
        except openai.APIError as exc:
            fatal = endpoint_error(task, exc)
            if fatal is not None:
                raise fatal from exc
            with lock:
                report.calls += 1
            return LLMResult(req.item_id, "failed", error=f"{type(exc).__name__}: {exc}")
        except ValueError as exc:  # a cut or garbled HTTP body: not cached, asked next run
            with lock:
                report.calls += 1
            return LLMResult(req.item_id, "failed", error=f"malformed reply: {exc}"[:300])
        result = reply_result(task, req.item_id, data, parse)
        with lock:
            report.calls += 1
            report.prompt_tokens += result.prompt_tokens
            report.completion_tokens += result.completion_tokens
            report.cost += result.cost
        if result.status == "ok":
            break
    return result


def billed(task: LLMTask, data: dict, worst: float) -> float:
    """What a reply cost by its ``usage``; one without usage counts at its worst case."""
    usage = data.get("usage")
    if not isinstance(usage, dict) or not ({"prompt_tokens", "completion_tokens"} & usage.keys()):
        return worst
    return task.cost(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))


def worst_output(task: LLMTask) -> int:
    """The most output tokens one call may be billed: ``max_completion_tokens`` where a
    reasoning model is given it (thinking included), else ``max_tokens``."""
    return int(task.extra_params.get("max_completion_tokens") or task.max_tokens or 0)
