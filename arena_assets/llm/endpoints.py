"""The ``simulated`` endpoint name, as the product knows it: a URL handed in by configuration.

A task whose base URL is ``simulated`` calls the simulated arena serving at
``ARENA_SIM_BASE_URL``. The product never starts the arena itself: `arena-sim serve` (or
`make demo` and `make ui`, which start one as a child process, and the tests) serve it,
and the product meets it over HTTP exactly as it meets a real endpoint. What this module
adds is a name: logs, metadata and the lake say ``simulated (world seed N)`` instead of a
loopback port that is gone once the arena stops. No Dagster here.
"""

from __future__ import annotations

import threading

from arena_assets.errors import ArenaError

SIMULATED = "simulated"  # the base-URL value that selects the simulated arena

_lock = threading.Lock()
_named: dict[str, int] = {}  # base URL of a simulated arena -> its world seed


class SimulatedArenaUnset(ArenaError, ValueError):
    """A task set to ``simulated`` while no simulated arena URL is configured."""


def simulated_arena_url(url: str, seed: int, setting: str) -> str:
    """``url`` (``ARENA_SIM_BASE_URL``) for a task whose base URL is ``simulated``,
    remembered as an arena serving world ``seed`` so that logs name it; one clear line
    when it is empty. ``setting``: the task's variable, named in that line."""
    url = url.strip()
    if not url:
        raise SimulatedArenaUnset(
            f"{setting}=simulated needs ARENA_SIM_BASE_URL, the URL of a running simulated "
            "arena (`arena-sim serve --truth-root RAW_ROOT` prints it; `make demo` and "
            "`make ui` start one), or set "
            f"{setting} to a real OpenAI-compatible endpoint"
        )
    with _lock:
        _named[url] = seed
    return url


def public_base_url(url: str) -> str:
    """``url`` as metadata and logs show it: a simulated arena's loopback address is named
    by its world instead of shown."""
    with _lock:
        seed = _named.get(url)
    return url if seed is None else f"simulated (world seed {seed})"
