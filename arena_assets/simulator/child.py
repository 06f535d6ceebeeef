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
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    # a parent killed with SIGKILL cannot stop its children: the kernel does (Linux only)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


@contextmanager
def arena_process(seed: int, truth_root: str | None, latency: float = 0.0,
                  startup_timeout: float = 120.0) -> Iterator[str]:
    """Start ``arena-assets serve-arena`` on a free loopback port, yield its base URL
    (``http://127.0.0.1:PORT/v1``), stop it on exit. ``truth_root``: the simulated raw
    root (its ``_truth`` labels prompts; its ``world.json`` gives the world when it has
    this seed). Raises ``RuntimeError`` with the server's own output when it does not come
    up."""
    cli = Path(sys.executable).with_name("arena-assets")
    cmd = [str(cli), "serve-arena", "--world-seed", str(seed), "--port", "0", "--host", "127.0.0.1"]
    if truth_root:
        cmd += ["--truth-root", str(truth_root)]
    if latency:
        cmd += ["--latency", str(latency)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    try:
        url = _wait_for_url(proc, startup_timeout)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _wait_for_url(proc: subprocess.Popen, timeout: float) -> str:
    """The base URL from the server's first line ("simulated arena at URL ..."): the line
    is printed once it listens, so reading it is the synchronisation (no polling)."""
    import selectors

    assert proc.stdout is not None
    seen: list[str] = []
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            if not sel.select(timeout):
                raise RuntimeError(f"the simulated arena did not start within {timeout:.0f} s: "
                                   + " ".join(seen)[-2000:])
            line = proc.stdout.readline()
            if not line:  # exited
                raise RuntimeError("the simulated arena exited before serving: "
                                   + "".join(seen)[-2000:] + f" (exit status {proc.wait()})")
            seen.append(line)
            if line.startswith("simulated arena at "):
                return line.split()[3]


def serving_env(url: str, settings: dict[str, str]) -> dict[str, str]:
    """The variables that point every LLM task set to ``simulated`` at ``url``:
    ``settings`` maps each task's base-URL variable to its current value."""
    from arena_assets.llm.simulated import SIMULATED

    return {name: url for name, value in settings.items() if value.strip() == SIMULATED}


def child_environment_ok() -> bool:
    """False where a child server cannot be used (no ``arena-assets`` beside the interpreter)."""
    return os.access(Path(sys.executable).with_name("arena-assets"), os.X_OK)
