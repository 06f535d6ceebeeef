"""Simulated arenas shared within one process: one per (raw root, world seed, latency).

The tests and the benchmarks start the arena here (on a free loopback port, in a daemon
thread) and hand its URL to the product as ``ARENA_SIM_BASE_URL``, as `arena-sim serve`
does for `make demo` and `make ui`; the product itself never starts one. Every later
request for the same arguments reuses the running arena, so its counters can be read.
"""

from __future__ import annotations

import threading
from typing import Any

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

    from arena_assets.simulator.config import WorldConfig
    from arena_assets.simulator.endpoint import ArenaEndpoint
    from arena_assets.simulator.faults import Faults
    from arena_assets.simulator.truth import TRUTH_DIR
    from arena_assets.simulator.world import World

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

            def world() -> World:  # the world of the logs under ``root``, read at first use
                return World.build(world_config(root, int(seed)) or WorldConfig(), int(seed))

            ep = ArenaEndpoint(world, port=0, faults=faults, truth_root=root).start()
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
