"""In-flight files: temporary names that say who writes them, and a sweep of dead ones.

Every atomic write (a lake partition, an LLM cache chunk) goes to a temporary file in a
``_tmp/`` folder and is renamed into place. A writer killed between the two (SIGKILL, a
lost node, a full disk) leaves its temporary file behind, and nothing else ever looks at
``_tmp/`` again. So each temporary name carries its owner, ``<stem>.<host>~<pid>~<start>.<id>``
(``start``: the process's start time, so a recycled pid is not mistaken for the writer),
and :func:`sweep` deletes the files whose owner is gone:

- written on this host by a process that is no longer running: deleted at once;
- written on another host (a shared S3 lake) or by an older version without an owner in
  the name: deleted once older than ``FOREIGN_AFTER_S`` (a day), since liveness cannot be
  checked from here and no single write takes that long.

A live writer's file (a concurrent month, another run) is never touched.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from functools import lru_cache
from typing import Any

FOREIGN_AFTER_S = 24 * 3600
_SEP = "~"


@lru_cache(maxsize=1)
def _host() -> str:
    # dots would make the name ambiguous (the stem and the id are split on dots)
    return socket.gethostname().replace(".", "-").replace(_SEP, "-") or "host"


def _start_time(pid: int) -> int | None:
    import psutil  # a dagster dependency

    try:
        return int(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def owner_tag() -> str:
    """``host~pid~start`` of this process."""
    pid = os.getpid()
    return f"{_host()}{_SEP}{pid}{_SEP}{_start_time(pid) or 0}"


def temp_name(stem: str) -> str:
    """A temporary file name for ``stem`` owned by this process."""
    return f"{stem}.{owner_tag()}.{uuid.uuid4().hex[:12]}"


def owner_alive(name: str) -> bool | None:
    """True / False when the file's owner is a process of this host (running or not); None
    when the name has no owner or the owner is on another host."""
    parts = name.rsplit("/", 1)[-1].split(".")
    tag = next((p for p in parts if p.count(_SEP) == 2), None)
    if tag is None:
        return None
    host, pid, start = tag.split(_SEP)
    if host != _host() or not pid.isdigit():
        return None
    started = _start_time(int(pid))
    return started is not None and (start in ("0", str(started)))


def _modified(info: dict[str, Any]) -> float | None:
    for key in ("mtime", "LastModified", "last_modified", "created"):
        value = info.get(key)
        if value is not None:
            return value.timestamp() if hasattr(value, "timestamp") else float(value)
    return None


def sweep(fs: Any, folder: str, *, now: float | None = None) -> list[str]:
    """Delete the orphaned temporary files in ``folder`` (see module doc); returns them."""
    try:
        entries = fs.ls(folder, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return []
    now = time.time() if now is None else now
    removed = []
    for info in entries:
        if info.get("type") == "directory":
            continue
        path = info["name"]
        alive = owner_alive(path)
        if alive is None:
            changed = _modified(info)
            dead = changed is not None and now - changed > FOREIGN_AFTER_S
        else:
            dead = not alive
        if dead:
            try:
                fs.rm(path)
                removed.append(path)
            except FileNotFoundError:  # another sweeper was first
                pass
    return removed
