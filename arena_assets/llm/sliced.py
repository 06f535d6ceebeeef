"""A batch too large to hold at once, asked a slice at a time with ``run_batch``.

A production month's label batches are ~300,000 and ~700,000 requests: their texts, cache
keys and results held together were ~2 GB of a 7 GB step. ``run_sliced`` builds the
requests of one slice, asks them, hands the results to the caller to keep what it needs,
and lets both go before the next slice. Rows go to a slice by their ``identity``, a value
equal for rows whose requests are equal (a hash of the request's text, say), so identical
requests land in one slice and cost one call, as in one batch; the slices share the cache
and one client; the report sums them; a plan records them as one batch
(``llm.plan.merged_plans``); progress is said for the whole batch (its total: the distinct
identities).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from arena_assets.llm.batch import (
    BatchReport,
    LLMRequest,
    LLMResult,
    Progress,
    ProgressFn,
    run_batch,
)
from arena_assets.llm.budget import one_batch
from arena_assets.llm.cache import ResponseCache
from arena_assets.llm.client import make_client
from arena_assets.llm.config import LLMTask
from arena_assets.llm.plan import merged_plans, recording
from arena_assets.llm.results import add_report

SLICE = 50_000  # requests built and asked at once


def run_sliced(
    task: LLMTask,
    cache: ResponseCache,
    parse: Callable[[str], Any],
    identity: pl.Series,
    build: Callable[[np.ndarray], list[LLMRequest]],
    take: Callable[[np.ndarray, list[LLMResult]], None],
    *,
    progress: ProgressFn | None = None,
    slice_size: int = SLICE,
) -> BatchReport:
    """Ask the requests of ``len(identity)`` rows: ``build(rows)`` makes those rows'
    requests (row numbers, ascending), ``take(rows, results)`` receives their results in
    the same order. Returns the whole batch's report."""
    n = len(identity)
    parts = max(1, -(-n // slice_size))
    slice_of = (
        (identity.hash(seed=0) % parts).to_numpy() if parts > 1 else np.zeros(n, dtype=np.int64)
    )
    report = BatchReport(
        model=task.model, base_url=task.base_url, started_at=time.time(), mode=task.mode
    )
    started, distinct = time.monotonic(), identity.n_unique() if n else 0
    client = make_client(task) if parts > 1 and recording() is None else None
    with merged_plans(task), one_batch(distinct):  # one budget projection for the whole batch
        for part in range(parts):
            rows = np.flatnonzero(slice_of == part)
            results, done = run_batch(
                task,
                build(rows),
                cache,
                parse,
                client=client,
                progress=_offset(progress, report, distinct, started),
            )
            take(rows, results)
            results = None
            add_report(report, done)
    report.elapsed_s = time.monotonic() - started
    return report


def _offset(
    progress: ProgressFn | None, before: BatchReport, distinct: int, started: float
) -> ProgressFn | None:
    """A slice's progress said for the whole batch: the slices before it added, the total
    the batch's distinct requests."""
    if progress is None:
        return None
    done0, cached0, calls0 = before.unique_requests, before.cache_hits, before.calls
    return lambda p: progress(
        Progress(
            done0 + p.done,
            max(distinct, done0 + p.total),
            calls0 + p.calls,
            time.monotonic() - started,
            cached0 + p.cached,
        )
    )


def identity_in_chunks(
    n: int, hashed: Callable[[int, int], pl.Series], chunk: int = SLICE
) -> pl.Series:
    """``hashed(start, length)`` of rows ``[0, n)``, ``chunk`` rows at a time, as one
    series: a request's text for its identity is made a chunk at a time, not for every
    row at once (a prompt template repeated 300,000 times is ~1 GB)."""
    parts = [hashed(start, min(chunk, n - start)) for start in range(0, n, chunk)]
    return pl.concat(parts) if parts else pl.Series("identity", [], dtype=pl.UInt64)
