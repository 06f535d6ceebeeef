"""Errors that say in one line what failed, where, the setting behind it and what to do.

- :class:`ArenaError` marks the project's own explained errors (a partition not in the
  lake, an endpoint that cannot serve, a month out of range, ...), mixed into each beside
  its built-in base (``FileNotFoundError``, ``ValueError``, ...). A Dagster step turns one
  into a failure whose description is that line (``defs/failures.py``); an `arena-assets`
  command prints it and exits 2. The traceback is shown only with ``ARENA_DEBUG=true``.
- :class:`SettingError` is a setting that cannot work, found when the code location
  loads. It is a ``SystemExit`` so that the Dagster CLI and `arena-assets` print its lines
  as they are, instead of a traceback of the code location's import (180-320 lines), and
  an ``Exception`` so that a Dagster code server (`dagster dev`, `dg dev`) reports it as
  the code location's load error in the UI instead of dying.
- :class:`StorageError` is a file of the lake, the LLM cache, the site or a release that
  cannot be read or written; :func:`storage_error` words it from the ``OSError`` behind it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator


class ArenaError(Exception):
    """An error whose message is the whole story: one line naming what failed, where, the
    setting behind it and what to do."""


# how a setting's line ends: where settings come from (envfile.py's rule)
FIX_SETTING = "fix it in .env or the shell"


class SettingError(SystemExit, ArenaError):
    """Settings that cannot work; one ``error: ...`` line per problem, each naming the
    variable, its value and what is allowed."""

    def __init__(self, *problems: str) -> None:
        self.problems = problems
        super().__init__("\n".join(f"error: {p}" for p in problems))

    def __str__(self) -> str:
        return str(self.code)


class StorageError(ArenaError, OSError):
    """A file that cannot be read or written: the message names the data (asset and month),
    the path, the setting that points there and what to do; ``errno`` is the cause's."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.errno = code

    def __str__(self) -> str:
        return str(self.args[0])


# what to do, by the cause's errno (reads and writes); {setting} names the root's variable
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_DENIED = (errno.EACCES, errno.EPERM)


def error_code(exc: BaseException) -> int | None:
    """The errno behind an I/O failure: an ``OSError``'s own, or the one a writer's error
    quotes (polars: "underlying IO error: [Errno 28] ..."); None when there is none."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno
    found = re.search(r"\[Errno (\d+)\]", str(exc))
    if found:
        return int(found.group(1))
    return errno.EACCES if isinstance(exc, PermissionError) else None


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its class name when it has none)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def storage_error(
    exc: BaseException,
    *,
    what: str,
    writing: bool,
    path: str,
    root: str,
    setting: str,
    where: str | None = None,
) -> StorageError:
    """``exc`` (an ``OSError``, or a reader's or writer's error quoting one) as one line:
    ``<what> not written: [Errno 28] No space left on device at <path> (<setting>=<root>):
    free space ...``. ``what`` names the data (``conversations 2024-02``), ``path`` the file
    or folder, ``setting`` the variable whose value ``root`` is (``where`` says it otherwise
    when the root is derived, e.g. the LLM cache under the lake)."""
    code = error_code(exc)
    reason = f"[Errno {code}] {os.strerror(code)}" if code is not None else first_line(exc)
    where = where or f"{setting}={root}"
    if code in _FULL:
        todo = f"free space there or point {setting} at a larger disk"
    elif code == errno.EROFS:
        todo = f"mount it read-write or point {setting} elsewhere"
    elif code in _DENIED:
        access = "writable" if writing else "readable"
        todo = f"make it {access} for this user or point {setting} elsewhere"
    else:
        todo = f"check that {'the folder can be written' if writing else 'the file can be read'}"
    kept = "; the previous version is kept" if writing else ""
    verb = "not written" if writing else "cannot be read"
    return StorageError(f"{what} {verb}: {reason} at {path} ({where}): {todo}{kept}", code)


def is_io_failure(exc: BaseException) -> bool:
    """An ``OSError``, or a reader's or writer's error quoting one ("[Errno 28] ...")."""
    return isinstance(exc, OSError) or "[Errno " in str(exc)


@contextlib.contextmanager
def storage_errors(
    *, what: str, writing: bool, path: str, root: str, setting: str, where: str | None = None
) -> Iterator[None]:
    """Within the block, an I/O failure is raised as ``storage_error``'s one line (the
    failing file, when the error names one, else ``path``); the project's own errors and
    any other exception go through as they are."""
    try:
        yield
    except ArenaError:
        raise
    except Exception as exc:
        if not is_io_failure(exc):
            raise
        raise storage_error(
            exc,
            what=what,
            writing=writing,
            path=getattr(exc, "filename", None) or path,
            root=root,
            setting=setting,
            where=where,
        ) from exc
