"""A batch too large to hold at once, asked a slice at a time with ``run_batch``.

A production month's label batches are ~300,000 and ~700,000 requests: their texts, cache
keys and results held together were ~2 GB of a 7 GB step. ``run_sliced`` builds the
requests of one slice, asks them, hands the results to the caller to keep what it needs,
and lets both go before the next slice. Rows go to a slice by a hash of what their request
is made of (``identity``), so identical requests land in one slice and cost one call, as in
one batch; the slices share the cache; the report sums them; a plan records them as one
batch (``llm.plan.merged_plans``); progress is said for the whole batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from arena_assets.llm.batch import BatchReport, LLMRequest, LLMResult, Progress, ProgressFn, run_batch
from arena_assets.llm.cache import ResponseCache
from arena_assets.llm.config import LLMTask
from arena_assets.llm.plan import merged_plans

SLICE = 50_000  # requests built and asked at once


def run_sliced(task: LLMTask, cache: ResponseCache, parse: Callable[[str], Any], identity: pl.Series,
               build: Callable[[np.ndarray], list[LLMRequest]],
               take: Callable[[np.ndarray, list[LLMResult]], None], *,
               progress: ProgressFn | None = None, slice_size: int = SLICE) -> BatchReport:
    """Ask the requests of ``len(identity)`` rows: ``build(rows)`` makes those rows'
    requests (row numbers, ascending), ``take(rows, results)`` receives their results in
    the same order. Returns the whole batch's report."""
    n = len(identity)
    parts = max(1, -(-n // slice_size))
    slice_of = ((identity.hash(seed=0) % parts).to_numpy() if parts > 1
                else np.zeros(n, dtype=np.int64))
    report = BatchReport(model=task.model, base_url=task.base_url)
    started, left = time.monotonic(), n
    with merged_plans():
        for part in range(parts):
            rows = np.flatnonzero(slice_of == part)
            left -= len(rows)
            results, done = run_batch(task, build(rows), cache, parse,
                                      progress=_offset(progress, report, left, started))
            take(rows, results)
            results = None
            _add(report, done)
    report.elapsed_s = time.monotonic() - started
    return report


def _add(total: BatchReport, part: BatchReport) -> None:
    for name in ("items", "unique_requests", "cache_hits", "calls", "prompt_tokens", "completion_tokens", "cost"):
        setattr(total, name, getattr(total, name) + getattr(part, name))
    for status, count in part.statuses.items():
        total.statuses[status] = total.statuses.get(status, 0) + count


def _offset(progress: ProgressFn | None, before: BatchReport, left: int, started: float) -> ProgressFn | None:
    """A slice's progress said for the whole batch: the slices before it added, the rows
    of the slices after it counted as still to do."""
    if progress is None:
        return None
    done0, cached0, calls0 = before.unique_requests, before.cache_hits, before.calls
    return lambda p: progress(Progress(done0 + p.done, done0 + p.total + left, calls0 + p.calls,
                                       time.monotonic() - started, cached0 + p.cached))
