"""Where the site lives: a folder or an ``s3://`` prefix (any fsspec URL).

A month is written as its own folder, ``<root>/<YYYY-MM>/``, every file through a
temporary name and a rename (a crash leaves the previous file); files of an earlier build
that the new one no longer has (a model page, a board) are removed, so the folder is
exactly the build. The root's index and history are then rebuilt from the ``summary.json``
of every month folder present.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import fsspec

MONTH_FOLDER = re.compile(r"^\d{4}-\d{2}$")


@dataclass
class SiteRoot:
    url: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        self.fs, self.path = fsspec.core.url_to_fs(self.url, **self.storage_options)

    @property
    def is_local(self) -> bool:
        return "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple)
                          else (self.fs.protocol,))

    def write(self, relative: str, data: bytes) -> None:
        final = f"{self.path}/{relative}"
        folder = final.rsplit("/", 1)[0]
        self.fs.makedirs(folder, exist_ok=True)
        tmp = f"{folder}/.{final.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp"
        with self.fs.open(tmp, "wb") as fh:
            fh.write(data)
        self.fs.mv(tmp, final)

    def files(self, relative: str) -> list[str]:
        """Every file under ``relative`` (paths relative to it)."""
        base = f"{self.path}/{relative}".rstrip("/")
        if not self.fs.exists(base):
            return []
        return sorted(p[len(base) + 1:] for p in self.fs.find(base))

    def write_folder(self, relative: str, files: dict[str, bytes]) -> int:
        """Make ``<root>/<relative>/`` hold exactly ``files``; returns the bytes written."""
        stale = set(self.files(relative)) - set(files)
        for name, data in sorted(files.items()):
            self.write(f"{relative}/{name}", data)
        for name in sorted(stale):
            self.fs.rm(f"{self.path}/{relative}/{name}")
        return sum(len(d) for d in files.values())

    def months(self) -> list[str]:
        if not self.fs.exists(self.path):
            return []
        names = (p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(self.path, detail=False))
        return sorted(n for n in names if MONTH_FOLDER.match(n)
                      and self.fs.exists(f"{self.path}/{n}/summary.json"))

    def summaries(self) -> dict[str, dict]:
        out = {}
        for month in self.months():
            with self.fs.open(f"{self.path}/{month}/summary.json", "rb") as fh:
                out[month] = json.loads(fh.read())
        return out

    def page_url(self, month: str) -> str:
        """The month page's address (a file:// URL for a local root)."""
        if self.is_local:
            from pathlib import Path

            return (Path(self.path) / month / "index.html").resolve().as_uri()
        return f"{self.url}/{month}/index.html"


def publish_month(root: SiteRoot, month: str, files: dict[str, bytes],
                  site_name: str) -> int:
    """Write one month's folder, then the root pages from every month's summary."""
    from arena_assets.site.root import build_root

    written = root.write_folder(month, files)
    for name, data in build_root(root.summaries(), site_name).items():
        root.write(name, data)
    return written
