"""A forgotten user's lines in the platform's raw files: found, and blanked on request.

The raw files are the platform's copy, outside the lake. Ingest keeps a forgotten user out
of the lake whatever they hold (the forget list, ``ingest/forgotten.py``), but their text
stays in those files until it is purged. So the search does not depend on the lake: it
reads **every month folder** of the root (``YYYY-MM/``), also months the lake never held or
no longer holds (a completed forget, retention, a lake rebuilt elsewhere).

A line is the user's when the identity field ingest hashes (``user_id``, ``judge``, ``ip``,
Copilot Arena's ``userId``: ``clean.rejects.IDENTITY_KEYS``, in that preference) hashes to
their ``user_hash`` under the salt, found in the line's text as for rejected lines: escaped
keys, non-string values and broken JSON included. When the identity itself is known, lines
that contain neither it nor a JSON escape are skipped without decoding (the common case).

Blanking, each file rewritten atomically (a temporary file beside it, then a rename):

- JSON-lines files (plain or gzipped): the user's lines become empty lines, so every other
  line keeps its number (``raw_logs.line_no``) and a re-ingest rejects the blanks as
  ``empty_line`` with nothing of the user;
- JSON documents holding a list of records (FastChat's ``clean_battle_*.json``): the user's
  records become ``null``, so the others keep their numbers and a re-ingest rejects the
  nulls as ``not_an_object``;
- Parquet and CSV files are searched and reported, not rewritten: their rows cannot be
  blanked without rewriting the platform's own columns. The forget list keeps those rows
  out of every ingest; the report says to replace the file on the platform's side.
"""

from __future__ import annotations

import gzip
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

from arena_assets.clean.rejects import blank_identities, user_of
from arena_assets.ingest.parse import iter_units
from arena_assets.ingest.sources import (
    TruncatedStream,
    file_kind,
    iter_line_blocks,
    month_folders,
    open_root,
    read_bytes,
    relative_name,
    scan_month,
)
from arena_assets.ingest.validate import Checker

NOT_REWRITTEN = (
    "Parquet / CSV: not rewritten (the forget list keeps these rows out of every ingest); "
    "replace the file on the platform's side"
)


@dataclass
class RawHit:
    source_file: str  # relative to the raw root, as raw_logs.source_file
    line_nos: list[int]  # lines (records, rows) of the user, 1-based
    purged: bool = False
    note: str = ""


@dataclass
class RawSearch:
    """Where the search looked, and the files that hold the user."""

    months: list[str] = field(default_factory=list)  # month folders read
    files: int = 0  # raw files read
    hits: list[tuple[str, RawHit]] = field(default_factory=list)  # (url, hit)


def line_user_hash(text: str | bytes, checker: Checker) -> str | None:
    """The user hash of a line's (or record's JSON's) identity field, or None."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    user = user_of(blank_identities(text)[1])
    return None if user is None else checker.user_hash(user)


def _record_text(unit) -> str:
    return orjson.dumps(unit, default=str, option=orjson.OPT_NON_STR_KEYS).decode(
        "utf-8", "replace"
    )


def _jsonl_hits(
    url: str, user_hash: str, checker: Checker, needle: bytes | None, opts: dict | None
) -> tuple[list[int], str]:
    found: list[int] = []
    no = 0
    try:
        for block in iter_line_blocks(url, opts):
            for line in block:
                no += 1
                if needle is not None and needle not in line and b"\\u" not in line:
                    continue
                if line_user_hash(line, checker) == user_hash:
                    found.append(no)
    except TruncatedStream as cut:
        if line_user_hash(cut.tail, checker) == user_hash:
            found.append(no + 1)
        return found, f"broken stream at byte {cut.offset}: the part after it cannot be read"
    return found, ""


def _unit_hits(
    url: str, user_hash: str, checker: Checker, opts: dict | None
) -> tuple[list[int], str, bool]:
    """(numbers, note, rewritable) for a JSON document, Parquet or CSV file, read as ingest
    reads it (``ingest.parse.iter_units``: a ``.json`` file that is not one JSON document
    is JSON lines)."""
    found: list[int] = []
    no = 0
    kinds = set()
    for kind, block in iter_units(url, opts):
        kinds.add(kind)
        for unit in block:
            no += 1
            text = unit if kind == "lines" else _record_text(unit)
            if line_user_hash(text, checker) == user_hash:
                found.append(no)
    if kinds <= {"lines"}:
        return found, "", True
    if kinds == {"records"} and file_kind(url) == "json":
        return found, "", True
    return found, NOT_REWRITTEN, False


def find_raw_lines(
    raw_root: str,
    user_hash: str,
    salt: str,
    *,
    identity: str | None = None,
    storage_options: dict | None = None,
    months: list[str] | None = None,
) -> RawSearch:
    """Every raw file under ``raw_root`` that holds a line of the user, in every month
    folder (or only ``months``)."""
    checker = Checker("2000-01", salt, None)
    needle = identity.encode() if identity else None
    search = RawSearch(
        months=month_folders(raw_root, storage_options) if months is None else months
    )
    for month in search.months:
        for url in scan_month(raw_root, month, storage_options).files:
            search.files += 1
            name = relative_name(raw_root, url, storage_options)
            if file_kind(url) == "jsonl":
                found, note = _jsonl_hits(url, user_hash, checker, needle, storage_options)
            else:
                found, note, _ = _unit_hits(url, user_hash, checker, storage_options)
            if found or (note and note != NOT_REWRITTEN):
                search.hits.append((url, RawHit(name, found, note=note)))
    return search


def rewritable(hit: RawHit) -> bool:
    return bool(hit.line_nos) and not hit.note


def blank_raw_file(url: str, line_nos: list[int], storage_options: dict | None = None) -> None:
    """Blank those lines (records) of one file, atomically (see the module doc)."""
    if file_kind(url) == "json":
        data = read_bytes(url, storage_options)
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            value = None  # JSON lines under a .json name: blanked as lines
        if value is not None:
            wanted = {n - 1 for n in line_nos}
            records = value if type(value) is list else [value]
            kept = [None if i in wanted else r for i, r in enumerate(records)]
            out = kept if type(value) is list else kept[0]
            _replace(url, storage_options, iter([orjson.dumps(out)]), gz=False)
            return
    blank_raw_lines(url, line_nos, storage_options)


def blank_raw_lines(url: str, line_nos: list[int], storage_options: dict | None = None) -> None:
    """Rewrite a JSON-lines file (plain or .gz) with those lines emptied; atomic rename."""
    wanted = set(line_nos)

    def lines() -> Iterator[bytes]:
        no = 0
        first = True
        for block in iter_line_blocks(url, storage_options):
            for line in block:
                no += 1
                if not first:
                    yield b"\n"
                first = False
                if no not in wanted:
                    yield line
        yield b"\n"

    _replace(url, storage_options, lines(), gz=url.lower().endswith(".gz"))


def _replace(url: str, storage_options: dict | None, chunks: Iterator[bytes], *, gz: bool) -> None:
    fs, path = open_root(url, storage_options)
    tmp = f"{path.rsplit('/', 1)[0]}/.forget-{uuid.uuid4().hex}"
    try:
        with fs.open(tmp, "wb") as raw_out:
            out = gzip.GzipFile(fileobj=raw_out, mode="wb", mtime=0) if gz else raw_out
            for chunk in chunks:
                out.write(chunk)
            if gz:
                out.close()
        fs.mv(tmp, path)
    finally:
        if fs.exists(tmp):
            fs.rm(tmp)
