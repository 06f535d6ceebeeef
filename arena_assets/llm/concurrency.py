"""Batches asked at once without waste or runaway: ``concurrently`` runs several batches
side by side, ``endpoint_slots`` shares one endpoint's concurrency fairly between them, and
``Halt`` stops a batch's workers before their next call when it or a sibling fails.

Used by ``run_batch`` (``llm.batch``) and by batch loops of their own (the reward model's
scoring, ``evaluators.judges``).
"""

from __future__ import annotations

import collections
import contextvars
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

from arena_assets.llm.config import LLMTask
from arena_assets.llm.plan import recording

T = TypeVar("T")


class BatchCancelled(RuntimeError):
    """A batch of ``concurrently`` stopped because another one failed (that error is raised)."""


class Halted(Exception):
    """A call not made: its batch (or a sibling) stopped while it waited for a slot."""


class Halt:
    """Whether a batch's workers stop before their next call: after a failure of their own
    batch or of a batch asked at the same time (``concurrently``), or an interruption.
    ``run_batch`` and the batch loops of their own (the reward model's scoring) use it.
    Make it in the calling thread: a pool's threads do not see the caller's context."""

    def __init__(self) -> None:
        self._own = threading.Event()
        self._shared = _CANCEL.get()  # concurrently's event, None outside it

    def __call__(self) -> bool:
        return self._own.is_set() or self.by_sibling

    @property
    def by_sibling(self) -> bool:
        return self._shared is not None and self._shared.is_set()

    def fail(self) -> None:
        """This batch failed: the workers finish the call they are in and stop, here and in
        the batches asked at the same time (not once this batch has drained)."""
        self._own.set()
        if self._shared is not None:
            self._shared.set()

    def stop(self) -> None:
        """The caller was interrupted: this batch's workers stop after their call."""
        self._own.set()

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` (a batch job's next look), returning early, True, once
        this batch or a sibling is stopped."""
        if self._shared is None:
            return self._own.wait(seconds)
        end = time.monotonic() + seconds
        while not self():
            left = end - time.monotonic()
            if left <= 0:
                return False
            self._own.wait(min(left, 0.5))
        return True


_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "llm_cancel", default=None
)


class FairSlots:
    """``n`` calls in flight, handed over in the order they were asked for: a freed slot
    goes to the longest waiter, not back to the thread that freed it. A plain semaphore
    let a releasing worker take its slot straight back, so one batch could hold every slot
    until it drained while the batch beside it waited (seen under load: two batches on one
    endpoint ran one after the other). Used as ``with slots:``."""

    def __init__(self, n: int) -> None:
        self._lock = threading.Lock()
        self._free = n
        self._waiting: collections.deque[threading.Event] = collections.deque()

    def __enter__(self) -> FairSlots:
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return self
            handed = threading.Event()
            self._waiting.append(handed)
        handed.wait()  # set by __exit__ with the slot already ours
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()
            else:
                self._free += 1


_SLOTS: dict[tuple[str, int], FairSlots] = {}
_SLOTS_LOCK = threading.Lock()


def endpoint_slots(task: LLMTask) -> FairSlots:
    """The calls in flight to ``task``'s endpoint from this process, shared by every task
    that asks it with the same ``max_concurrency``: ten candidates served by one vLLM and
    answering at once keep to its limit, not ten times it. One batch alone never waits on
    it (its workers are ``max_concurrency``)."""
    key = (task.base_url.rstrip("/"), max(task.max_concurrency, 1))
    with _SLOTS_LOCK:
        return _SLOTS.setdefault(key, FairSlots(key[1]))


def concurrently(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run ``calls`` (each making ``run_batch`` calls: a candidate's answers, a judge's
    verdicts) at the same time, a thread each, and return their results in order.

    Why: a bench asks ten candidates and a month several judges; one after the other, each
    small batch drains on its own with the endpoint half idle (72 prompts at concurrency 64
    are two waves, the second of 8 calls: 720 answers took ~2x the bound's time). At the
    same time, calls to one endpoint share its concurrency (``endpoint_slots``): a freed
    slot goes to the call that has waited longest, so the endpoint stays full to the end,
    and different endpoints answer side by side. The first failure stops the others (their
    answers so far are cached) and is raised. In a planning context (``llm.plan``) the
    calls run one after the other, so the plan lists its batches in order.
    """
    if len(calls) < 2 or recording() is not None:
        return [call() for call in calls]
    cancel = threading.Event()
    failures: list[BaseException] = []  # in the order they happened
    lock = threading.Lock()

    def guarded(call: Callable[[], T]) -> T:
        _CANCEL.set(cancel)  # this thread's copy of the context
        try:
            return call()
        except BaseException as exc:
            cancel.set()
            with lock:
                failures.append(exc)
            raise

    pool = ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="batches")
    try:
        futures = [pool.submit(contextvars.copy_context().run, guarded, call) for call in calls]
        wait(futures)
    except BaseException:  # the run interrupted (Ctrl-C, Dagster's termination): stop them too
        cancel.set()
        raise
    finally:
        pool.shutdown(wait=True)  # each finishes the call it is in: no thread left behind
    real = [e for e in failures if not isinstance(e, BatchCancelled)]
    if failures:
        raise (real or failures)[0]  # the first failure, not what it cancelled
    return [f.result() for f in futures]
