"""The bill before the run: what a batch of LLM requests will cost, computed without a call.

``plan_requests(task, requests, cache)`` counts what ``run_batch`` would do with the same
arguments: the distinct requests after dedup (same cache key), those the cache already
answers, the calls left, their prompt tokens (``llm.tokens``: approximate cl100k plus
OpenAI's message framing, what the simulated arena bills too; scaled to what the endpoint
billed for the cache's earlier answers where there are enough: ``input_scale``) and their
completion tokens,
estimated from history: the mean completion tokens of the cache's answers to the same model
and prompt version (earlier months, earlier runs). Without such history the estimate is
the bound ``max_tokens`` per call, said so in ``output_basis``: a plan never under-states
what it cannot know. Cost uses the task's price table.

``planning()`` switches ``run_batch`` and ``embed_texts`` in this thread (a context
variable) to recording mode: they return placeholders (status ``failed``, error
``planned``) and append a ``BatchPlan`` instead of calling, so a stage's own function
yields its exact plan without a copy of its request building.

An asset's plan for a month is an ``AssetPlan`` (its batches); ``check_budget`` refuses
one over ``ARENA_LLM_BUDGET_USD`` with one line naming the figure and the setting.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from arena_assets.errors import ArenaError
from arena_assets.llm.cache import ResponseCache, request_key
from arena_assets.llm.config import LLMTask
from arena_assets.llm.tokens import chat_prompt_tokens_many, text_tokens_many

BUDGET_SETTING = "ARENA_LLM_BUDGET_USD"
# answers in the cache needed before their mean length stands for the next batch
MIN_HISTORY = 20
# how output_estimate's basis starts when the output is only the max_tokens bound: what
# BatchPlan.output_bound_only reads (one constant for the writer and the reader)
BOUND_BASIS = "bound"
# requests a batch whose output is only the bound keeps for a pilot (``llm.pilot``): the
# most answers a pilot asks of it; seeded, so a plan and its pilot are reproducible
PILOT_SAMPLE, PILOT_SEED = 200, 0
APPROX_BASIS = "approximate cl100k count"  # the input's basis with nothing billed to compare

_PLANS: contextvars.ContextVar[list | None] = contextvars.ContextVar("llm_plans", default=None)
_RUN: contextvars.ContextVar[OneRun | None] = contextvars.ContextVar("llm_plan_run", default=None)
# set by ``sampling_pilots(n)``: the answers a pilot wants a batch's estimate to rest on;
# only a plan made for a pilot keeps samples (a sample holds its cache, loaded: the runs'
# own plans live as long as their step)
_PILOTS: contextvars.ContextVar[int] = contextvars.ContextVar("llm_plan_pilots", default=0)


@dataclass
class PilotSample:
    """Calls of a batch whose output is only the ``max_tokens`` bound, drawn at random for
    ``llm.pilot``: asked for real, their answers are the history its estimate lacks (and
    are cached, so the run does not pay for them again)."""

    task: LLMTask
    requests: list
    cache: ResponseCache
    parse: Callable[[str], Any]


@dataclass
class BatchPlan:
    """One batch of requests to one model at one endpoint."""

    what: str  # e.g. "criteria-v1", "embeddings", "answers kelp-34b-pro"
    model: str
    base_url: str
    items: int = 0  # requests handed over (before dedup)
    distinct: int = 0  # after dedup by cache key
    cached: int = 0  # of distinct, answered by the cache: no call
    # of cached, asked by an earlier month of the same run (``one_run``): cached by then
    earlier: int = 0
    calls: int = 0  # distinct - cached (HTTP requests; embeddings: batches)
    prompt_tokens: int = 0  # estimated, for the calls only
    completion_tokens: int = 0
    cost: float = 0.0
    output_basis: str = ""  # how completion tokens were estimated
    input_basis: str = APPROX_BASIS  # how prompt tokens were (input_scale)
    input_scale: float = 1.0  # the ratio applied to the count
    completion_per_call: float = 0.0  # the estimate before rounding (a batch's slices add up)
    exact: bool = True  # False: projected from settings and history (inputs not there yet)
    # a digest of the requests the calls answer, where two assets may ask the same ones
    # into one cache (the embeddings of topic_clusters and prompt_embeddings): whichever
    # runs first calls, so a month's total counts such a batch once
    requests_digest: str = ""
    input_cost: float = 0.0  # the input tokens' share of cost (what the calls cost at least)
    pilot: PilotSample | None = field(default=None, repr=False, compare=False)  # not in as_dict

    def price(self, task: LLMTask) -> BatchPlan:
        """Cost (and its input share) of the planned tokens at ``task``'s prices."""
        self.cost = task.cost(self.prompt_tokens, self.completion_tokens)
        self.input_cost = task.cost(self.prompt_tokens, 0)
        return self

    @property
    def output_bound_only(self) -> bool:
        """Output planned at ``max_tokens`` (no answers to measure yet): an upper bound."""
        return self.output_basis.startswith(BOUND_BASIS)

    def __post_init__(self) -> None:
        from arena_assets.llm.endpoints import public_base_url

        # logs and metadata name the in-process simulated arena instead of its loopback
        # port (a new one every process)
        self.base_url = public_base_url(self.base_url)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "pilot"}


@dataclass
class AssetPlan:
    """Every batch one LLM asset will send for one month."""

    asset: str
    month: str
    batches: list[BatchPlan] = field(default_factory=list)
    note: str = ""  # why figures are projected, or why there is no plan

    @property
    def calls(self) -> int:
        return sum(b.calls for b in self.batches)

    @property
    def cost(self) -> float:
        return sum(b.cost for b in self.batches)

    @property
    def prompt_tokens(self) -> int:
        return sum(b.prompt_tokens for b in self.batches)

    @property
    def completion_tokens(self) -> int:
        return sum(b.completion_tokens for b in self.batches)

    @property
    def exact(self) -> bool:
        return all(b.exact for b in self.batches)

    def line(self) -> str:
        """The run's first log line: the whole bill in one line."""
        per = (
            "; ".join(
                f"{b.what}: {b.calls:,} calls of {b.distinct:,} distinct ({b.cached:,} cached"
                + (
                    f", {b.earlier:,} of them asked by an earlier month of this run"
                    if b.earlier
                    else ""
                )
                + f") to {b.model}"
                + (
                    f", input at {b.input_scale:.2f}x the count as the endpoint billed"
                    if b.input_scale != 1.0
                    else ""
                )
                for b in self.batches
            )
            or "no batch"
        )
        kind = "" if self.exact else " (projected)"
        return (
            f"plan {self.asset} {self.month}{kind}: {self.calls:,} calls, ~{self.prompt_tokens:,} "
            f"in / ~{self.completion_tokens:,} out tokens, estimated cost ${self.cost:,.4f} — {per}"
        )

    def as_metadata(self) -> dict:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": round(self.cost, 6),
            "exact": self.exact,
            "batches": [b.as_dict() for b in self.batches],
        }


class BudgetExceeded(ArenaError, RuntimeError):
    """Over ``ARENA_LLM_BUDGET_USD``: a plan refused before any call (``check_budget``), or a
    month stopped while its calls run (``llm.budget``)."""


def parse_budget(value: str | float | None) -> float | None:
    """The budget setting: empty or unset = no budget; otherwise a finite number >= 0."""
    if value is None or str(value).strip() == "":
        return None
    try:
        budget = float(value)
    except ValueError:
        raise ValueError(
            f"{BUDGET_SETTING} must be a number of US dollars, got {value!r}"
        ) from None
    if not budget >= 0 or budget == float("inf"):  # nan compares false: it would refuse every run
        raise ValueError(
            f"{BUDGET_SETTING} must be a finite number >= 0 (US dollars; empty: no "
            f"limit), got {value!r}"
        )
    return budget


def least_cost(plan: AssetPlan) -> float:
    """The least the plan's calls can cost, as far as it is known: their input where the
    output is only the ``max_tokens`` bound, the estimate where history gives one; a
    projected batch (its calls not counted yet) nothing."""
    return sum(b.input_cost if b.output_bound_only else b.cost for b in plan.batches if b.exact)


def check_budget(plan: AssetPlan, budget: float | None) -> str:
    """Raise ``BudgetExceeded`` (one line) when the plan is over ``budget``; "" when it fits.

    A plan over the budget only through what it cannot know yet (output at the
    ``max_tokens`` bound, a projected number of calls) while its least cost fits is not
    refused: the run starts under ``llm.budget``'s guard, which never lets it spend past
    the budget and stops it as soon as its own answers say it will not fit. Returns the
    line that says so (the run logs it)."""
    if budget is None or plan.cost <= budget:
        return ""
    unknown = any(b.output_bound_only or not b.exact for b in plan.batches)
    least = least_cost(plan)
    if not unknown or least > budget:
        at_least = f", at least ${least:,.2f}" if unknown else ""
        raise BudgetExceeded(
            f"{plan.asset} {plan.month}: estimated cost ${plan.cost:,.2f} ({plan.calls:,} calls, "
            f"~{plan.prompt_tokens:,} in / ~{plan.completion_tokens:,} out tokens{at_least}) is over "
            f"{BUDGET_SETTING}={budget:g} (per asset and month); nothing was called. Raise "
            f"the setting, or see `arena-assets plan --month {plan.month}`"
        )
    return (
        f"{plan.asset} {plan.month}: over {BUDGET_SETTING}={budget:g} only through what it cannot "
        f"know yet (estimated ${plan.cost:,.2f} with answers at max_tokens or calls projected, at least "
        f"${least:,.2f}): the run starts, held under the budget, and stops as soon as its answers say "
        "it will not fit"
    )


@contextlib.contextmanager
def planning() -> Iterator[list[BatchPlan]]:
    """Record (not send) every batch ``run_batch`` / ``embed_texts`` get in this context."""
    plans: list[BatchPlan] = []
    token = _PLANS.set(plans)
    try:
        yield plans
    finally:
        _PLANS.reset(token)


@contextlib.contextmanager
def sampling_pilots(answers: int) -> Iterator[None]:
    """Plans made inside keep a ``PilotSample`` of each batch whose estimate rests on fewer
    than ``answers`` earlier answers (at the bound: none), for ``llm.pilot``; and a stage's
    checks before its first call, which a plan otherwise skips where they need the
    endpoint, run (``pilots_sampled``): a pilot calls it. ``answers`` 0: neither."""
    token = _PILOTS.set(answers)
    try:
        yield
    finally:
        _PILOTS.reset(token)


def pilots_sampled() -> bool:
    """Whether plans made now are for a pilot (``sampling_pilots``)."""
    return _PILOTS.get() > 0


@contextlib.contextmanager
def merged_plans(task: LLMTask) -> Iterator[None]:
    """The batches recorded inside (one batch asked in slices: ``llm.sliced``) become one
    in the plan, with the figures the batch asked at once would have: completion tokens
    rounded once, the cost at ``task``'s prices of the summed tokens."""
    plans = recording()
    start = len(plans) if plans is not None else 0
    yield
    if plans is not None and len(plans) - start > 1:
        parts = plans[start:]
        del plans[start:]
        asked = [p for p in parts if p.calls] or [p for p in parts if p.items] or parts
        total = {
            name: sum(getattr(p, name) for p in parts)
            for name in ("items", "distinct", "cached", "earlier", "calls", "prompt_tokens")
        }
        per_call = asked[0].completion_per_call  # the same for every slice (one history)
        merged = replace(
            asked[0],
            **total,
            completion_tokens=round(per_call * total["calls"]),
            exact=all(p.exact for p in parts),
        )
        merged.price(task)
        plans.append(merged)


@dataclass
class OneRun:
    """The plans of one run over several months (``one_run``): the month being planned,
    and per cache the month each request key not cached is first asked in."""

    month: str = ""
    asked: dict[str, dict[str, str]] = field(default_factory=dict)


@contextlib.contextmanager
def one_run() -> Iterator[OneRun]:
    """Plans made inside, month after month in the order they will run (set ``month``
    before each), are of one run over those months (a backfill range): a request an
    earlier month asks counts as cached in a later one, since the run asks it once and
    caches it; else a range's plan counts a prompt its months share once a month. It
    assumes the earlier month's call is answered and parses: one that fails or does not
    parse is not cached, and the later month asks it again (the budget's guard counts it)."""
    run = OneRun()
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)


def asked_before(cache: ResponseCache, keys: Iterable[str]) -> set[str]:
    """Of ``keys`` (requests ``cache`` does not answer now), those an earlier month of this
    run asks first (``one_run``; empty outside it); the others are recorded as this
    month's. Repeats within one month are left to the planner, as before ranges."""
    run = _RUN.get()
    if run is None:
        return set()
    if not run.month:  # else every key is "this month's" and a range counts its repeats again
        raise RuntimeError("llm.plan.one_run: set the run's month before planning it")
    first = run.asked.setdefault(f"{cache.fs.protocol}:{cache.dir}", {})
    return {k for k in keys if first.setdefault(k, run.month) != run.month}


def recording() -> list[BatchPlan] | None:
    """The list a planning context records into, or None when calls are real."""
    return _PLANS.get()


def history(cache: ResponseCache, model: str, prompt_version: str) -> tuple[float, int] | None:
    """(mean completion tokens, answers) of the cache's answers to ``model`` with
    ``prompt_version``; None with fewer than ``MIN_HISTORY``."""
    total, n = cache.completion_tokens(model, prompt_version)
    return (total / n, n) if n >= MIN_HISTORY else None


def output_estimate(
    task: LLMTask, cache: ResponseCache, versions: Sequence[str]
) -> tuple[float, str]:
    """Completion tokens expected per call, and the basis said in the plan."""
    if not versions:
        return 0.0, "nothing to ask"
    found = [h for v in dict.fromkeys(versions) if (h := history(cache, task.model, v))]
    if found:
        n = sum(h[1] for h in found)
        mean = sum(h[0] * h[1] for h in found) / n
        return mean, f"history: mean {mean:.0f} tokens over {n:,} cached answers"
    return float(task.max_tokens), f"{BOUND_BASIS}: max_tokens {task.max_tokens} (no history yet)"


def input_scale(task: LLMTask, cache: ResponseCache, versions: Sequence[str]) -> tuple[float, str]:
    """What the endpoint billed for the cache's earlier answers to the same model and
    prompt version over the plan's count of the same requests (each answer records both),
    and the basis said in the plan.

    The count approximates cl100k (``llm.tokens``); an endpoint bills with its model's
    tokenizer, which splits the same text finer or coarser, and its own framing and image
    prices. Over the versions with ``MIN_HISTORY`` such answers (a pilot's, an earlier
    month's) the plan scales its count by the ratio of the sums; otherwise 1. Answers
    without usage (an endpoint that reports none) and those cached before the count was
    recorded are left out. The history is the cache's, whatever endpoint served the model
    name then, as the output lengths' is."""
    billed = counted = n = 0
    for v in dict.fromkeys(versions):  # each version its own history, as output_estimate's
        b, c, k = cache.input_tokens(task.model, v)
        if k >= MIN_HISTORY:
            billed, counted, n = billed + b, counted + c, n + k
    if not n or not counted:
        return 1.0, APPROX_BASIS
    if billed == counted:  # the endpoint counts as the plan does (the simulated arena)
        return 1.0, f"{APPROX_BASIS}, as the endpoint billed {n:,} cached answers"
    scale = billed / counted
    return scale, f"{APPROX_BASIS} x {scale:.3f}: what the endpoint billed {n:,} cached answers"


def plan_requests(
    task: LLMTask,
    requests: Sequence,
    cache: ResponseCache,
    what: str,
    parse: Callable[[str], Any] | None = None,
) -> BatchPlan:
    """What ``run_batch(task, requests, cache, …)`` would do (see module docstring). With
    ``parse`` (run_batch's), inside ``sampling_pilots(n)``, a batch whose estimate rests
    on fewer than n answers keeps a ``PilotSample``."""
    params = task.generation_params()
    first: dict[str, object] = {}
    for r in requests:
        first.setdefault(request_key(task.model, r.messages, params, r.prompt_version), r)
    missing = {k: r for k, r in first.items() if cache.get(k) is None}
    before = asked_before(cache, missing)  # asked by an earlier month of this run: cached by then
    todo = [r for k, r in missing.items() if k not in before]
    versions = [r.prompt_version for r in todo]
    per_call, basis = output_estimate(task, cache, versions)
    scale, input_basis = input_scale(task, cache, versions) if todo else (1.0, APPROX_BASIS)
    counted = sum(chat_prompt_tokens_many([r.messages for r in todo]))
    plan = BatchPlan(
        what,
        task.model,
        task.base_url,
        items=len(requests),
        distinct=len(first),
        cached=len(first) - len(todo),
        earlier=len(before),
        calls=len(todo),
        prompt_tokens=round(scale * counted),  # exact for a scale of 1
        completion_tokens=round(per_call * len(todo)),
        output_basis=basis,
        completion_per_call=per_call,
        input_basis=input_basis,
        input_scale=scale,
    )
    if parse is not None and todo and (wanted := _PILOTS.get()):
        known = sum(
            cache.completion_tokens(task.model, v)[1] for v in {r.prompt_version for r in todo}
        )
        if known < wanted:  # a pilot asks the rest: a larger one adds to an earlier one
            drawn = random.Random(PILOT_SEED).sample(todo, min(len(todo), PILOT_SAMPLE))
            plan.pilot = PilotSample(task, drawn, cache, parse)
    return plan.price(task)


def plan_embeddings(
    task: LLMTask,
    keys: Sequence[str],
    texts: Sequence[str],
    cache: ResponseCache,
    batch_size: int,
    what: str = "embeddings",
) -> BatchPlan:
    """What ``embed_texts`` would do: texts not in the cache, sent ``batch_size`` a call."""
    text_of = dict(zip(keys, texts))
    cached = cache.values(
        text_of, "embedding"
    )  # a row without a vector is asked again, as embed_texts does
    missing = [k for k in text_of if cached.get(k) is None]
    before = asked_before(cache, missing)
    todo = [k for k in missing if k not in before]
    plan = BatchPlan(
        what,
        task.model,
        task.base_url,
        items=len(keys),
        distinct=len(text_of),
        cached=len(text_of) - len(todo),
        earlier=len(before),
        calls=-(-len(todo) // batch_size),
        prompt_tokens=sum(text_tokens_many([text_of[k] for k in todo])),
        output_basis="embeddings: no output tokens",
        requests_digest=_digest([task.base_url, str(batch_size), *sorted(todo)]) if todo else "",
    )
    return plan.price(task)


def _digest(parts: Sequence[str]) -> str:
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=12).hexdigest()


@dataclass(frozen=True)
class MonthTotal:
    calls: int
    cost: float
    shared_calls: int  # calls two assets' plans both list (one cache): counted once above


def month_total(plans: Sequence[AssetPlan]) -> MonthTotal:
    """What a month's LLM assets call and cost together: a batch two assets would both
    send (the same ``requests_digest``) is counted once, as only the first to run calls."""
    seen: set[str] = set()
    calls, cost, shared = 0, 0.0, 0
    for b in (b for p in plans for b in p.batches):
        if b.requests_digest:
            if b.requests_digest in seen:
                shared += b.calls
                continue
            seen.add(b.requests_digest)
        calls, cost = calls + b.calls, cost + b.cost
    return MonthTotal(calls, cost, shared)
