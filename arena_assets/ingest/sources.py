"""Finding and reading one month of raw files through fsspec (local folder or ``s3://``).

Layout: ``<raw_root>/<YYYY-MM>/**/<file>`` with one of the extensions in
:data:`RAW_EXTENSIONS`, and an optional model registry at ``<raw_root>/models.json``.
Hidden entries (``.name``) and underscore entries (``_truth``, ``_tmp``) are skipped at any
depth: the simulator keeps its ground truth there, and writers keep in-flight files there.

Readers yield *blocks* of physical lines (JSONL) or of ``(record_no, record)`` pairs
(JSON list, Parquet), never the whole file at once except for a JSON list, whose syntax
only allows parsing it whole.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import fsspec
import orjson
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

RAW_EXTENSIONS = (".jsonl", ".jsonl.gz", ".json", ".parquet")
# bytes read per block from a JSONL stream: large enough to amortise the split, small
# enough that a few blocks in flight stay far below the memory budget
BLOCK_BYTES = 16 << 20
PARQUET_BATCH_ROWS = 50_000


def month_bounds_us(month: str) -> tuple[int, int]:
    """[start, next month start) of ``YYYY-MM`` in UTC, as epoch microseconds."""
    try:
        year, mon = (int(p) for p in month.split("-"))
        start = dt.datetime(year, mon, 1, tzinfo=dt.UTC)
    except ValueError as exc:
        raise ValueError(f"month must be 'YYYY-MM', got {month!r}") from exc
    if len(month) != 7:
        raise ValueError(f"month must be 'YYYY-MM', got {month!r}")
    nxt = dt.datetime(year + mon // 12, mon % 12 + 1, 1, tzinfo=dt.UTC)
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    one = dt.timedelta(microseconds=1)
    return (start - epoch) // one, (nxt - epoch) // one


def open_root(raw_root: str, storage_options: dict | None = None) -> tuple[Any, str]:
    """(filesystem, root path without protocol and trailing slash)."""
    fs, root = fsspec.core.url_to_fs(raw_root, **(storage_options or {}))
    return fs, root.rstrip("/")


def _to_url(fs: Any, path: str) -> str:
    # local paths stay plain paths; remote ones keep their protocol so they can be reopened
    return path if isinstance(fs, LocalFileSystem) else fs.unstrip_protocol(path)


def _is_skipped(rel: str) -> bool:
    return any(part.startswith((".", "_")) for part in rel.split("/"))


def list_month_files(
    raw_root: str, month: str, storage_options: dict | None = None
) -> list[str]:
    """Raw files of one month, sorted; an absent month folder gives ``[]``.

    Returns full URLs (plain absolute paths for the local filesystem). Sub-folders are
    searched too (e.g. one folder per day).
    """
    month_bounds_us(month)  # validates the name before touching storage
    fs, root = open_root(raw_root, storage_options)
    folder = f"{root}/{month}"
    try:
        if not fs.isdir(folder):
            return []
        found = fs.find(folder)
    except FileNotFoundError:
        return []
    keep = []
    for path in found:
        rel = path[len(folder) + 1 :] if path.startswith(folder + "/") else path
        if _is_skipped(rel) or not path.endswith(RAW_EXTENSIONS):
            continue
        keep.append(path)
    return [_to_url(fs, p) for p in sorted(keep)]


def relative_name(raw_root: str, url: str, storage_options: dict | None = None) -> str:
    """``url`` relative to the raw root (what raw_logs.source_file holds)."""
    fs, root = open_root(raw_root, storage_options)
    _, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    return path[len(root) + 1 :] if path.startswith(root + "/") else path


def file_kind(url: str) -> str:
    """'jsonl' (plain or gzipped), 'json' (a JSON list) or 'parquet'."""
    if url.endswith(".parquet"):
        return "parquet"
    if url.endswith(".json"):
        return "json"
    return "jsonl"


def iter_line_blocks(
    url: str, storage_options: dict | None = None, block_bytes: int = BLOCK_BYTES
) -> Iterator[list[bytes]]:
    """Physical lines of a (possibly gzipped) text file, in blocks, without line ends.

    A final line without a newline is still a line; a newline at the very end does not
    start another one (so ``b"a\\nb\\n"`` is two lines). ``\\r\\n`` endings need no care:
    the ``\\r`` is JSON whitespace.
    """
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    with fs.open(path, "rb", compression="infer") as stream:
        rest = b""
        first = True
        while True:
            buf = stream.read(block_bytes)
            if not buf:
                break
            if first:  # a UTF-8 byte order mark (Windows tools) is not part of line 1
                buf = buf.removeprefix(b"\xef\xbb\xbf")
                first = False
            lines = (rest + buf).split(b"\n") if rest else buf.split(b"\n")
            rest = lines.pop()
            if lines:
                yield lines
        if rest:
            yield [rest]


def read_bytes(url: str, storage_options: dict | None = None) -> bytes:
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    with fs.open(path, "rb", compression="infer") as stream:
        return stream.read()


def iter_parquet_records(
    url: str, storage_options: dict | None = None, batch_rows: int = PARQUET_BATCH_ROWS
) -> Iterator[list[dict]]:
    """Rows of a Parquet file as dicts, in batches (row numbers are implied, 1-based)."""
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    with fs.open(path, "rb") as stream:
        for batch in pq.ParquetFile(stream).iter_batches(batch_size=batch_rows):
            yield batch.to_pylist()


def load_model_records(
    raw_root: str, storage_options: dict | None = None
) -> list[dict] | None:
    """Entries of ``<raw_root>/models.json`` as ``{"name": …, …}`` dicts; ``None`` when absent.

    Accepts the documented list of ``{"name": …}`` objects, a plain list of names, or an
    object keyed by name. Anything else raises ``ValueError``: a broken registry is a
    configuration error, and guessing would silently reject (or admit) every model.
    """
    fs, root = open_root(raw_root, storage_options)
    path = f"{root}/models.json"
    if not fs.exists(path):
        return None
    with fs.open(path, "rb") as stream:
        data = orjson.loads(stream.read())
    if isinstance(data, dict):
        records = [{"name": k, **(v if isinstance(v, dict) else {})} for k, v in data.items()]
    elif isinstance(data, list):
        records = [item if isinstance(item, dict) else {"name": item} for item in data]
    else:
        raise ValueError(f"{path}: expected a list of models, got {type(data).__name__}")
    bad = [r.get("name") for r in records if not isinstance(r.get("name"), str) or not r["name"]]
    if bad:
        raise ValueError(f"{path}: {len(bad)} entries without a model name, e.g. {bad[0]!r}")
    return records


def load_model_registry(
    raw_root: str, storage_options: dict | None = None
) -> set[str] | None:
    """Model names from ``<raw_root>/models.json``; ``None`` when there is no registry."""
    records = load_model_records(raw_root, storage_options)
    return None if records is None else {r["name"] for r in records}
