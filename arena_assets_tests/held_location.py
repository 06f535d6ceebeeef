"""The project's code location with one lake write held, for the killed-run tests.

    dagster job execute -m arena_assets_tests.held_location -j monthly_refresh ...

is the real code location (``arena_assets.definitions``); the step processes the
multiprocess executor starts import this module again, so the hold applies in them too.
With ``HELD_LOCATION_DIR=<folder>`` set, the write of a ``conversations`` partition, once
its temporary file is complete (closed) and before the lake renames it into place, writes
the step process's pid to ``<folder>/held`` and then blocks reading the FIFO
``<folder>/release`` until the test writes to it (no timer decides anything). With
``HELD_LOCATION_NO_DEATH_SIGNAL=1`` the step does not arm its parent-death signal, so that
the lake's write guard is tested alone.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from fsspec.implementations.local import LocalFileOpener

from arena_assets.definitions import defs

__all__ = ["defs"]

_FOLDER = os.environ.get("HELD_LOCATION_DIR")
_HELD: set[str] = set()
if _FOLDER:
    _exit = LocalFileOpener.__exit__

    def _held_exit(self: LocalFileOpener, *exc_info) -> None:
        """Leave the file's ``with`` block (closing it); a conversations partition's
        temporary file, now complete, then waits for the test before the lake goes on to
        rename it."""
        _exit(self, *exc_info)
        written = exc_info[0] is None and "w" in self.mode
        if not written or "/conversations/_tmp/" not in self.path or self.path in _HELD:
            return
        _HELD.add(self.path)
        (Path(_FOLDER) / "held").write_text(str(os.getpid()))
        with open(Path(_FOLDER) / "release") as fifo:
            fifo.read()

    LocalFileOpener.__exit__ = _held_exit

# where the code location's steps arm no death signal there is nothing to turn off
if (
    os.environ.get("HELD_LOCATION_NO_DEATH_SIGNAL")
    and importlib.util.find_spec("arena_assets.defs.failures") is not None
):
    from arena_assets.defs import failures

    failures.die_with_parent_process = lambda: None
