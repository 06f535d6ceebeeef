"""Embeddings through an OpenAI-compatible ``/v1/embeddings`` route, cached like chat calls.

Texts are sent in batches of ``batch_size`` over ``task.max_concurrency`` threads; each
vector is cached under a key of (model, text, ``EMBED_VERSION``), so a rerun sends nothing.
Embedding is all-or-nothing (clustering needs every vector): a batch that still fails after
the client's retries raises, and the vectors already received stay cached for the rerun.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import openai

from arena_assets.llm.batch import BatchReport
from arena_assets.llm.cache import ResponseCache, request_key
from arena_assets.llm.client import LLMEndpointError, endpoint_error, make_client, one_core, preflight
from arena_assets.llm.config import LLMTask
from arena_assets.llm.plan import plan_embeddings, recording

EMBED_VERSION = "embed-v1"


def embed_texts(task: LLMTask, texts: Sequence[str], cache: ResponseCache, *,
                batch_size: int = 64) -> tuple[np.ndarray, BatchReport]:
    """float32 matrix (len(texts) x dim), rows L2-normalised, in the order of ``texts``."""
    report = BatchReport(model=task.model, base_url=task.base_url, items=len(texts))
    keys = [request_key(task.model, t, {}, EMBED_VERSION) for t in texts]
    if (plans := recording()) is not None:  # llm.plan.planning(): count, do not call
        plans.append(plan_embeddings(task, keys, texts, cache, batch_size))
        return np.zeros((len(texts), 1), dtype=np.float32), report
    vectors: dict[str, list[float]] = {}
    for k in dict.fromkeys(keys):
        hit = cache.get(k)
        if hit is not None:
            vectors[k] = hit["embedding"]
    report.unique_requests = len(set(keys))
    report.cache_hits = len(vectors)
    todo = list(dict.fromkeys(k for k in keys if k not in vectors))
    text_of = dict(zip(keys, texts))
    lock = threading.Lock()
    if todo:
        client = make_client(task)
        preflight(task, client)

        def work(batch: list[str]) -> None:
            try:
                resp = client.embeddings.create(model=task.model, input=[text_of[k] for k in batch])
            except openai.APIError as exc:
                raise endpoint_error(task, exc) or LLMEndpointError(
                    f"embedding failed at {task.base_url} after retries: {exc}") from exc
            if len(resp.data) != len(batch):
                raise LLMEndpointError(f"{task.base_url} returned {len(resp.data)} embeddings for {len(batch)} inputs")
            tokens = resp.usage.prompt_tokens if resp.usage else 0
            for k, item in zip(batch, sorted(resp.data, key=lambda d: d.index)):
                vectors[k] = item.embedding
                cache.put(k, model=task.model, prompt_version=EMBED_VERSION, embedding=item.embedding)
            with lock:
                report.calls += 1
                report.prompt_tokens += tokens
                report.cost += task.cost(tokens, 0)

        batches = [todo[i:i + batch_size] for i in range(0, len(todo), batch_size)]
        try:
            with ThreadPoolExecutor(max_workers=task.max_concurrency, initializer=one_core()) as pool:
                list(pool.map(work, batches))  # re-raises the first failure
        finally:
            cache.flush()
        cache.settle()
    matrix = np.asarray([vectors[k] for k in keys], dtype=np.float32).reshape(len(keys), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    report.statuses["ok"] = len(keys)
    return matrix / np.where(norms == 0, 1, norms), report
