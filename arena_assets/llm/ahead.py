"""Every Batch-API job a step will wait for, submitted before it waits for the first.

A month step asks its batches one after another (the label tasks, a batch's slices, the
candidates' answers when their plan runs): in batch mode each would be submitted, then
waited for up to the completion window, before the next is submitted, and a month of
three label tasks could take three days. So before the step runs, its plan is made again
inside ``submitting()`` (``defs.llm_plan.gate`` does it once the bill is accepted), and
every ``run_batch`` and ``embed_texts`` of a task in batch mode submits its requests the
cache does not answer (``llm.batch_jobs.submit_jobs``: recorded, not waited for). When the
step runs, each of its batches finds its jobs by their records and waits for them: they
ran side by side at the endpoint, and the step waits about as long as the slowest.

What depends on answers not there yet (a judge's follow-up turn, the names of clusters not
found yet, a bench not built yet) is not in the plan and is submitted when the step gets
there, as without this pass.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from arena_assets.llm.batch_api import chat_line
from arena_assets.llm.batch_files import CHAT_URL, EMBEDDINGS_URL, request_line
from arena_assets.llm.batch_jobs import submit_jobs
from arena_assets.llm.budget import BatchGuard, Spending
from arena_assets.llm.cache import ResponseCache, request_key
from arena_assets.llm.client import make_client, preflight
from arena_assets.llm.config import LLMTask
from arena_assets.llm.plan import input_scale, output_estimate, run_month
from arena_assets.llm.results import parsed_result
from arena_assets.llm.tokens import text_tokens_many

_AHEAD: contextvars.ContextVar[Ahead | None] = contextvars.ContextVar("llm_ahead", default=None)


@dataclass
class Ahead:
    """The jobs submitted (and found in flight) by one pass; under ``budget`` (per month:
    ``label`` and the month planned name it), each job held as the run would hold it
    (``BatchGuard.hold_job``): the month stops before a job whose input alone is over."""

    budget: float | None = None
    label: str = ""
    submitted: int = 0
    resumed: int = 0
    requests: int = 0
    failed: int = 0  # requests whose line could not be made (asked, and failed, in the step)
    _clients: dict[tuple, openai.OpenAI] = field(default_factory=dict)
    _spent: dict[str, Spending] = field(default_factory=dict)

    def guard(self, requests: int) -> BatchGuard | None:
        if self.budget is None:
            return None
        month = run_month()
        held = self._spent.setdefault(month, Spending(self.budget, f"{self.label} {month}".strip()))
        return held.batch(requests)

    def client(self, task: LLMTask) -> openai.OpenAI:
        key = (task.base_url, task.api_key, task.model)
        if key not in self._clients:
            client = make_client(task)
            preflight(task, client)  # an endpoint that cannot serve it: said before any job
            self._clients[key] = client
        return self._clients[key]

    def chat(
        self, task: LLMTask, requests: Sequence, cache: ResponseCache, parse: Callable[[str], Any]
    ) -> None:
        """A planned ``run_batch`` of a task in batch mode: its jobs submitted."""
        params = task.generation_params()
        by_key = {}
        for r in requests:
            k = request_key(task.model, r.messages, params, r.prompt_version)
            if k not in by_key and not answered(cache, k, parse):
                by_key[k] = r
        if not by_key:
            return
        versions = list(dict.fromkeys(r.prompt_version for r in by_key.values()))
        per_call = output_estimate(task, cache, versions)[0]
        scale = max(1.0, input_scale(task, cache, versions)[0])
        counted: dict[str, int] = {}

        def line_of(key: str) -> bytes:
            line, counted[key] = chat_line(task, key, by_key[key])
            return line

        def estimate(keys: list[str]) -> tuple[float, float]:
            tokens = scale * sum(counted[k] for k in keys)
            return task.cost(tokens, per_call * len(keys)), task.cost(tokens, 0)

        what = f"{task.model} {', '.join(versions)}"
        self._submit(task, CHAT_URL, list(by_key), line_of, cache, what, estimate)

    def embeddings(
        self, task: LLMTask, keys: Sequence[str], texts: Sequence[str], cache: ResponseCache
    ) -> None:
        """A planned ``embed_texts`` of a task in batch mode: its jobs submitted."""
        text_of = dict(zip(keys, texts))
        cached = cache.values(text_of, "embedding")
        todo = [k for k in text_of if cached.get(k) is None]

        def line_of(key: str) -> bytes:
            body = {"model": task.model, "input": text_of[key], "encoding_format": "base64"}
            return request_line(key, EMBEDDINGS_URL, body)

        def estimate(keys: list[str]) -> tuple[float, float]:
            cost = task.cost(sum(text_tokens_many([text_of[k] for k in keys])), 0)
            return cost, cost

        if todo:
            what = f"{task.model} embeddings"
            self._submit(task, EMBEDDINGS_URL, todo, line_of, cache, what, estimate)

    def _submit(self, task, url, keys, line_of, cache, what, estimate) -> None:
        out = submit_jobs(task, url, keys, line_of, cache, self.client(task), what=what,
                          estimate=estimate, guard=self.guard(len(keys)))  # fmt: skip
        self.submitted += out.submitted
        self.resumed += out.resumed
        self.requests += len(keys)
        self.failed += len(out.early)

    def line(self) -> str:
        return (
            f"batch mode: {self.submitted:,} Batch-API jobs submitted ahead for "
            f"{self.requests:,} requests ({self.resumed:,} in flight already, found by their "
            "records); the step now waits for them"
        )


def answered(cache: ResponseCache, key: str, parse: Callable[[str], Any]) -> bool:
    """As ``run_batch`` decides: cached, and its parser still accepts it."""
    hit = cache.get(key)
    return hit is not None and (
        parsed_result(key, hit["content"], parse, 0, 0, cached=True).status == "ok"
    )


def ahead_run() -> Ahead | None:
    """The pass submitting jobs ahead in this context, or None."""
    return _AHEAD.get()


@contextlib.contextmanager
def submitting(budget: float | None = None, label: str = "") -> Iterator[Ahead]:
    """Plans made inside submit the jobs of their tasks in batch mode (module docstring),
    each month's under ``budget`` (``ARENA_LLM_BUDGET_USD``; ``label``: the asset)."""
    ahead = Ahead(budget, label)
    token = _AHEAD.set(ahead)
    try:
        yield ahead
    finally:
        _AHEAD.reset(token)
