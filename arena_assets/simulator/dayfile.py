"""One day's raw log file, written line by line (gzip output byte-identical on reruns)."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path


class DayFile:
    """One ``events-YYYY-MM-DD.jsonl[.gz]`` file, written line by line with a line counter."""

    def __init__(self, path: Path, compress: bool) -> None:
        self.raw = open(path, "wb")  # noqa: SIM115 - closed by close(), after the day's last line
        # mtime=0 and no file name in the header, so gzip output is byte-identical
        self.fh = (
            gzip.GzipFile(filename="", mode="wb", fileobj=self.raw, mtime=0, compresslevel=5)
            if compress
            else io.BufferedWriter(self.raw, buffer_size=1 << 20)
        )
        self.line_no = 0

    def write(self, line: bytes) -> int:
        self.fh.write(line + b"\n")
        self.line_no += 1
        return self.line_no

    def close(self) -> int:
        self.fh.close()
        if not self.raw.closed:
            self.raw.close()
        return os.path.getsize(self.raw.name)
