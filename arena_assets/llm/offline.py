"""A month's requests of one task as files answered elsewhere: ``arena-assets llm
export-batch`` writes the requests the cache does not answer as Batch-API request lines
(``llm.batch_files``; ``custom_id`` = the cache key), for OpenAI's Batch API by hand,
vLLM's ``run-batch`` on one's own GPUs, or another provider; ``import-batch`` reads their
output lines back.

Both run the month's LLM steps in planning mode (``llm.plan.planning``: nothing is called,
nothing written to the lake) inside an ``OfflineRun``: every ``run_batch`` and
``embed_texts`` of the task's setting (``LLMTask.setting``) hands it its requests, with its
cache and its parser. Exporting collects the uncached ones' lines. Importing answers them
from the file: each answer read and validated as an online reply is (``reply_result``, the
stage's own parser; an embedding as one vector of the cache's size), cached when it
parses, and every line of the file ends in exactly one outcome:

- ``accepted``: a pending request's answer that parsed, now cached;
- ``parse_failed``: a pending request's answer the parser refused (not cached; the next
  export asks it again);
- ``failed``: an error line for a pending request;
- ``unknown``: a custom_id that is no pending request of the task this month (answered
  already, another task's, another month's);
- ``duplicate``: a second line for a custom_id;
- ``unreadable``: not JSON, or without a custom_id.

A later step that depends on an earlier one's answers (the judge's follow-up turn of
Arena-Hard v0.1, the names of clusters not found yet) is pending only once those answers
are cached: export again after an import for the next round.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from arena_assets.llm.ahead import answered
from arena_assets.llm.batch_api import chat_line
from arena_assets.llm.batch_files import EMBEDDINGS_URL, read_output, request_line
from arena_assets.llm.cache import ResponseCache, answer_row, request_key
from arena_assets.llm.config import LLMTask
from arena_assets.llm.online import cache_answer
from arena_assets.llm.results import reply_result

OUTCOMES = ("accepted", "parse_failed", "failed", "unknown", "duplicate", "unreadable")

_RUN: contextvars.ContextVar[OfflineRun | None] = contextvars.ContextVar(
    "llm_offline", default=None
)


@dataclass
class OfflineRun:
    """The requests of one task (``setting``, e.g. ``LABELER``) exported or imported."""

    setting: str
    # import: the response file's lines by custom_id -> (body, error); None: exporting
    responses: dict[str, tuple[dict | None, str | None]] | None = None
    lines: dict[str, bytes] = field(default_factory=dict)  # export: custom_id -> request line
    not_exported: dict[str, str] = field(default_factory=dict)  # custom_id -> why (an image)
    pending: set[str] = field(default_factory=set)
    outcomes: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # import
    _caches: dict[int, ResponseCache] = field(default_factory=dict)

    def wants(self, task: LLMTask) -> bool:
        return task.setting.upper() == self.setting.upper()

    def chat(
        self,
        task: LLMTask,
        requests: Sequence,
        cache: ResponseCache,
        parse: Callable[[str], Any],
    ) -> None:
        """A ``run_batch`` of the planned month: its requests the cache does not answer."""
        if not self.wants(task):
            return
        params = task.generation_params()
        for r in requests:
            k = request_key(task.model, r.messages, params, r.prompt_version)
            if k in self.pending or answered(cache, k, parse):
                continue
            self.pending.add(k)
            if self.responses is None:
                try:
                    self.lines[k] = chat_line(task, k, r)[0]
                except (OSError, ValueError) as exc:
                    self.not_exported[k] = f"{type(exc).__name__}: {exc}"
            elif k in self.responses:
                body, error = self.responses[k]
                if body is None:
                    self.outcomes[k] = ("failed", error)
                    continue
                result = reply_result(task, r.item_id, body, parse)
                if result.status == "ok":
                    cache_answer(task, cache, k, r, result)
                    self._caches[id(cache)] = cache
                    self.outcomes[k] = ("accepted", None)
                else:
                    self.outcomes[k] = ("parse_failed", result.error)

    def embeddings(
        self, task: LLMTask, keys: Sequence[str], texts: Sequence[str], cache: ResponseCache
    ) -> None:
        """An ``embed_texts`` of the planned month: its texts without a cached vector."""
        from arena_assets.llm.embed_batch import EMBED_VERSION, decode_embeddings

        if not self.wants(task):
            return
        cached = cache.values(dict.fromkeys(keys), "embedding")
        sizes = {len(v) for v in cached.values() if v is not None}
        for k, text in zip(keys, texts):
            if k in self.pending or cached.get(k) is not None:
                continue
            self.pending.add(k)
            if self.responses is None:
                body = {"model": task.model, "input": text, "encoding_format": "base64"}
                self.lines[k] = request_line(k, EMBEDDINGS_URL, body)
            elif k in self.responses:
                body, error = self.responses[k]
                if body is None:
                    self.outcomes[k] = ("failed", error)
                    continue
                try:
                    matrix, _ = decode_embeddings(body)
                    if matrix.shape[0] != 1 or (sizes and matrix.shape[1] not in sizes):
                        raise ValueError(f"not one vector of size {sorted(sizes) or '?'}")
                except (ValueError, KeyError, TypeError) as exc:
                    self.outcomes[k] = ("parse_failed", str(exc)[:300])
                    continue
                sizes.add(matrix.shape[1])
                cache.put_many(
                    [
                        answer_row(
                            k, model=task.model, prompt_version=EMBED_VERSION, embedding=matrix[0]
                        )
                    ]
                )
                self._caches[id(cache)] = cache
                self.outcomes[k] = ("accepted", None)

    def flush(self) -> None:
        """The imported answers on disk."""
        for cache in self._caches.values():
            cache.flush()


def offline_run() -> OfflineRun | None:
    """The export or import running in this context, or None."""
    return _RUN.get()


@contextlib.contextmanager
def offline(run: OfflineRun) -> Iterator[OfflineRun]:
    """The plans made inside hand ``run`` their task's requests (module docstring)."""
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)
        run.flush()


def read_responses(data: bytes) -> tuple[dict[str, tuple[dict | None, str | None]], dict]:
    """A response file's lines by custom_id, and the outcomes of the lines that name no
    request once (``duplicate``, ``unreadable``; line number -> outcome)."""
    responses: dict[str, tuple[dict | None, str | None]] = {}
    others: dict[str, tuple[str, str | None]] = {}
    for n, (cid, body, error) in enumerate(read_output(data), 1):
        if cid is None:
            others[f"line {n}"] = ("unreadable", error or "no custom_id")
        elif cid in responses:
            others[f"line {n}"] = ("duplicate", f"a second line for {cid}")
        else:
            responses[cid] = (body, error)
    return responses, others


__all__ = [
    "OUTCOMES",
    "OfflineRun",
    "offline",
    "offline_run",
    "read_responses",
]
