"""The in-process simulated arena as the default LLM endpoint (no key, no network).

An LLM resource whose base URL is the special value ``simulated`` resolves it here: the
simulated arena's OpenAI-compatible server (``arena_assets.simulator.start_endpoint``) is
started once per process and argument set, on a free loopback port, in a daemon thread,
and every later task of the process reuses it. So ``make demo``, ``make ui`` and the
schedule label and judge without a manual step. No Dagster here.
"""

from __future__ import annotations

import threading
from typing import Any

SIMULATED = "simulated"  # the base-URL value that selects this endpoint

_lock = threading.Lock()
_endpoints: dict[tuple, Any] = {}


def simulated_endpoint(truth_root: str | None, seed: int, latency: float = 0.0):
    """The running ``ArenaEndpoint`` for these arguments, started on first use (thread-safe).

    ``truth_root``: where the simulator wrote its hidden truth, ``<raw_root>/_truth``, or
    the raw root itself; absent, remote (``s3://``) or None is fine: the endpoint then
    reads the truth from the prompt text. ``seed``: the simulated world's seed (the one the
    raw logs were simulated with). ``latency``: seconds every request waits.
    """
    from pathlib import Path

    from arena_assets.simulator.api import start_endpoint
    from arena_assets.simulator.faults import Faults
    from arena_assets.simulator.truth import TRUTH_DIR

    root = None
    if truth_root and "://" not in str(truth_root):
        path = Path(truth_root)
        raw = path.parent if path.name == TRUTH_DIR else path  # the endpoint wants the raw root
        root = str(raw)  # may not exist yet: the endpoint re-reads the truth as months appear
    key = (root, int(seed), float(latency))
    with _lock:
        ep = _endpoints.get(key)
        if ep is None:
            faults = Faults(latency=float(latency)) if latency else None
            ep = start_endpoint(
                seed=int(seed),
                config=world_config(root, int(seed)),
                truth_root=root,
                faults=faults,
                port=0,
            )
            _endpoints[key] = ep
        return ep


def world_config(raw_root: str | None, seed: int):
    """The world the raw logs were simulated with (``_truth/world.json``: e.g. 120 models
    for a production-size month), when it has this seed; else the default world."""
    import json
    from pathlib import Path

    from arena_assets.simulator.config import WorldConfig
    from arena_assets.simulator.truth import TRUTH_DIR

    path = Path(raw_root or "") / TRUTH_DIR / "world.json"
    if raw_root is None or not path.is_file():
        return None
    world = json.loads(path.read_text())
    if world.get("seed") != seed:
        return None
    return WorldConfig(**world["config"])


def simulated_endpoint_url(truth_root: str | None, seed: int, latency: float = 0.0) -> str:
    """Base URL ``http://127.0.0.1:<port>/v1`` of the in-process simulated arena."""
    return simulated_endpoint(truth_root, seed, latency).base_url


_elsewhere: dict[str, int] = {}  # base URL of a simulated arena in another process -> seed


def served_elsewhere(url: str, seed: int) -> str:
    """``url``, remembered as a simulated arena serving world ``seed`` in another process
    (``ARENA_SIM_BASE_URL``: the demo's child arena), so that metadata and logs name it
    instead of showing a port that is gone once the demo ends."""
    with _lock:
        _elsewhere[url] = seed
    return url


def public_base_url(url: str) -> str:
    """``url`` as metadata and logs show it: a simulated arena's loopback address (a new
    free port every process, useless once the run ends) is named, not shown."""
    with _lock:
        for (_, seed, _latency), ep in _endpoints.items():
            if ep.base_url == url:
                return f"simulated (in-process arena, world seed {seed})"
        if url in _elsewhere:
            return f"simulated (arena in another process, world seed {_elsewhere[url]})"
    return url
