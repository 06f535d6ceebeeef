"""Embeddings as Batch-API jobs (``llm.batch_api.run_jobs``), for an embedding task in batch
mode: one text a request line (``custom_id`` = the text's cache key, so a job's answers fill
the same cache whoever asked them), batch rounds while they make headway, and what is left
handed back to ``embed_texts``, which asks it online. A vector is checked as an online
reply's is (one list of numbers, one size for the whole cache) before it is cached.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

import numpy as np
import openai

from arena_assets.llm.batch_api import MAX_ROUNDS, ONLINE_MIN, ONLINE_SHARE
from arena_assets.llm.batch_files import EMBEDDINGS_URL, JobRecord, request_line
from arena_assets.llm.batch_jobs import Answer, log, run_jobs
from arena_assets.llm.budget import BatchGuard
from arena_assets.llm.cache import ResponseCache, answer_row
from arena_assets.llm.client import LLMEndpointError
from arena_assets.llm.concurrency import Halt
from arena_assets.llm.config import LLMTask
from arena_assets.llm.results import BatchReport
from arena_assets.llm.tokens import text_tokens_many

EMBED_VERSION = "embed-v1"


def decode_embeddings(data: dict) -> tuple[np.ndarray, int]:
    """An embeddings reply's vectors in input order (a float32 row each; base64 or float
    lists) and its prompt tokens. Raises ValueError (KeyError, TypeError) for a reply that
    is not one vector of one size per input."""
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


def embed_in_batches(
    task: LLMTask,
    todo: Sequence[str],
    text_of: dict[str, str],
    cache: ResponseCache,
    client: openai.OpenAI,
    report: BatchReport,
    dim: list,
    guard: BatchGuard | None = None,
) -> dict[str, np.ndarray]:
    """Vectors of ``todo`` (cache keys of ``text_of``'s texts) from batch rounds, cached as
    they arrive; ``dim``: ``embed_texts``' [size, where it was learnt] (empty until known).
    What no round answered is absent: the caller asks it online."""
    halted = Halt()
    vectors: dict[str, np.ndarray] = {}
    what = f"{task.model} embeddings"

    def line_of(key: str) -> bytes:
        body = {"model": task.model, "input": text_of[key], "encoding_format": "base64"}
        return request_line(key, EMBEDDINGS_URL, body)

    def estimate(keys: list[str]) -> tuple[float, float]:
        cost = task.cost(sum(text_tokens_many([text_of[k] for k in keys])), 0)
        return cost, cost

    def collect(job: JobRecord, got: dict[str, Answer]) -> float:
        rows, cost = [], 0.0
        for key, answer in got.items():
            if key not in wanted or answer.body is None:
                continue
            try:
                matrix, tokens = decode_embeddings(answer.body)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning(f"{what}: batch {job.batch_id}: a malformed reply ({exc}): asked again")
                continue
            if matrix.shape[0] != 1:
                continue  # not one vector for its one text: asked again
            if not dim:
                dim.extend([matrix.shape[1], "this run's first reply"])
            if matrix.shape[1] != dim[0]:
                raise LLMEndpointError(
                    f"{task.base_url} returned {task.model} embeddings of {matrix.shape[1]} "
                    f"dimensions where {dim[1]} have {dim[0]}; nothing of this reply was cached"
                )
            vectors[key] = matrix[0]
            rows.append(
                answer_row(key, model=task.model, prompt_version=EMBED_VERSION, embedding=matrix[0])
            )
            report.batch_requests += 1
            report.prompt_tokens += tokens
            cost += task.cost(tokens, 0)
        if rows:
            cache.put_many(rows)
        report.cost += cost
        return cost

    left, rounds, asked = list(todo), 0, len(todo)
    while left and rounds < MAX_ROUNDS:
        if rounds and len(left) <= max(ONLINE_MIN, ONLINE_SHARE * asked):
            break
        rounds, asked, wanted = rounds + 1, len(left), set(left)
        done = run_jobs(task, EMBEDDINGS_URL, left, line_of, cache, client, collect, what=what,
                        estimate=estimate, guard=guard, halted=halted)  # fmt: skip
        report.batches_submitted += done.submitted
        report.batches_resumed += done.resumed
        left = [k for k in left if k not in vectors]
    if left:
        log.info(f"{what}: {len(left):,} texts left after {rounds} batch round(s): asked online")
    return vectors
