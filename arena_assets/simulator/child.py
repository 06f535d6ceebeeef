"""The simulated arena in a child process, for commands that make many LLM calls.

Why a child process: started inside the process that calls it (``base_url=simulated``),
the simulated server and the ``openai`` client share one interpreter lock, and at the
demo's concurrency their threads spend as much CPU handing the lock over as on the calls
(a demo month's labels: 35 s wall, 42 CPU-s in one process; 23 s and 32 CPU-s with the
server in its own process). A real endpoint is another process too, so this is also the
more faithful set-up. ``arena-assets demo`` uses it; ``make ui`` and the tests keep the
in-process arena, whose call counters they read directly. No Dagster here.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _death_signal(parent: int):
    """A ``preexec_fn`` that has the kernel SIGTERM the child when ``parent`` dies (a parent
    killed with SIGKILL cannot stop its children; Linux only). libc is looked up here, in
    the parent, so the forked child only calls it; a parent that died between the fork and
    the call is caught by the ppid check."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def arm() -> None:  # pragma: no cover - runs in the child before exec
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)

    return arm


@contextmanager
def arena_process(
    seed: int, truth_root: str | None, latency: float = 0.0, startup_timeout: float = 120.0
) -> Iterator[str]:
    """Start ``arena-assets serve-arena`` on a free loopback port, yield its base URL
    (``http://127.0.0.1:PORT/v1``), stop it on exit. ``truth_root``: the simulated raw
    root (its ``_truth`` labels prompts; its ``world.json`` gives the world when it has
    this seed). Raises ``RuntimeError`` with the server's own output when it does not come
    up within ``startup_timeout`` seconds."""
    cli = Path(sys.executable).with_name("arena-assets")
    cmd = [str(cli), "serve-arena", "--world-seed", str(seed), "--port", "0", "--host", "127.0.0.1"]
    if truth_root:
        cmd += ["--truth-root", str(truth_root)]
    if latency:
        cmd += ["--latency", str(latency)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_death_signal(os.getpid()) if sys.platform == "linux" else None,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    tail: deque[str] = deque(maxlen=200)  # what the server said last, for an error message

    def drain() -> None:
        # read the pipe for the server's whole life: a server whose output nobody reads
        # blocks once the pipe is full (a traceback per failed request fills it)
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line)
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, name="arena-child-output", daemon=True).start()
    try:
        yield _wait_for_url(proc, lines, tail, startup_timeout)
    finally:
        stop_child(proc)


def stop_child(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """SIGTERM ``proc`` and reap it; SIGKILL if it has not exited within ``timeout``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_for_url(
    proc: subprocess.Popen, lines: queue.Queue[str | None], tail: deque, timeout: float
) -> str:
    """The base URL from the server's line "simulated arena at URL ...": it is printed once
    the server listens, so receiving it is the synchronisation (no polling)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise RuntimeError(
                f"the simulated arena did not start within {timeout:.0f} s: "
                + "".join(tail)[-2000:]
            ) from None
        if line is None:  # the server exited
            raise RuntimeError(
                "the simulated arena exited before serving: "
                + "".join(tail)[-2000:]
                + f" (exit status {proc.wait()})"
            )
        if line.startswith("simulated arena at "):
            return line.split()[3]


def child_environment_ok() -> bool:
    """False where a child server cannot be used (no ``arena-assets`` beside the interpreter)."""
    return os.access(Path(sys.executable).with_name("arena-assets"), os.X_OK)
