"""Where the site lives: a folder or an ``s3://`` prefix (any fsspec URL).

A month is written as its own folder, ``<root>/<YYYY-MM>/``, in an order that never lets a
reader (or the index) reach a page whose parts are missing (``write_order``): the files new
to the folder, then those replacing one (each: the leaves, CSS, JS, figures, downloads and
model pages, before the board pages), then the month's ``index.html``, then its
``summary.json`` (what the root's index reads), then the root's pages; files of an
earlier build that the new one no longer has (a model page, a board) are removed last, once
no page links them, so the folder is exactly the build. The root's index and history are
rebuilt from the ``summary.json`` of every month folder present, and rebuilt again if a
month appeared meanwhile.

No file is ever seen half written. On a local disk each goes through a temporary name and
a rename (a crash leaves the previous file). On an object store each is one PUT (s3fs: one
PutObject, or a multipart upload that appears only when completed), which S3 makes visible
whole or not at all; a temporary key would add nothing to that and cost a copy and a
delete per file, which a crash can leave half done (``.tmp`` objects on the public
site). ``test_site_publish.py`` crashes a build after each write and checks what a reader
can reach.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec

from arena_assets.errors import storage_errors

MONTH_FOLDER = re.compile(r"^\d{4}-\d{2}$")
ROOT_REBUILDS = 3  # times the root pages are rebuilt while other builds add months


def page_address(root_url: str, month: str, page: str = "index.html", public_url: str = "") -> str:
    """A page's address for readers: under ``public_url`` (where the site is served) when
    set, else a file:// URL for a local root, else the root's own URL."""
    if public_url:
        return f"{public_url.rstrip('/')}/{month}/{page}"
    root = root_url.rstrip("/")
    if "://" in root and not root.startswith("file://"):
        return f"{root}/{month}/{page}"
    return (Path(root.removeprefix("file://")) / month / page).resolve().as_uri()


def write_order(name: str, exists: bool = False) -> tuple[int, int, str]:
    """Sort key of a month folder's files: the files new to the folder, then those that
    replace one (leaves before board pages in each), then index.html, then summary.json.
    Nothing already published links a new file, so writing those first means every link of
    a replaced page finds a file (the old or the new one) wherever a build stops."""
    if name == "summary.json":
        return 3, 0, name
    if name == "index.html":
        return 2, 0, name
    return int(exists), int("/" not in name and name.endswith(".html")), name


@dataclass
class SiteRoot:
    url: str
    storage_options: dict[str, Any] = field(default_factory=dict)
    public_url: str = ""  # where readers reach the root (ARENA_SITE_PUBLIC_URL)

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        self.fs, self.path = fsspec.core.url_to_fs(self.url, **self.storage_options)

    @property
    def is_local(self) -> bool:
        return "file" in (
            self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        )

    def write(self, relative: str, data: bytes) -> None:
        """One file, whole or not at all; an I/O failure is one line naming the file and
        ARENA_SITE_ROOT."""
        final = f"{self.path}/{relative}"
        folder = final.rsplit("/", 1)[0]
        with storage_errors(
            what=f"site file {relative}",
            writing=True,
            path=final,
            root=self.url,
            setting="ARENA_SITE_ROOT",
        ):
            if not self.is_local:  # one PUT: the object appears whole or not at all
                self.fs.pipe_file(final, data)
                return
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
        return sorted(p[len(base) + 1 :] for p in self.fs.find(base))

    def write_folder(self, relative: str, files: dict[str, bytes]) -> list[str]:
        """Write ``files`` under ``<root>/<relative>/`` (in ``write_order``); returns the
        files already there that the new set lacks, for ``remove`` once nothing links them."""
        there = set(self.files(relative))
        for name in sorted(files, key=lambda n: write_order(n, n in there)):
            self.write(f"{relative}/{name}", files[name])
        return sorted(there - set(files))

    def remove(self, relative: str, names: list[str]) -> None:
        for name in names:
            self.fs.rm(f"{self.path}/{relative}/{name}")

    def months(self) -> list[str]:
        self.fs.invalidate_cache(self.path)
        if not self.fs.exists(self.path):
            return []
        names = (p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(self.path, detail=False))
        return sorted(
            n
            for n in names
            if MONTH_FOLDER.match(n) and self.fs.exists(f"{self.path}/{n}/summary.json")
        )

    def summaries(self, months: list[str] | None = None) -> dict[str, dict]:
        out = {}
        for month in self.months() if months is None else months:
            with self.fs.open(f"{self.path}/{month}/summary.json", "rb") as fh:
                out[month] = json.loads(fh.read())
        return out

    def page_url(self, month: str, page: str = "index.html") -> str:
        """A month page's address for readers (``page_address``)."""
        return page_address(self.url, month, page, self.public_url)


def month_changes(root: SiteRoot, month: str, files: dict[str, bytes]) -> dict[str, list[str]]:
    """What publishing ``files`` as ``month`` would do to the root's month folder, writing
    nothing: ``new`` files, ``replaced`` ones (other bytes), ``unchanged`` ones and
    ``removed`` ones (an earlier build's files the new one lacks)."""
    there = set(root.files(month))
    out: dict[str, list[str]] = {"new": [], "replaced": [], "unchanged": [], "removed": []}
    for name in sorted(files):
        if name not in there:
            out["new"].append(name)
        else:
            same = root.fs.cat_file(f"{root.path}/{month}/{name}") == files[name]
            out["unchanged" if same else "replaced"].append(name)
    out["removed"] = sorted(there - set(files))
    return out


def publish_month(root: SiteRoot, month: str, files: dict[str, bytes], site_name: str) -> int:
    """Write one month's folder, then the root pages from every month's summary on the
    root. The root pages are derived from what is there, so a build that lost a race with
    another month's (both read the months, the other wrote last) is set right by the next
    build; and here they are rebuilt while the months on the root change under us."""
    from arena_assets.site.root import build_root

    stale = root.write_folder(month, files)
    months = root.months()
    for _ in range(ROOT_REBUILDS):
        pages = build_root(root.summaries(months), site_name)
        for name in sorted(pages, key=write_order):
            root.write(name, pages[name])
        now = root.months()
        if now == months:
            break
        months = now
    # last: the old month pages and the old history stopped linking them only now
    root.remove(month, stale)
    return sum(len(d) for d in files.values())
