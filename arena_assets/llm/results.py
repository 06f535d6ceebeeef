"""What a batch of LLM requests gives back, however it was asked (one call at a time, or as
Batch-API jobs): the request, one result per request, progress, and the batch's report.

``reply_result`` reads a chat completion's JSON body (an online reply, or the body of a
Batch-API output line) into a result with the same validation either way: the answer's text,
its reasoning kept apart, the billed tokens, and ``parse``'s verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arena_assets.llm.config import LLMTask

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
    mode: str = "online"
    # batch mode: requests answered through Batch-API jobs, the jobs submitted by this run
    # and those of an earlier run picked up (llm.batch_api); a request answered online in a
    # batch run (a re-ask) is in ``calls``
    batch_requests: int = 0
    batches_submitted: int = 0
    batches_resumed: int = 0

    def as_metadata(self) -> dict:
        from arena_assets.llm.endpoints import public_base_url

        return {**self.__dict__, "base_url": public_base_url(self.base_url)}


ProgressFn = Callable[[Progress], None]

SUMMED = (
    "items",
    "unique_requests",
    "cache_hits",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "batch_requests",
    "batches_submitted",
    "batches_resumed",
)


def add_report(total: BatchReport, part: BatchReport) -> None:
    """``part``'s counts added to ``total``'s (a batch asked in parts, a follow-up round)."""
    for name in SUMMED:
        setattr(total, name, getattr(total, name) + getattr(part, name))
    for status, count in part.statuses.items():
        total.statuses[status] = total.statuses.get(status, 0) + count


def parsed_result(
    item_id: str,
    content: str | None,
    parse: Callable[[str], Any],
    pt: int,
    ct: int,
    *,
    cached: bool,
) -> LLMResult:
    """An answer through ``parse``: ok with its value, or parse_failed with the text kept."""
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


def reply_result(task: LLMTask, item_id: str, data: dict, parse: Callable[[str], Any]) -> LLMResult:
    """A chat completion's JSON body as a result: its first choice's text through ``parse``,
    its reasoning kept apart, its usage billed at ``task``'s prices (``cost``)."""
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    pt = int(usage.get("prompt_tokens") or 0)
    ct = int(usage.get("completion_tokens") or 0)
    choices = data.get("choices")
    first = (
        choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    )
    message = first.get("message") if isinstance(first.get("message"), dict) else {}
    content = message.get("content")
    # vLLM / DeepSeek put thinking in reasoning_content, others in reasoning: kept apart
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    result = parsed_result(
        item_id, content if isinstance(content, str) else None, parse, pt, ct, cached=False
    )
    result.cost = task.cost(pt, ct)
    result.reasoning = reasoning if isinstance(reasoning, str) else None
    return result
