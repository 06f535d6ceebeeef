"""What the lake says when a partition cannot be read or written: one line naming the
partition (asset and month), the file, the setting that points there and what to do.

Readers and writers (polars, pyarrow, fsspec) say "parquet: File out of specification" or
"[Errno 13] Permission denied" without the partition, and often without the file; the
lake turns their errors into these, in one place (``Lake.read``, ``Lake.schema``,
``Lake.open_parquet``, the atomic write), so no call site has to. An error that is not
about the file (a column the caller asked for that the file lacks, a bug) stays as it was.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow.parquet as pq

from arena_assets.errors import ArenaError, first_line, is_io_failure, storage_error

# the functions below take the lake (``storage.lake.Lake``, which imports this module)
Lake = Any


class EmptyPartitionError(ArenaError, RuntimeError):
    """A write would replace a partition that holds rows with an empty one."""


class MissingPartitionError(ArenaError, FileNotFoundError):
    """A partition a step reads is not in the lake."""


class DamagedPartitionError(ArenaError, ValueError):
    """A partition file that is not readable Parquet (truncated, overwritten, bit rot)."""


class WriteRefused(ArenaError, RuntimeError):
    """A write whose writer may no longer write (its run ended, or the run's process died
    while this step went on): the partition is left as it was."""


# what decoders say about a file whose bytes are wrong (polars, pyarrow, the codecs)
_DAMAGE = re.compile(
    r"parquet|magic bytes|thrift|out of specification|corrupt|decompress|end of (stream|file)"
    r"|truncat|invalid page|snappy|zstd|lz4|\beof\b",
    re.IGNORECASE,
)


def where(lake: Lake) -> str:
    """The setting behind the lake's root, with its value: ``ARENA_LAKE_ROOT=./data/lake``."""
    return f"{lake.setting}={lake.root}"


def missing(lake: Lake, asset: str, month: str) -> MissingPartitionError:
    return MissingPartitionError(
        f"{asset} {month} is not in the lake ({lake.url(asset, month)}; {where(lake)}): "
        f"materialize {asset} for {month} first (or it was deleted, e.g. by retention)"
    )


def damaged(lake: Lake, asset: str, month: str, problem: str) -> DamagedPartitionError:
    return DamagedPartitionError(
        f"{asset} {month} is damaged: {lake.url(asset, month)} is not readable Parquet "
        f"({problem}; {where(lake)}): rematerialize {asset} for {month}"
    )


def footer_problem(lake: Lake, asset: str, month: str) -> str | None:
    """Why the partition's footer cannot be read (its first line), or None when it can."""
    try:
        with lake.fs.open(lake.partition_path(asset, month), "rb") as fh:
            pq.read_metadata(fh)
    except FileNotFoundError:
        raise
    except Exception as exc:  # any decoder's error: the footer is what a reader needs first
        return first_line(exc)
    return None


def read_error(
    lake: Lake, asset: str, month: str, exc: BaseException, columns: list[str] | None = None
) -> BaseException:
    """The error to raise for a failed read of one partition: missing, unreadable (an
    errno: permission, I/O), damaged (the footer, or a decoder's complaint about the
    bytes), else ``exc`` itself."""
    if isinstance(exc, ArenaError):
        return exc
    if isinstance(exc, FileNotFoundError):
        return missing(lake, asset, month)
    what = f"{asset} {month}"
    path = lake.url(asset, month)
    if isinstance(exc, OSError) and (exc.errno is not None or isinstance(exc, PermissionError)):
        return storage_error(
            exc, what=what, writing=False, path=path, root=lake.root, setting=lake.setting
        )
    try:
        problem = footer_problem(lake, asset, month)
    except FileNotFoundError:  # deleted meanwhile
        return missing(lake, asset, month)
    if problem is not None:
        return damaged(lake, asset, month, problem)
    if columns is not None:
        names = set(lake.schema(asset, month).names)
        if any(c not in names for c in columns):  # the caller's question, not the file
            return exc
    if _DAMAGE.search(str(exc)):  # a readable footer over pages that do not decode
        return damaged(lake, asset, month, first_line(exc))
    return exc


def write_error(lake: Lake, what: str, path: str, exc: BaseException) -> BaseException:
    """The error to raise for a failed write: an I/O failure on the lake (an ``OSError``
    about a file under its root, or a writer's error quoting an errno) as one line naming
    ``what``, the file and the setting; the lake's own errors, an I/O failure on another
    file (a raw file a streamed write reads) and anything else as they are."""
    if isinstance(exc, ArenaError) or not is_io_failure(exc):
        return exc
    filename = getattr(exc, "filename", None)
    if filename and not _on_the_way(str(filename).rstrip("/"), lake.folder("").rstrip("/")):
        return exc
    return storage_error(
        exc,
        what=what,
        writing=True,
        path=getattr(exc, "filename", None) or path,
        root=lake.root,
        setting=lake.setting,
    )


def _on_the_way(name: str, root: str) -> bool:
    """``name`` is the root, a file or folder under it, or a folder above it (a parent the
    lake had to create)."""
    return name == root or name.startswith(root + "/") or root.startswith(name + "/")
