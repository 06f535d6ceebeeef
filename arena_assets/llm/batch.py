"""Run many chat requests through one LLM task: cached, concurrent, every item accounted for.

``run_batch(task, requests, cache, parse)`` returns one ``LLMResult`` per request, in
order, each ``ok`` (parsed value), ``parse_failed`` (the answer is kept, nothing guessed)
or ``failed`` (the error after the client's retries), plus a ``BatchReport`` with calls,
cache hits, tokens and estimated cost. Identical requests in one batch cost one call.

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import openai
import orjson

from arena_assets.llm.budget import BatchGuard, Held, batch_guard
from arena_assets.llm.cache import ResponseCache, request_key
from arena_assets.llm.client import (
    LLMEndpointError,
    calls_in_flight,
    endpoint_error,
    make_client,
    one_core,
    preflight,
)
from arena_assets.llm.concurrency import BatchCancelled, Halt, Halted, concurrently, endpoint_slots
from arena_assets.llm.config import LLMTask
from arena_assets.llm.keylog import record_keys
from arena_assets.llm.plan import input_scale, plan_requests, recording
from arena_assets.llm.tokens import chat_prompt_tokens

STATUSES = ("ok", "parse_failed", "failed")


@dataclass(frozen=True)
class LLMRequest:
    item_id: str  # the caller's id, unique in a batch
    messages: list[dict]  # what the cache key is made of
    prompt_version: str
    # builds the messages actually sent, just before the call (e.g. image references ->
    # data URLs read then, so a batch never holds every image at once); an OSError or
    # ValueError it raises fails that item with the reason, without a call
    prepare: Callable[[list[dict]], list[dict]] | None = field(default=None, compare=False)


@dataclass(slots=True)  # a production month's labels hold ~10^6 of them: ~0.3 KB less each
class LLMResult:
    item_id: str
    status: str  # one of STATUSES
    value: Any = None  # the parsed answer when ok
    content: str | None = None  # the raw answer (ok / parse_failed)
    reasoning: str | None = None  # a reasoning field of the reply (reasoning_content / reasoning)
    error: str | None = None  # parse or call error text
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cached: bool = False


@dataclass(frozen=True)
class Progress:
    done: int  # items finished, cache hits included
    total: int
    calls: int
    elapsed_s: float
    cached: int = 0  # of done, answered from the cache at the start

    @property
    def rate(self) -> float:  # items asked and finished per second (cache hits excluded)
        return (self.done - self.cached) / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        return (self.total - self.done) / self.rate if self.rate > 0 else None

    def __str__(self) -> str:
        eta = f"{self.eta_s:.0f}s" if self.eta_s is not None else "?"
        return (
            f"{self.done}/{self.total} items ({self.cached} cached), {self.calls} calls, "
            f"{self.rate:.1f}/s, ETA {eta}"
        )


@dataclass
class BatchReport:
    model: str
    base_url: str
    items: int = 0
    unique_requests: int = 0
    cache_hits: int = 0
    calls: int = 0  # HTTP requests that returned an answer or a final error
    statuses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    prompt_tokens: int = 0  # tokens of the calls made in this run (cache hits cost nothing)
    completion_tokens: int = 0
    cost: float = 0.0
    elapsed_s: float = 0.0
    # when the batch began (Unix seconds; 0 in a plan): it ran over [started_at, started_at
    # + elapsed_s], so the batches of a step asked at once can be told from one after another
    started_at: float = 0.0

    def as_metadata(self) -> dict:
        from arena_assets.llm.endpoints import public_base_url

        return {**self.__dict__, "base_url": public_base_url(self.base_url)}


ProgressFn = Callable[[Progress], None]


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
        return (
            [LLMResult(r.item_id, "failed", error="planned") for r in requests],
            BatchReport(model=task.model, base_url=task.base_url, items=len(requests)),
        )
    report = BatchReport(
        model=task.model, base_url=task.base_url, items=len(requests), started_at=time.time()
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
            cached = _parsed(
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
    halted = Halt()  # made here, in the caller's context (concurrently's shared event)
    every = progress_every or max(1, len(by_key) // 20)

    def tick() -> None:
        if progress and (len(outcomes) % every == 0 or len(outcomes) == len(by_key)):
            progress(
                Progress(
                    len(outcomes),
                    len(by_key),
                    report.calls,
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

        def work(key: str) -> None:
            if halted():
                return
            try:
                result = _ask(task, client, by_key[key], parse, report, lock, halted, guard, factor)
            except Halted:  # stopped while waiting for the endpoint: no call made
                return
            if result.status == "ok":  # only what parses: see the module docstring
                # beside the billed input, the plan's count of the request (~50 us): their
                # ratio calibrates the next plans to the endpoint's tokenizer (llm.plan)
                cache.put(
                    key,
                    model=task.model,
                    prompt_version=by_key[key].prompt_version,
                    content=result.content,
                    reasoning=result.reasoning,
                    prompt_tokens=result.prompt_tokens,
                    completion_tokens=result.completion_tokens,
                    counted_prompt_tokens=chat_prompt_tokens(by_key[key].messages),
                )
            with lock:
                outcomes[key] = result
                tick()

        # a fixed set of workers pulling keys, not a future per key: a production month's
        # batch has ~10^6 keys, and a stop reaches the workers without cancelling them all
        pending = iter(todo)
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
            try:
                with (
                    calls_in_flight(),
                    ThreadPoolExecutor(
                        max_workers=task.max_concurrency,
                        thread_name_prefix="llm",
                        initializer=one_core(),
                    ) as pool,
                ):
                    workers = [
                        pool.submit(worker) for _ in range(min(task.max_concurrency, len(todo)))
                    ]
            except BaseException:  # interrupted while waiting: the workers stop after their call
                halted.stop()
                raise
            failed = [f.exception() for f in workers if f.exception() is not None]
            if failed:
                raise failed[0]
            if halted.by_sibling:
                raise BatchCancelled(
                    f"{task.model}: stopped, a batch asked at the same time failed"
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


def _ask(
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
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        pt = int(usage.get("prompt_tokens") or 0)
        ct = int(usage.get("completion_tokens") or 0)
        choices = data.get("choices")
        first = (
            choices[0]
            if isinstance(choices, list) and choices and isinstance(choices[0], dict)
            else {}
        )
        message = first.get("message") if isinstance(first.get("message"), dict) else {}
        content = message.get("content")
        # vLLM / DeepSeek put thinking in reasoning_content, others in reasoning: kept apart
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        with lock:
            report.calls += 1
            report.prompt_tokens += pt
            report.completion_tokens += ct
            report.cost += task.cost(pt, ct)
        result = _parsed(
            req.item_id, content if isinstance(content, str) else None, parse, pt, ct, cached=False
        )
        result.cost = task.cost(pt, ct)
        result.reasoning = reasoning if isinstance(reasoning, str) else None
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


def _parsed(
    item_id: str,
    content: str | None,
    parse: Callable[[str], Any],
    pt: int,
    ct: int,
    *,
    cached: bool,
) -> LLMResult:
    if not content or not content.strip():
        return LLMResult(
            item_id,
            "parse_failed",
            content=content,
            error="empty answer",
            prompt_tokens=pt,
            completion_tokens=ct,
            cached=cached,
        )
    try:
        value = parse(content)
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        return LLMResult(
            item_id,
            "parse_failed",
            content=content,
            error=str(exc)[:300],
            prompt_tokens=pt,
            completion_tokens=ct,
            cached=cached,
        )
    return LLMResult(
        item_id,
        "ok",
        value=value,
        content=content,
        prompt_tokens=pt,
        completion_tokens=ct,
        cached=cached,
    )


__all__ = [
    "BatchCancelled",
    "BatchReport",
    "Halt",
    "LLMEndpointError",
    "LLMRequest",
    "LLMResult",
    "Progress",
    "concurrently",
    "endpoint_slots",
    "run_batch",
]
