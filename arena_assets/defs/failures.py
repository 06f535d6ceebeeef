"""Every asset's and op's step: what it says when it fails on a known error, and that it
dies with its run.

``@one_line_failures`` goes under each ``@dg.asset`` / ``@dg.multi_asset`` / ``@dg.op`` of
the code location (``test_failures.py`` fails on one without it). It does two things:

- **A known error fails the step with its one line.** The project's explained errors
  (``errors.ArenaError``: a lake file missing, damaged or not writable, an endpoint that
  cannot serve, a setting, a month out of range, ...) become a ``dg.Failure`` whose
  description is that line and nothing else: no chained cause (a connection error's is
  270 lines of httpx and openai frames), so the UI's headline and the CLI's event say what
  to fix. A ``dg.Failure`` raised with a cause is trimmed the same way. With
  ``ARENA_DEBUG=true`` (the ``storage`` resource's ``debug``) the description goes on with
  the traceback behind the line (once: the cause is not chained as well). Any other
  exception is left as it is: an unknown error keeps its traceback.
- **The step dies with its run.** In a step's own process (the multiprocess executor), the
  kernel is asked to kill it when the run's process dies (``instance.die_with_parent_process``);
  the lake's write guard (``ArenaStorage.lake``) refuses a write once the run has ended.
"""

from __future__ import annotations

import functools
import inspect
import traceback
from collections.abc import Callable
from typing import Any

import dagster as dg

from arena_assets.errors import ArenaError
from arena_assets.instance import die_with_parent_process

MARK = "one_line_failures"  # the attribute that says a compute function is wrapped


def _debug(kwargs: dict[str, Any]) -> bool:
    storage = kwargs.get("storage")
    return bool(getattr(storage, "debug_enabled", False))


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)).rstrip()


def one_line(exc: BaseException, debug: bool) -> dg.Failure | None:
    """The failure to raise instead of ``exc``, or None to let ``exc`` go as it is."""
    if isinstance(exc, dg.Failure):
        cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if cause is None:
            return None
        description = exc.description or ""
        if debug:
            description = f"{description}\n\n{_trace(cause)}"
        return dg.Failure(
            description=description, metadata=exc.metadata, allow_retries=exc.allow_retries
        )
    if isinstance(exc, ArenaError):
        description = str(exc)
        if debug:
            description = f"{description}\n\n{_trace(exc)}"
        return dg.Failure(description=description)
    return None


def one_line_failures(fn: Callable) -> Callable:
    """Wrap an asset's or op's compute function (see the module's documentation); its
    signature, and whether it is a generator, are kept for Dagster."""

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def step(*args, **kwargs):
            die_with_parent_process()
            try:
                yield from fn(*args, **kwargs)
            except Exception as exc:
                failure = one_line(exc, _debug(kwargs))
                if failure is None:
                    raise
                raise failure from None

    else:

        @functools.wraps(fn)
        def step(*args, **kwargs):
            die_with_parent_process()
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                failure = one_line(exc, _debug(kwargs))
                if failure is None:
                    raise
                raise failure from None

    setattr(step, MARK, True)
    return step
