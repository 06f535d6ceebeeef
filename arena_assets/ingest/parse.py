"""Parse one month of raw files into ``raw_logs`` rows and ``raw_rejects`` rows.

Invariant, for any input bytes: every physical line (JSONL) or record (JSON list,
Parquet row) gets exactly one outcome, so ``lines_read == len(raw_logs) + len(rejects)``.
A validator bug cannot break it either: an unexpected exception becomes a ``wrong_type``
reject whose detail starts with ``internal error`` (the fuzz test asserts there are none).

Line-level checks, in order: empty_line (blank or whitespace), line_too_long,
invalid_utf8, invalid_json, not_an_object; then the format's checks (``validate.py``,
``adapters.py``); then ``duplicate_key`` (a JSON line that repeats a key with different
values, ``dupkeys.py``); ``duplicate_event_id`` last, so only an otherwise valid line can be
a duplicate, and the first occurrence in file order (files sorted by name) wins.

A compressed file whose stream breaks (truncated gzip) keeps its complete lines before the
break; what follows becomes one ``truncated_file`` reject with the byte offset, and the
month goes on (the ingest asset's blocking check then decides whether partial files are
allowed). Rejected lines are stored scrubbed (``clean/rejects.py``) with their user hash:
identities are blanked line by line, PII is redacted once per part (``frames.py``).

Streaming: ``iter_file_parts`` (and ``month.iter_parsed_files`` over a month) yields parts
of at most ``chunk_lines`` lines, so a caller writing one Parquet part per yield holds one
part in memory, whatever the month's size. The month-level drivers (serial, or a process
pool from ``parallel.py``) are in ``month.py``.
"""

from __future__ import annotations

import contextlib
import gc
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl
import pyarrow as pa

from arena_assets.clean.rejects import (
    blank_reject,
    blank_reject_line,
    scrub_reject,
    scrub_reject_line,
)
from arena_assets.contracts import FORGOTTEN_USER as FORGOTTEN_REASON
from arena_assets.contracts import MAX_LINE_BYTES
from arena_assets.errors import ArenaError

from . import sources
from .adapters import NATIVE, detect_format, matches_no_layout, row_function, unknown_layout_detail
from .dupkeys import conflicting_key
from .frames import RowBuffer
from .validate import Checker, Reject, Row, short, tname


class UnreadableFileError(ArenaError, RuntimeError):
    """A file that cannot be read as a whole (corrupt Parquet, I/O error).

    Lines are rejected one by one, but a file whose bytes cannot be decompressed or
    decoded has no lines to account for; stopping with the file named is safer than
    silently ingesting a prefix of it.
    """


DEFAULT_CHUNK_LINES = 50_000  # ~100 MB of text per part: ~0.6 GB peak RSS measured
_NESTED_FIELDS = ("state", "states", "models")


@dataclass
class ParsedPart:
    """Rows and rejects of one file, or of one chunk of a large file."""

    source_file: str
    source_format: str
    part: int
    raw_logs: pl.DataFrame
    rejects: pl.DataFrame
    # lines (or records) taken from the file for this part, counted as they are read, not
    # derived from the outcomes: the conservation check compares the two
    lines_read: int

    def reason_counts(self) -> dict[str, int]:
        return reason_counts(self.rejects)


@dataclass
class FileCounts:
    source_file: str
    source_format: str
    lines_read: int = 0
    accepted: int = 0
    rejected: int = 0


@dataclass
class ParsedMonth:
    month: str
    raw_logs: pl.DataFrame
    rejects: pl.DataFrame
    lines_read: int
    files: list[FileCounts] = field(default_factory=list)

    def reason_counts(self) -> dict[str, int]:
        return reason_counts(self.rejects)


def reason_counts(rejects: pl.DataFrame) -> dict[str, int]:
    """Rejects per reason, most frequent first."""
    return dict(Counter(rejects["reason"].to_list()).most_common())


def partial_files(rejects: pl.DataFrame) -> list[str]:
    """One line per file whose compressed stream broke: the file, its last good line and
    where the break is (from the ``truncated_file`` rejects)."""
    cut = rejects.filter(pl.col("reason") == "truncated_file")
    return [
        f"{name}: last good line {line_no - 1}; {detail}"
        for name, line_no, detail in cut.select("source_file", "line_no", "detail").iter_rows()
    ]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while parsing: decoded JSON holds no cycles (reference counting
    frees it), yet millions of fresh containers keep triggering full collections that scan
    every retained object — measured at 40% of parse time. Never held across a yield."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def raw_text(line: bytes) -> str:
    """What raw_rejects keeps of a line: the whole line scrubbed (user fields and PII
    blanked, see ``clean/rejects.py``), then cut to REJECT_RAW_CHARS."""
    return scrub_reject_line(line, "")[1]


def _decoded(line: bytes) -> str:
    return line.decode("utf-8", "replace")  # invalid UTF-8 too: what blank_reject_line reads


def _record_json(record: Any) -> str:
    try:
        return orjson.dumps(record, default=str, option=orjson.OPT_NON_STR_KEYS).decode(
            "utf-8", "replace"
        )
    except TypeError:
        return short(record)


def record_text(record: Any) -> str:
    return scrub_reject(_record_json(record), "")[1]


def _undecodable(line: bytes, exc: Exception) -> Reject:
    if not line.strip():
        return Reject("empty_line", "blank line")
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as err:
        return Reject("invalid_utf8", f"byte {err.start}: {err.reason}")
    return Reject("invalid_json", str(exc)[:200])


def _decode_nested(record: dict) -> dict:
    """Parquet rows may carry state/states/models as JSON strings: decode them."""
    for key in _NESTED_FIELDS:
        value = record.get(key)
        if type(value) is str:
            try:
                record[key] = orjson.loads(value)
            except orjson.JSONDecodeError:
                raise Reject("invalid_json", f"{key} is a string but not JSON") from None
    states = record.get("states")
    if type(states) is list and any(type(s) is str for s in states):
        try:
            record["states"] = [orjson.loads(s) if type(s) is str else s for s in states]
        except orjson.JSONDecodeError:
            raise Reject("invalid_json", "a state is a string but not JSON") from None
    return record


class FileParser:
    """Turns the lines or records of one file into a RowBuffer, one outcome per unit."""

    def __init__(
        self, checker: Checker, source_file: str, seen: set[str], source_format: str | None = None
    ) -> None:
        self.checker = checker
        self.source_file = source_file
        self.seen = seen
        self.source_format = source_format or NATIVE
        self.row_of = self._detect if source_format is None else self._dispatch(source_format)
        self.buf = RowBuffer()
        self.next_no = 1
        self.part_start = 1
        self.parts = 0

    def _dispatch(self, fmt: str) -> Any:
        return row_function(fmt, self.checker)

    def _detect(self, obj: dict) -> Row:
        self.source_format = detect_format(obj)
        self.row_of = self._dispatch(self.source_format)
        if matches_no_layout(obj):  # each missing_type reject then says what was seen
            self.row_of = _explained(self.row_of, unknown_layout_detail(obj))
        return self.row_of(obj)

    def _accept(self, line_no: int, row: Row) -> None:
        eid = row[0]
        if eid in self.seen:
            raise Reject(
                "duplicate_event_id", f"event_id {short(eid)} appeared earlier in the month"
            )
        self.seen.add(eid)
        self.buf.add(line_no, row)

    def _reject_text(self, line_no: int, reason: str, text: str, detail: str) -> None:
        """A reject of ``text`` (a line decoded, a record as JSON): its identities blanked;
        a forgotten user's line keeps no text at all (``forgotten_user``)."""
        detail, raw, user = blank_reject(text, detail, self.checker.user_hash)
        if user is not None and user in self.checker.forgotten:
            self.buf.reject(line_no, FORGOTTEN_REASON, "", "", user)
        else:
            self.buf.reject(line_no, reason, detail, raw, user)

    def feed_lines(self, lines: Iterable[bytes]) -> None:
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        buf = self.buf
        forgotten = self.checker.forgotten
        line_no = self.next_no - 1
        for line in lines:
            line_no += 1
            try:
                if len(line) > MAX_LINE_BYTES:
                    if not line.strip():
                        raise Reject("empty_line", "blank line")
                    raise Reject("line_too_long", f"{len(line)} bytes (max {MAX_LINE_BYTES})")
                try:
                    obj = loads(line)
                except decode_error as exc:
                    raise _undecodable(line, exc) from None
                if type(obj) is not dict:
                    raise Reject("not_an_object", f"JSON {tname(obj)}")
                row = self.row_of(obj)
                if forgotten and row[4] in forgotten:
                    buf.reject(line_no, FORGOTTEN_REASON, "", "", row[4])
                    continue
                dup = conflicting_key(line, obj)
                if dup is not None:
                    raise Reject(
                        "duplicate_key",
                        f"key {short(dup.key)} is repeated with "
                        f"different values {short(dup.values)}",
                    )
                self._accept(line_no, row)
            except Reject as rej:
                self._reject_text(line_no, rej.reason, _decoded(line), rej.detail)
            except Exception as exc:
                self._reject_text(
                    line_no,
                    "wrong_type",
                    _decoded(line),
                    f"internal error {type(exc).__name__}: {exc}"[:200],
                )
        self.next_no = line_no + 1

    def feed_truncated(self, cut: sources.TruncatedStream) -> None:
        """One reject row for what follows a broken compressed stream (``truncated_file``)."""
        line_no = self.next_no
        detail = (
            f"compressed stream broken at byte {cut.offset:,} of the decompressed data "
            f"({type(cut.cause).__name__}: {cut.cause}); lines 1..{line_no - 1} before "
            f"it were kept, the rest of the file is lost"
        )
        detail, raw, user = blank_reject_line(cut.tail, detail, self.checker.user_hash)
        # the reason stays: it says the file broke (a blocking check reads it), not who
        # wrote the tail; a forgotten user's tail keeps no text
        raw = "" if user is not None and user in self.checker.forgotten else raw
        self.buf.reject(line_no, "truncated_file", detail, raw, user)
        self.next_no = line_no + 1

    def feed_records(self, records: Iterable[Any], nested_json: bool = False) -> None:
        forgotten = self.checker.forgotten
        rec_no = self.next_no - 1
        for record in records:
            rec_no += 1
            try:
                if type(record) is not dict:
                    raise Reject("not_an_object", f"record is {tname(record)}")
                if nested_json:
                    record = _decode_nested(record)
                row = self.row_of(record)
                if forgotten and row[4] in forgotten:
                    self.buf.reject(rec_no, FORGOTTEN_REASON, "", "", row[4])
                    continue
                self._accept(rec_no, row)
            except Reject as rej:
                self._reject_text(rec_no, rej.reason, _record_json(record), rej.detail)
            except Exception as exc:
                self._reject_text(
                    rec_no,
                    "wrong_type",
                    _record_json(record),
                    f"internal error {type(exc).__name__}: {exc}"[:200],
                )
        self.next_no = rec_no + 1

    @property
    def pending(self) -> int:
        return self.buf.lines

    def take(self) -> ParsedPart:
        raw_logs, rejects = self.buf.frames(
            self.checker.month, self.source_file, self.source_format
        )
        self.buf = RowBuffer()
        self.parts += 1
        read, self.part_start = self.next_no - self.part_start, self.next_no
        return ParsedPart(
            self.source_file, self.source_format, self.parts - 1, raw_logs, rejects, read
        )


def _explained(row_of: Any, detail: str) -> Any:
    def row(obj: dict) -> Row:
        try:
            return row_of(obj)
        except Reject as rej:
            if rej.reason == "missing_type":
                raise Reject("missing_type", detail) from None
            raise

    return row


def iter_units(url: str, storage_options: dict | None) -> Iterator[tuple[str, list]]:
    """('lines', [bytes]) or ('records', [obj]) / ('rows', [dict]) blocks of one file."""
    kind = sources.file_kind(url)
    if kind == "parquet":
        for batch in sources.iter_parquet_records(url, storage_options):
            yield "rows", batch
    elif kind == "csv":
        for batch in sources.iter_csv_records(url, storage_options):
            yield "records", batch
    elif kind == "json":
        data = sources.read_bytes(url, storage_options)
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            value = None  # not one JSON document: read it as JSON lines instead
        if value is None:
            lines = data.split(b"\n")
            if lines and not lines[-1]:
                lines.pop()
            yield "lines", lines
        else:
            yield "records", value if type(value) is list else [value]
    else:
        yield from (("lines", block) for block in sources.iter_line_blocks(url, storage_options))


def iter_file_parts(
    url: str,
    source_file: str,
    checker: Checker,
    seen: set[str],
    *,
    storage_options: dict | None = None,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
) -> Iterator[ParsedPart]:
    """Parts of one file, none over ``chunk_lines``; at least one (maybe empty) per file."""
    if chunk_lines < 1:
        raise ValueError(f"chunk_lines must be at least 1, got {chunk_lines}")
    parser = FileParser(checker, source_file, seen)
    units = _fitting_slices(iter_units(url, storage_options), parser, chunk_lines)
    while True:
        # the GC stays paused from one yield to the next: re-enabling it between blocks
        # would run a full collection over the part's buffered rows each time
        try:
            with gc_paused():
                part = _next_part(parser, units, chunk_lines)
        except (OSError, EOFError, zlib.error, pa.ArrowException) as exc:
            good = parser.next_no - 1
            where = f"after line {good}" if good else "before its first line"
            raise UnreadableFileError(
                f"{source_file}: unreadable {where}: {type(exc).__name__}: {exc}"
            ) from exc
        if part is None:
            return
        yield part


def _fitting_slices(
    units: Iterator[tuple[str, list]], parser: FileParser, chunk_lines: int
) -> Iterator[tuple[str, list]]:
    """Blocks cut so that each fills the parser's current part at most (lazy: it reads
    ``parser.pending`` after the previous slice was fed)."""
    for kind, block in units:
        start = 0
        while start < len(block):
            stop = start + chunk_lines - parser.pending
            yield kind, block if start == 0 and stop >= len(block) else block[start:stop]
            start = stop


def _next_part(
    parser: FileParser, units: Iterator[tuple[str, list]], chunk_lines: int
) -> ParsedPart | None:
    try:
        for kind, block in units:
            if kind == "lines":
                parser.feed_lines(block)
            else:
                parser.feed_records(block, nested_json=kind == "rows")
            if parser.pending >= chunk_lines:
                return parser.take()
    except sources.TruncatedStream as cut:
        # the complete lines before the break were fed; the rest is one reject row
        parser.feed_truncated(cut)
    if parser.pending or parser.parts == 0:
        return parser.take()
    return None


def parse_lines(
    lines: Iterable[bytes],
    source_file: str,
    month: str,
    *,
    salt: str,
    known_models: set[str] | None = None,
    source_format: str | None = None,
    forgotten: frozenset[str] = frozenset(),
) -> ParsedPart:
    """Parse in-memory lines (tests, small tools); the format is detected unless given."""
    parser = FileParser(
        Checker(month, salt, known_models, forgotten), source_file, set(), source_format
    )
    with gc_paused():
        parser.feed_lines(lines)
        return parser.take()
