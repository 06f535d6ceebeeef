"""A month's LLM spending held under ``ARENA_LLM_BUDGET_USD`` while its calls run.

The plan (``llm.plan``) refuses a run whose estimate is over the budget before any call.
Where its output tokens are only the ``max_tokens`` bound (a first month: no answers to
measure yet) the estimate is an upper bound, often several times the real bill, and a
refusal on it would stop runs the budget covers. Such a run starts when its least cost
fits (its input; projected batches at nothing: ``llm.plan.check_budget``), under a
``Spending`` that:

- never lets the spending pass the budget: each call reserves its worst case (its input
  tokens and ``max_tokens`` of output at the task's prices) before it is sent, and gives
  back what the server's ``usage`` says it cost; a call whose reservation does not fit
  beside those in flight waits for them to settle, and one that does not fit alone is not
  sent (the month stops);
- stops a batch early once its own answers say it will not fit: at ``MIN_ANSWERS`` calls
  and each doubling of them, the spending so far plus the calls left at the low end of
  the cost per call seen (the mean less ``SPREADS`` standard errors) over the budget stops
  the month.

What a call costs is what the reply's ``usage`` bills; a call that fails costs nothing when
the server refused it (4xx) and its worst case otherwise (it may have been generated). The
worst case counts input as the plan does (``llm.tokens``' cl100k approximation, images at
their low-detail price, scaled up to what the endpoint billed for the cache's earlier answers
where it billed more: ``llm.plan.input_scale``): an endpoint whose tokenizer counts more
than that can pass the budget by the difference on the calls in flight.

A stop raises ``BudgetExceeded`` (one line: what was spent, why it stopped, the setting);
the answers received are cached, so a rerun with a larger budget pays only for the rest.
``spending(...)`` sets it for the calls made in its block (``run_batch``, ``embed_texts``,
the reward model's loop); without it nothing is counted and nothing is held.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
from collections.abc import Callable, Iterator

import openai

from arena_assets.llm.concurrency import Halted
from arena_assets.llm.plan import BUDGET_SETTING, BudgetExceeded

MIN_ANSWERS = 50  # calls of a batch before its cost per call projects the rest
# the projection is tested at 50, 100, 200, ... answers, at three standard errors: a test at
# every call (thousands a batch, two errors) stopped 3-17 % of runs whose bill was 97 % of
# the budget in a simulation of log-normal call costs (a review's)
SPREADS = 3.0

_SPENDING: contextvars.ContextVar[Spending | None] = contextvars.ContextVar(
    "llm_spending", default=None
)
_SHARED: contextvars.ContextVar[BatchGuard | None] = contextvars.ContextVar(
    "llm_batch_guard", default=None
)


class Spending:
    """What one asset's month has spent and holds in flight, shared by its batches."""

    def __init__(self, budget: float, label: str) -> None:
        self.budget, self.label = budget, label
        self.spent = self.reserved = 0.0
        self.calls = self.in_flight = 0  # a count, not the float sum: "nothing in flight" exactly
        self.stopped: BudgetExceeded | None = None  # once stopped, no call of the month is sent
        self.why = ""
        self._lock = threading.Condition()  # a settled call wakes the calls waiting for room

    def batch(self, calls: int) -> BatchGuard:
        """The guard of one batch of ``calls`` calls (its own projection)."""
        return BatchGuard(self, calls)

    def _stop(self, why: str) -> BudgetExceeded:
        """(Under the lock.) The month stops: every call waiting for room raises too."""
        if self.stopped is None:
            self.why = why
            self.stopped = BudgetExceeded(self.line())
            self._lock.notify_all()
        return self.stopped

    def line(self) -> str:
        """Why the month stopped, with what it has spent so far (the calls in flight at the
        stop settle after it: read it again once the batch has drained)."""
        return (
            f"{self.label}: stopped after {self.calls:,} calls and ${self.spent:,.4f} spent: {self.why}, "
            f"over {BUDGET_SETTING}={self.budget:g} (per asset and month); the answers received "
            "are cached, a rerun pays only for the rest"
        )


class BatchGuard:
    """``reserve`` before a call, ``settle`` after it (see the module docstring)."""

    def __init__(self, spending: Spending, calls: int) -> None:
        self.spending, self.left = spending, calls
        self.n, self.total, self.squares = 0, 0.0, 0.0
        self.check_at = MIN_ANSWERS

    def skip(self, requests: int) -> None:
        """Requests counted in ``left`` that the cache answers (a part of a sliced batch)."""
        with self.spending._lock:
            self.left = max(self.left - requests, 0)

    def reserve(self, worst: float, halted: Callable[[], bool] | None = None) -> None:
        """Hold ``worst`` for a call about to be sent. Where it does not fit beside the calls
        in flight, wait for them to settle (near the budget fewer calls fly at once: their
        real cost is usually well under their worst case); stop when it does not fit alone,
        or when the batch's answers project the month over the budget. ``halted`` (the
        batch's ``Halt``): once it says stop, the call is not sent (``Halted``), however
        long it waited; a halted batch's calls do not stop the month either."""
        s = self.spending
        with s._lock:
            while True:
                if s.stopped is not None:
                    raise s.stopped
                if halted is not None and halted():
                    raise Halted
                if s.spent + s.reserved + worst <= s.budget:
                    s.reserved += worst
                    s.in_flight += 1
                    return
                if s.in_flight == 0:
                    raise s._stop(f"the next call may cost up to ${worst:,.4f}, more than is left")
                s._lock.wait()

    def settle(self, worst: float, cost: float) -> None:
        s = self.spending
        with s._lock:
            s.in_flight -= 1
            s.reserved = s.reserved - worst if s.in_flight else 0.0  # no drift left behind
            s.spent += cost
            s.calls += 1
            self.left = max(self.left - 1, 0)
            self.n += 1
            self.total += cost
            self.squares += cost * cost
            if self.n >= self.check_at:
                self.check_at *= 2
                self._project()
            s._lock.notify_all()

    def hold_job(self, estimate: float, least: float, requests: int) -> float:
        """Reserve for a Batch-API job of ``requests`` requests about to be submitted: all
        of them at once, and no stopping it halfway. Its ``estimate`` (input and the
        plan's output per request) where that fits beside what is spent and held, else its
        ``least`` (its input: the rule that lets a run start, ``llm.plan.check_budget``);
        the month stops when not even that fits. Returns what it holds (``settle_job``)."""
        s = self.spending
        with s._lock:
            if s.stopped is not None:
                raise s.stopped
            for amount in (estimate, least):
                if s.spent + s.reserved + amount <= s.budget:
                    s.reserved += amount
                    s.in_flight += 1
                    return amount
            raise s._stop(
                f"a batch of {requests:,} requests costs at least ${least:,.4f} (its input), "
                "more than is left"
            )

    def settle_job(self, held: float | None, cost: float, requests: int) -> None:
        """A job's answers are in: its billed ``cost`` spent, what it held (``hold_job``;
        None for a job an earlier run submitted, held by nobody) given back."""
        s = self.spending
        with s._lock:
            if held is not None:
                s.in_flight -= 1
                s.reserved = s.reserved - held if s.in_flight else 0.0
            s.spent += cost
            s.calls += requests
            self.left = max(self.left - requests, 0)
            s._lock.notify_all()

    def _project(self) -> None:
        """(Under the lock.) Stop the month when the spending so far and the calls left at
        the low end of their cost per call (the mean less ``SPREADS`` errors) pass it."""
        s, mean = self.spending, self.total / self.n
        spread = math.sqrt(max(self.squares / self.n - mean * mean, 0.0) / self.n)
        low = s.spent + self.left * max(mean - SPREADS * spread, 0.0)
        if low > s.budget:
            s._stop(
                f"at the ${mean:,.6f} a call its {self.n:,} answers cost, its "
                f"{self.left:,} calls left bring the month to at least ${low:,.2f}"
            )


class Held:
    """One call under a guard: ``reserve`` on entering, ``settle`` on leaving with ``cost``
    (the worst case until the caller sets what the reply's ``usage`` bills; when the block
    raised, ``failed_cost``: nothing for a 4xx refusal, else the worst case). ``halted``:
    the batch's ``Halt``; a call whose batch (or a sibling) stopped while it waited for
    room is not sent (``Halted``)."""

    def __init__(
        self, guard: BatchGuard | None, worst: float, halted: Callable[[], bool] | None = None
    ) -> None:
        self.guard, self.worst, self.cost, self.halted = guard, worst, worst, halted

    def __enter__(self) -> Held:
        if self.guard is not None:  # BudgetExceeded, Halted: the call is not sent
            self.guard.reserve(self.worst, self.halted)
        return self

    def __exit__(self, kind, error, trace) -> None:
        if self.guard is not None:
            self.guard.settle(
                self.worst, self.cost if kind is None else failed_cost(error, self.worst)
            )


def failed_cost(error: BaseException | None, worst: float) -> float:
    """What a call that raised may have been billed: nothing when the server refused it
    (a 4xx status: nothing was generated), its worst case otherwise (a timeout, a dropped
    connection, a 5xx or a broken body may come after the tokens were generated)."""
    status = getattr(error, "status_code", None)
    return (
        0.0
        if isinstance(error, openai.APIStatusError) and status is not None and 400 <= status < 500
        else worst
    )


@contextlib.contextmanager
def spending(budget: float | None, label: str) -> Iterator[Spending | None]:
    """Hold the calls made in this block (this thread and the batches it starts) under
    ``budget``; ``None``: no limit, nothing held."""
    if budget is None:
        yield None
        return
    held = Spending(budget, label)
    token = _SPENDING.set(held)
    try:
        yield held
    finally:
        _SPENDING.reset(token)


def batch_guard(calls: int, requests: int | None = None) -> BatchGuard | None:
    """The guard for a batch about to make ``calls`` calls for ``requests`` distinct
    requests (the rest cached), or None outside ``spending``; inside ``one_batch`` the
    whole batch's guard. Call it in the batch's calling thread: a pool's threads do not
    see the context."""
    held = _SPENDING.get()
    if held is None:
        return None
    shared = _SHARED.get()
    if shared is None:
        return held.batch(calls)
    shared.skip((requests if requests is not None else calls) - calls)
    return shared


@contextlib.contextmanager
def one_batch(requests: int) -> Iterator[None]:
    """A batch asked in parts (``llm.sliced``): one guard, one projection, for all of them.
    ``requests``: its distinct requests, the most calls it can make (each part's cached
    ones are taken off as the part starts)."""
    held = _SPENDING.get()
    if held is None:
        yield
        return
    token = _SHARED.set(held.batch(requests))
    try:
        yield
    finally:
        _SHARED.reset(token)
