"""Which answer-cache keys a step asked for, per item: what lets a forget find the answers
computed from one user's prompts.

The answer cache is keyed by a hash of the request (``cache.request_key``), not by user:
from the cache alone nobody can tell whose prompt an answer came from. A month step that
asks about users' prompts runs its calls inside :func:`recording_keys`; every batch
(``batch.run_batch``, ``embed.embed_texts``, the reward judges) then records, for each
request, its cache namespace, the caller's item id and the key, whether the answer came
from the cache or from a call. The step maps item ids to the conversations (and users)
they came from and keeps that index beside the lake (``pipeline/cache_keys.py``), so that
``forget`` can delete exactly those entries (``privacy/cache_keys.py``).

A plan (``llm.plan.planning``) records nothing: it asks nothing. Threads started by
``concurrently`` run in a copy of the caller's context and record into the same log.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator, Sequence

import polars as pl

KEY_LOG_SCHEMA = {"namespace": pl.String, "item_id": pl.String, "key": pl.String}


class KeyLog:
    """(namespace, item id, key) of every request asked while it records; thread-safe."""

    def __init__(self) -> None:
        self._parts: list[pl.DataFrame] = []
        self._lock = threading.Lock()

    def add(self, namespace: str, item_ids: Sequence[str], keys: Sequence[str]) -> None:
        # a frame per batch, not a tuple per request: a production month's labels are
        # ~10^6 requests, which Arrow strings hold in a fraction of Python's memory
        part = pl.DataFrame(
            {
                "namespace": [namespace] * len(keys),
                "item_id": pl.Series(list(item_ids), dtype=pl.String),
                "key": pl.Series(list(keys), dtype=pl.String),
            },
            schema=KEY_LOG_SCHEMA,
        )
        with self._lock:
            self._parts.append(part)

    def frame(self) -> pl.DataFrame:
        """Every (namespace, item_id, key) recorded, each once."""
        with self._lock:
            parts = list(self._parts)
        if not parts:
            return pl.DataFrame(schema=KEY_LOG_SCHEMA)
        return pl.concat(parts).unique(maintain_order=True)


_LOG: contextvars.ContextVar[KeyLog | None] = contextvars.ContextVar("llm_key_log", default=None)


@contextlib.contextmanager
def recording_keys() -> Iterator[KeyLog]:
    """Record the keys of every request asked inside the block."""
    log = KeyLog()
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def record_keys(namespace: str, item_ids: Sequence[str], keys: Sequence[str]) -> None:
    """Called by the batch functions; nothing happens outside :func:`recording_keys`."""
    log = _LOG.get()
    if log is not None and len(keys):
        log.add(namespace, item_ids, keys)
