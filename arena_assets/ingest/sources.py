"""Finding and reading one month of raw files through fsspec (local folder or ``s3://``).

Layout: ``<raw_root>/<YYYY-MM>/**/<file>`` with one of the extensions in
:data:`RAW_EXTENSIONS` (any letter case: ``.JSONL``, ``.ndjson.gz``), and an optional model
registry at ``<raw_root>/models.json``. Hidden entries (``.name``) and underscore entries
(``_truth``, ``_tmp``) are skipped at any depth: the simulator keeps its ground truth there,
and writers keep in-flight files there. Nothing is skipped silently: :func:`scan_month`
lists every skipped file with the reason, and says which root and folder were read.

Readers yield *blocks* of physical lines (JSONL) or of ``(record_no, record)`` pairs
(JSON list, Parquet), never the whole file at once except for a JSON list, whose syntax
only allows parsing it whole.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import fsspec
import orjson
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

RAW_EXTENSIONS = (
    ".jsonl",
    ".jsonl.gz",
    ".ndjson",
    ".ndjson.gz",
    ".json",
    ".parquet",
    # the public releases published as CSV (lmsys-arena-human-preference-55k)
    ".csv",
    ".csv.gz",
)
# what a broken compressed stream raises (truncated: EOFError; corrupt: the others)
DECOMPRESSION_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)
SALVAGE_READ_BYTES = 1 << 16
# bytes read per block from a JSONL stream: large enough to amortise the split, small
# enough that a few blocks in flight stay far below the memory budget
BLOCK_BYTES = 16 << 20
PARQUET_BATCH_ROWS = 50_000
MONTH_NAME = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


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


def is_skipped(rel: str) -> bool:
    return any(part.startswith((".", "_")) for part in rel.split("/"))


def is_raw_file(name: str) -> bool:
    """A log file by its extension, in any letter case."""
    return name.lower().endswith(RAW_EXTENSIONS)


def file_version(info: dict[str, Any]) -> str:
    """What changes when a file is rewritten, from an fsspec listing entry: the ETag on S3
    (a rewritten object gets a new one), else the modification time."""
    etag = info.get("ETag") or info.get("etag")
    if etag:
        return str(etag).strip('"')
    for key in ("mtime", "LastModified", "last_modified", "created"):
        if info.get(key) is not None:
            value = info[key]
            return value.isoformat() if hasattr(value, "isoformat") else repr(value)
    return ""


@dataclass
class MonthListing:
    """What was looked at for one month: the root as read (absolute for a local path, so a
    wrong working directory shows), the month folder, whether it exists, the files taken
    and every file left out with the reason."""

    root: str
    folder: str
    folder_exists: bool
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path in month, why)
    # per file taken (URL): (size in bytes, version) as listed, see file_version
    stats: dict[str, tuple[int, str]] = field(default_factory=dict)

    def describe(self) -> str:
        if not self.folder_exists:
            return (
                f"month folder {self.folder} does not exist (raw root read: {self.root}); "
                "check ARENA_RAW_ROOT"
            )
        text = f"{len(self.files)} files under {self.folder}"
        if self.skipped:
            text += f"; {len(self.skipped)} skipped: " + ", ".join(
                f"{name} ({why})" for name, why in self.skipped[:20]
            )
        return text


def scan_month(raw_root: str, month: str, storage_options: dict | None = None) -> MonthListing:
    """The month's raw files (sorted full URLs; plain absolute paths when local), searched
    in sub-folders too, and the files skipped with their reason."""
    month_bounds_us(month)  # validates the name before touching storage
    fs, root = open_root(raw_root, storage_options)
    folder = f"{root}/{month}"
    listing = MonthListing(_to_url(fs, root) or "/", _to_url(fs, folder), False)
    fs.invalidate_cache(folder)  # s3fs keeps listings per filesystem object: see it as it is
    try:
        if not fs.isdir(folder):
            return listing
        found = fs.find(folder, detail=True)
    except FileNotFoundError:
        return listing
    listing.folder_exists = True
    keep = []
    for path in sorted(found):
        rel = path[len(folder) + 1 :] if path.startswith(folder + "/") else path
        if is_skipped(rel):
            listing.skipped.append((rel, "hidden or in-flight name (starts with . or _)"))
        elif not is_raw_file(rel):
            listing.skipped.append((rel, "not a log extension (" + ", ".join(RAW_EXTENSIONS) + ")"))
        else:
            keep.append(path)
    listing.files = [_to_url(fs, p) for p in keep]
    listing.stats = {
        _to_url(fs, p): (int(found[p].get("size") or 0), file_version(found[p])) for p in keep
    }
    return listing


def month_folders(raw_root: str, storage_options: dict | None = None) -> list[str]:
    """The ``YYYY-MM`` folders directly under the raw root, sorted (whatever the lake holds:
    what a re-ingest could read)."""
    fs, root = open_root(raw_root, storage_options)
    try:
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(root, detail=False)]
    except FileNotFoundError:
        return []
    return sorted(n for n in names if MONTH_NAME.fullmatch(n) and fs.isdir(f"{root}/{n}"))


def list_month_files(raw_root: str, month: str, storage_options: dict | None = None) -> list[str]:
    """Raw files of one month, sorted; an absent month folder gives ``[]`` (see
    :func:`scan_month` for what was skipped and which folder was read)."""
    return scan_month(raw_root, month, storage_options).files


def relative_name(raw_root: str, url: str, storage_options: dict | None = None) -> str:
    """``url`` relative to the raw root (what raw_logs.source_file holds)."""
    _fs, root = open_root(raw_root, storage_options)
    _, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    return path[len(root) + 1 :] if path.startswith(root + "/") else path


def file_kind(url: str) -> str:
    """'jsonl' (JSON lines, plain or gzipped), 'json' (a JSON list), 'parquet' or 'csv'."""
    low = url.lower()
    if low.endswith(".parquet"):
        return "parquet"
    if low.endswith((".csv", ".csv.gz")):
        return "csv"
    if low.endswith(".json"):
        return "json"
    return "jsonl"


class TruncatedStream(Exception):
    """A compressed file's stream broke at decompressed byte ``offset``; ``tail`` holds
    the bytes of the incomplete line before the break (the complete ones were yielded)."""

    def __init__(self, offset: int, tail: bytes, cause: BaseException) -> None:
        super().__init__(offset, cause)
        self.offset = offset
        self.tail = tail
        self.cause = cause


def compression_of(fs: Any, path: str) -> str | None:
    """ "gzip" for a file that starts with the gzip magic bytes, else None, whatever its name.

    A plain text file named ``.gz`` (a log shipper that forgot to compress) is read as
    the plain text it is, so each of its lines gets its own outcome; trusting the name
    would make the whole file one ``truncated_file`` reject at byte 0. The reverse (gzip
    data named ``.jsonl``) is read as gzip too."""
    with fs.open(path, "rb") as raw:
        return "gzip" if raw.read(2) == b"\x1f\x8b" else None


def _salvage(fs: Any, path: str, skip: int) -> tuple[bytes, BaseException | None]:
    """The decompressed bytes after the first ``skip`` up to a break, read again in small
    pieces: a large ``read`` that meets the break loses everything it had decompressed,
    whereas ``read1`` returns each piece as soon as it is decompressed."""
    pos = 0
    pieces: list[bytes] = []
    with fs.open(path, "rb", compression=compression_of(fs, path)) as stream:
        try:
            while True:
                piece = stream.read1(SALVAGE_READ_BYTES)
                if not piece:
                    return b"".join(pieces), None
                if pos + len(piece) > skip:
                    pieces.append(piece[max(0, skip - pos) :])
                pos += len(piece)
        except DECOMPRESSION_ERRORS as exc:
            return b"".join(pieces), exc


def iter_line_blocks(
    url: str, storage_options: dict | None = None, block_bytes: int = BLOCK_BYTES
) -> Iterator[list[bytes]]:
    """Physical lines of a (possibly gzipped) text file, in blocks, without line ends.

    A final line without a newline is still a line; a newline at the very end does not
    start another one (so ``b"a\\nb\\n"`` is two lines). ``\\r\\n`` endings need no care:
    the ``\\r`` is JSON whitespace. A compressed stream that breaks (truncated or corrupt
    gzip) yields its complete lines up to the break, then raises :class:`TruncatedStream`.
    """
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    broken: BaseException | None = None
    consumed = 0  # decompressed bytes taken from the stream
    with fs.open(path, "rb", compression=compression_of(fs, path)) as stream:
        rest = b""
        first = True
        while broken is None:
            try:
                buf = stream.read(block_bytes)
            except DECOMPRESSION_ERRORS as exc:
                buf, broken = _salvage(fs, path, consumed)
                broken = broken or exc
            if not buf:
                break
            consumed += len(buf)
            if first:  # a UTF-8 byte order mark (Windows tools) is not part of line 1
                buf = buf.removeprefix(b"\xef\xbb\xbf")
                first = False
            lines = (rest + buf).split(b"\n") if rest else buf.split(b"\n")
            rest = lines.pop()
            if lines:
                yield lines
    if broken is not None:
        raise TruncatedStream(consumed - len(rest), rest, broken)
    if rest:
        yield [rest]


def read_bytes(url: str, storage_options: dict | None = None) -> bytes:
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    with fs.open(path, "rb", compression=compression_of(fs, path)) as stream:
        return stream.read()


def iter_parquet_records(
    url: str, storage_options: dict | None = None, batch_rows: int = PARQUET_BATCH_ROWS
) -> Iterator[list[dict]]:
    """Rows of a Parquet file as dicts, in batches (row numbers are implied, 1-based)."""
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    with fs.open(path, "rb") as stream:
        for batch in pq.ParquetFile(stream).iter_batches(batch_size=batch_rows):
            yield batch.to_pylist()


def iter_csv_records(
    url: str, storage_options: dict | None = None, batch_rows: int = PARQUET_BATCH_ROWS
) -> Iterator[list[dict]]:
    """Rows of a CSV file with a header line, as dicts of strings, in batches (row numbers
    are implied, 1-based after the header). The stdlib reader: quoted fields may span lines
    (the 55k release's prompts do) and every value stays a string, as the file wrote it;
    pyarrow's reader would infer types from the first block and fail on a later one. A row
    with more or fewer fields than the header keeps them under the ``None`` key or as
    missing keys, for the adapter to reject."""
    csv.field_size_limit(1 << 30)  # one field may hold a whole conversation
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    with fs.open(path, "rb", compression="infer") as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.DictReader(text)
        batch: list[dict] = []
        for row in reader:
            batch.append(row)
            if len(batch) >= batch_rows:
                yield batch
                batch = []
        if batch:
            yield batch


def load_model_records(raw_root: str, storage_options: dict | None = None) -> list[dict] | None:
    """Entries of ``<raw_root>/models.json`` as ``{"name": …, …}`` dicts; ``None`` when absent.

    Accepts the documented list of ``{"name": …}`` objects, a plain list of names, or an
    object keyed by name. Anything else raises ``ValueError``: a broken registry is a
    configuration error, and guessing would silently reject (or admit) every model.
    """
    fs, root = open_root(raw_root, storage_options)
    path = f"{root}/models.json"
    if not fs.exists(path):
        return None
    try:
        with fs.open(path, "rb") as stream:
            data = orjson.loads(stream.read())
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"model registry {_to_url(fs, path)} is not valid JSON: {exc}") from exc
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


def load_model_registry(raw_root: str, storage_options: dict | None = None) -> set[str] | None:
    """Model names from ``<raw_root>/models.json``; ``None`` when there is no registry."""
    records = load_model_records(raw_root, storage_options)
    return None if records is None else {r["name"] for r in records}
