"""Embeddings through an OpenAI-compatible ``/v1/embeddings`` route, cached like chat calls.

Texts are sent in batches of ``batch_size`` over ``task.max_concurrency`` threads; each
vector is cached under a key of (model, text, ``EMBED_VERSION``), so a rerun sends nothing.
Embedding is all-or-nothing (clustering needs every vector): a batch that still fails after
the client's retries raises, and the vectors already received stay cached for the rerun.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import openai
import orjson

from arena_assets.llm.batch import BatchReport
from arena_assets.llm.budget import Held, batch_guard
from arena_assets.llm.cache import ResponseCache, answer_row, text_request_keys
from arena_assets.llm.client import (
    LLMEndpointError,
    calls_in_flight,
    endpoint_error,
    make_client,
    one_core,
    preflight,
)
from arena_assets.llm.concurrency import BatchCancelled, Halt, Halted
from arena_assets.llm.config import LLMTask
from arena_assets.llm.keylog import record_keys
from arena_assets.llm.plan import plan_embeddings, recording
from arena_assets.llm.tokens import text_tokens_many

EMBED_VERSION = "embed-v1"
EMBEDDINGS_NAMESPACE = "embeddings"  # the cache namespace of every embedding stage
# vectors per cache chunk: a chunk per call (64 vectors) was a Parquet file written under
# the cache's lock per call, ~20 ms each, 3,688 of them in a 500,000-conversation month's
# prompt_embeddings; a killed run loses at most this many vectors, cheap to ask again
EMBED_CACHE_CHUNK = 1024


def embeddings_cache(root: str, storage_options: dict | None = None) -> ResponseCache:
    """The embeddings' cache under ``root``: one namespace for every embedding stage (the
    clusters and the P2L features reuse each other's vectors), chunks of EMBED_CACHE_CHUNK."""
    return ResponseCache(root, EMBEDDINGS_NAMESPACE, EMBED_CACHE_CHUNK, storage_options or {})


def embed_texts(
    task: LLMTask, texts: Sequence[str], cache: ResponseCache, *, batch_size: int = 64
) -> tuple[np.ndarray, BatchReport]:
    """float32 matrix (len(texts) x dim), rows L2-normalised, in the order of ``texts``."""
    report = BatchReport(model=task.model, base_url=task.base_url, items=len(texts))
    keys = text_request_keys(task.model, list(texts), {}, EMBED_VERSION)
    if (plans := recording()) is not None:  # llm.plan.planning(): count, do not call
        plans.append(plan_embeddings(task, keys, texts, cache, batch_size))
        return np.zeros((len(texts), 1), dtype=np.float32), report
    report.started_at, started = time.time(), time.monotonic()
    # item ids are the texts' positions: the caller knows which prompt each one is
    record_keys(cache.namespace, [str(i) for i in range(len(keys))], keys)
    # one row per distinct key (in first-seen order), filled from the cache and by each
    # call's reply matrix; a key's texts are all its row. Why not a dict of vectors stacked
    # at the end: stacking a production month's 236,000 rows took ~0.3 s after the last call
    row_of = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    hits = {k: v for k, v in cache.values(row_of, "embedding").items() if v is not None}
    if (
        len(sizes := {len(v) for v in hits.values()}) > 1
    ):  # answers of two embedders under one model name
        raise LLMEndpointError(
            f"{cache.dir} holds {task.model} embeddings of {len(sizes)} sizes "
            f"({', '.join(map(str, sorted(sizes)))}): clear it and embed again"
        )
    report.unique_requests = len(row_of)
    report.cache_hits = len(hits)
    todo = [k for k in row_of if k not in hits]
    text_of = dict(zip(keys, texts))
    lock = threading.Lock()
    replies: list[tuple[list[int], np.ndarray]] = []  # (rows, the call's vectors)
    # the vectors' size, once known, and where it was learnt
    dim = [len(next(iter(hits.values()))), "the cached vectors"] if hits else []
    if todo:
        client = make_client(task)
        preflight(task, client)

        guard = batch_guard(-(-len(todo) // batch_size))  # the month's budget, if set (llm.budget)
        halted = Halt()  # a failed call: the calls waiting for budget room are not sent

        def work(batch: list[str]) -> None:
            if halted():
                return
            try:
                ask(batch)
            except Halted:
                return
            except BaseException:
                halted.fail()
                raise

        def ask(batch: list[str]) -> None:
            sent = [text_of[k] for k in batch]
            worst = task.cost(sum(text_tokens_many(sent)), 0) if guard else 0.0
            try:
                with Held(
                    guard, worst, halted
                ) as call:  # over the budget: not sent, nor any later batch
                    try:
                        got, tokens = post_embeddings(client, task.model, sent)
                    except BaseException:  # the batch fails: halted before the settle wakes the
                        halted.fail()  # calls waiting for room, so none of them is sent
                        raise
                    call.cost = (
                        task.cost(tokens, 0) if tokens else worst
                    )  # no usage: the worst case
            except openai.APIError as exc:
                raise endpoint_error(task, exc) or LLMEndpointError(
                    f"embedding failed at {task.base_url} after retries: {exc}"
                ) from exc
            except (ValueError, KeyError, TypeError) as exc:
                raise LLMEndpointError(
                    f"{task.base_url} returned a malformed embeddings reply: {exc}"
                ) from exc
            if len(got) != len(batch):
                raise LLMEndpointError(
                    f"{task.base_url} returned {len(got)} embeddings for {len(batch)} inputs"
                )
            with lock:  # one size for the batch, cached vectors included: checked before caching
                if not dim:
                    dim.extend([got.shape[1], "this run's first reply"])
                if got.shape[1] != dim[0]:
                    raise LLMEndpointError(
                        f"{task.base_url} returned {task.model} embeddings of {got.shape[1]} dimensions where "
                        f"{dim[1]} have {dim[0]}; nothing of this reply was cached (clear {cache.dir} "
                        "if the cached ones are the wrong ones)"
                    )
            cache.put_many(
                [
                    answer_row(k, model=task.model, prompt_version=EMBED_VERSION, embedding=vector)
                    for k, vector in zip(batch, got)
                ]
            )
            with lock:
                replies.append(([row_of[k] for k in batch], got))
                report.calls += 1
                report.prompt_tokens += tokens
                report.cost += task.cost(tokens, 0)

        batches = [todo[i : i + batch_size] for i in range(0, len(todo), batch_size)]
        try:
            with (
                calls_in_flight(),
                ThreadPoolExecutor(
                    max_workers=task.max_concurrency, initializer=one_core()
                ) as pool,
            ):
                list(pool.map(work, batches))  # re-raises the first failure
            if (
                halted()
            ):  # stopped from outside (a sibling batch): vectors missing, nothing returned
                raise BatchCancelled(
                    f"{task.model}: stopped, a batch asked at the same time failed"
                )
        finally:
            cache.flush()
        cache.settle()
    matrix = np.zeros((len(row_of), dim[0] if dim else 0), dtype=np.float32)
    for k, vector in hits.items():
        matrix[row_of[k]] = vector
    for rows, got in replies:
        matrix[rows] = got
    if len(row_of) < len(keys):  # a text asked twice: its row repeated
        matrix = matrix[[row_of[k] for k in keys]]
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]
    matrix /= np.where(norms == 0, 1, norms)
    report.statuses["ok"] = len(keys)
    report.elapsed_s = time.monotonic() - started
    return matrix, report


def post_embeddings(client: openai.OpenAI, model: str, texts: list[str]) -> tuple[np.ndarray, int]:
    """One ``/embeddings`` call through the ``openai`` client's own ``post`` (its retries,
    auth and error types): the vectors in input order (a float32 row each) and the prompt
    tokens. Asks base64, as the SDK's ``embeddings.create`` does, and reads a float list
    too (servers that ignore the format). Why not ``embeddings.create``: it builds a
    pydantic model per vector and walks the input through its TypedDict transform, ~40 %
    of a 500,000-conversation month's embedding step in a profile."""
    body = {"model": model, "input": texts, "encoding_format": "base64"}
    resp = client.post("/embeddings", cast_to=httpx.Response, content=orjson.dumps(body))
    data = orjson.loads(resp.content)
    items = sorted(data["data"], key=lambda d: d["index"])
    vectors = [
        np.frombuffer(base64.b64decode(e), dtype="<f4")
        if isinstance(e, str)
        else np.asarray(e, np.float32)
        for e in (item["embedding"] for item in items)
    ]
    if any(v.ndim != 1 for v in vectors):  # null, a number, a vector per token
        raise ValueError("an embedding that is not one list of numbers")
    if len(sizes := {len(v) for v in vectors}) > 1:
        raise ValueError(f"vectors of {len(sizes)} sizes in one reply")
    matrix = (
        np.stack(vectors).astype(np.float32, copy=False)
        if vectors
        else np.zeros((0, 0), np.float32)
    )
    return matrix, int((data.get("usage") or {}).get("prompt_tokens") or 0)
