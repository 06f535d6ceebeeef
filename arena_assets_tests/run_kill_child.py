"""Child process for the killed-run tests: the real `dagster` CLI, stopped mid-write.

Usage: python -m arena_assets_tests.run_kill_child MARKER AT DAGSTER_ARGS...

The first Parquet row group written whose target path contains AT (e.g. ``conversations/_tmp``)
is written, then MARKER is created and the process waits forever inside the write: the
test kills it there with SIGKILL, leaving a half-written temporary file, a run that says
STARTED and the pool slot its step claimed. Run the CLI with the in-process executor so
the step is in this process.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq


def main() -> None:
    marker, at, args = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    original = pq.ParquetWriter.write_table

    def write_table(self, table, *a, **kw):
        original(self, table, *a, **kw)
        if at in str(getattr(self, "_arena_target", "")):
            marker.write_text("in the write")
            threading.Event().wait()  # until killed

    pq.ParquetWriter.write_table = write_table
    original_init = pq.ParquetWriter.__init__

    def init(self, where, *a, **kw):
        self._arena_target = getattr(where, "path", where)  # fsspec file objects know their path
        original_init(self, where, *a, **kw)

    pq.ParquetWriter.__init__ = init
    from dagster._cli import main as dagster_main

    sys.argv = ["dagster", *args]
    dagster_main()


if __name__ == "__main__":
    main()
