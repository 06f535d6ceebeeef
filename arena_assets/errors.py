"""Settings that cannot work stop the process with one line that names them.

Raised where a setting is read at load time (the partition range is fixed when the code
location loads): a ``SystemExit`` carries its message to the terminal as is, so the Dagster
CLI, `dg dev`'s code server and `arena-assets` print that line instead of a traceback of
the code location's import (180-320 lines).
"""

from __future__ import annotations


class SettingError(SystemExit):
    """A setting that cannot work; the message names the variable and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(f"error: {message}")
