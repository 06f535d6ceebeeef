"""The simulated arena as a child process, handed to the runs by URL.

`make demo` and `make ui` need an endpoint for the LLM tasks set to ``simulated``; they
start `arena-sim serve` (the simulator's own program) on a free loopback port, read the URL
it prints and set ``ARENA_SIM_BASE_URL`` for the runs, exactly as an operator hands in a
real endpoint. The product never imports the simulator. A separate process is also the
faster set-up: inside the caller's process the server and the ``openai`` client would share
one interpreter lock (a demo month's labels: 35 s wall and 42 CPU-s in one process, 23 s
and 32 CPU-s with the server in its own). No Dagster here.
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
# the simulator's program, installed beside this interpreter (pyproject's [project.scripts])
ARENA_SIM = Path(sys.executable).with_name("arena-sim")


def death_signal(parent: int):
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
    """Start ``arena-sim serve`` on a free loopback port, yield its base URL
    (``http://127.0.0.1:PORT/v1``), stop it on exit. ``truth_root``: the simulated raw
    root (its ``_truth`` labels prompts; its ``world.json`` gives the world when it has
    this seed). Raises ``RuntimeError`` with the server's own output when it does not come
    up within ``startup_timeout`` seconds."""
    cmd = [str(ARENA_SIM), "serve", "--world-seed", str(seed), "--port", "0", "--host", "127.0.0.1"]
    if truth_root:
        cmd += ["--truth-root", str(truth_root)]
    if latency:
        cmd += ["--latency", str(latency)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=death_signal(os.getpid()) if sys.platform == "linux" else None,
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
    """False where a child server cannot be started (no ``arena-sim`` beside the interpreter)."""
    return os.access(ARENA_SIM, os.X_OK)


# the settings whose value ``simulated`` sends a task to the simulated arena
SIMULATED_TASK_SETTINGS = (
    "ARENA_LABELER_BASE_URL",
    "ARENA_EMBED_BASE_URL",
    "ARENA_JUDGE_BASE_URL",
    "ARENA_REWARD_BASE_URL",
)


def wants_simulated_arena(setting) -> bool:
    """Whether a task is set to ``simulated`` (``setting(name, default)`` reads the
    settings: the shell, then ``.env``) and no arena is named yet by ``ARENA_SIM_BASE_URL``."""
    from arena_assets.llm.endpoints import SIMULATED

    if setting("ARENA_SIM_BASE_URL", "").strip():
        return False
    candidates = setting("ARENA_CANDIDATES", "")
    return (
        any(setting(name, "").strip() == SIMULATED for name in SIMULATED_TASK_SETTINGS)
        or f'"{SIMULATED}"' in candidates
        or f"'{SIMULATED}'" in candidates
    )


@contextmanager
def simulated_arena_for_runs(
    setting, truth_root: str | None, seed: int | None = None
) -> Iterator[str | None]:
    """When a task wants the simulated arena and none is named, start one for the duration
    (world ``seed``, else ``ARENA_SIM_WORLD_SEED``; latency ``ARENA_SIM_LATENCY``; its truth
    under the local ``truth_root``) and set ``ARENA_SIM_BASE_URL`` in this process's environment,
    which the runs it starts inherit; yield the URL, or None when nothing was started."""
    if not wants_simulated_arena(setting) or not child_environment_ok():
        yield None
        return
    latency = setting("ARENA_SIM_LATENCY", "").strip()
    if seed is None:
        seed = int(setting("ARENA_SIM_WORLD_SEED", "7") or 7)
    with arena_process(seed, truth_root, float(latency) if latency else 0.0) as url:
        saved = os.environ.get("ARENA_SIM_BASE_URL")
        os.environ["ARENA_SIM_BASE_URL"] = url  # the runs' environment: the shell wins over .env
        try:
            yield url
        finally:
            if saved is None:
                os.environ.pop("ARENA_SIM_BASE_URL", None)
            else:
                os.environ["ARENA_SIM_BASE_URL"] = saved
