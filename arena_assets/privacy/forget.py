"""The right to be forgotten: remove every row of one user from every table of the lake.

Who: a user is named by their user id or IP address as the platform logs it (hashed here
with the salt exactly as ingest hashes it, ``Checker.user_hash``), or directly by their
salted ``user_hash``. Tables store only that hash, never the identity itself.

What: every partition of every table whose Parquet schema has a user column
(``USER_COLUMNS``: ``user_hash``, ``voter_hash``) is scanned; the tables are discovered
from the lake, not listed here, so a later table with such a column (labels, releases)
is covered without touching this module. Today that is ``raw_logs``, ``raw_rejects``
(ingest stores the hash of a rejected line's user when its text names one),
``conversations`` and ``battles``. Tables derived without user rows (leaderboards) are
not edited; they are recomputed from the forgotten battles (the caller rematerializes
the returned ``affected_months`` and every leaderboard month from the first of them).
Each rewritten partition goes through ``Lake.write`` (temporary file, then rename), so a
crash leaves either the old or the new partition, and running forget again finishes it.

The platform's raw files: they are the platform's copy, outside the lake, and ingest
reads them again whenever ``raw_logs`` is rematerialized, which would bring the user
back. So :func:`find_raw_lines` reports every raw line of the user (file and line
numbers), and with ``purge_raw`` the lines of JSON-lines files (plain or gzipped) are
replaced by empty lines, rewritten atomically: the other lines keep their numbers, and a
re-ingest rejects the blanks as ``empty_line`` with nothing left of the user. Parquet and
JSON-list files are reported but not rewritten (their rows cannot be blanked in place
without rewriting the platform's own columns); the report says so. Copilot Arena's records
(``ARENA_COMPLETIONS_ROOT``, read by ``completion_battles``) are the platform's files too:
the same scan and purge run over them (``completions_root``), their ``userId`` being an
identity field (``privacy.rejects.IDENTITY_KEYS``); their files are named
``completions:<path>`` in the report.
"""

from __future__ import annotations

import gzip
import uuid
from dataclasses import dataclass, field

import polars as pl
import pyarrow.parquet as pq

from arena_assets.ingest.sources import (
    TruncatedStream,
    file_kind,
    iter_line_blocks,
    open_root,
    relative_name,
    scan_month,
)
from arena_assets.ingest.validate import Checker
from arena_assets.privacy.rejects import blank_identities, user_of
from arena_assets.storage import Lake

USER_COLUMNS = ("user_hash", "voter_hash")


def user_hash_of(identity: str, salt: str) -> str:
    """The salted hash ingest stores for a user id or IP address (the same function)."""
    # any month: the hash does not depend on it
    return Checker("2000-01", salt, None).user_hash(identity)


@dataclass
class RawHit:
    source_file: str  # relative to the raw root, as raw_logs.source_file
    line_nos: list[int]
    purged: bool = False
    note: str = ""


@dataclass
class ForgetReport:
    user_hash: str
    dry_run: bool
    removed: dict[str, dict[str, int]] = field(default_factory=dict)  # table -> month -> rows
    tables_scanned: list[str] = field(default_factory=list)
    raw: list[RawHit] = field(default_factory=list)

    @property
    def affected_months(self) -> list[str]:
        return sorted({m for months in self.removed.values() for m, n in months.items() if n})

    @property
    def total_removed(self) -> int:
        return sum(n for months in self.removed.values() for n in months.values())

    def lines(self) -> list[str]:
        """A readable account (what the CLI prints)."""
        verb = "would remove" if self.dry_run else "removed"
        out = [f"user_hash {self.user_hash}: {verb} {self.total_removed} rows"]
        for table in self.tables_scanned:
            months = {m: n for m, n in self.removed.get(table, {}).items() if n}
            cells = ", ".join(f"{m}: {n}" for m, n in sorted(months.items())) or "none"
            out.append(f"  {table:<16} {cells}")
        out.append("affected months: " + (", ".join(self.affected_months) or "none"))
        for hit in self.raw:
            state = "blanked" if hit.purged else "NOT purged"
            out.append(f"  raw file {hit.source_file}: {len(hit.line_nos)} lines {state}"
                       + (f" ({hit.note})" if hit.note else ""))
        return out


def user_tables(lake: Lake) -> dict[str, dict[str, list[str]]]:
    """table -> month -> user columns present in that partition's schema (schemas may
    differ between months: a column added later is checked where it exists)."""
    found: dict[str, dict[str, list[str]]] = {}
    for asset in lake.assets():
        for month in lake.months(asset):
            with lake.fs.open(lake.partition_path(asset, month), "rb") as fh:
                names = pq.read_schema(fh).names
            cols = [c for c in USER_COLUMNS if c in names]
            if cols:
                found.setdefault(asset, {})[month] = cols
    return found


def _match(cols: list[str], user_hash: str) -> pl.Expr:
    return pl.any_horizontal([pl.col(c) == user_hash for c in cols]).fill_null(False)


def forget_in_lake(lake: Lake, user_hash: str, *, dry_run: bool = False) -> ForgetReport:
    """Remove the user's rows from every partition of every table with a user column."""
    report = ForgetReport(user_hash, dry_run)
    for table, months in user_tables(lake).items():
        report.tables_scanned.append(table)
        for month, cols in months.items():
            hits = lake.read(table, month, columns=cols).select(
                _match(cols, user_hash).sum()).item()
            report.removed.setdefault(table, {})[month] = int(hits or 0)
            if hits and not dry_run:
                frame = lake.read(table, month)
                lake.write(table, month, frame.filter(~_match(cols, user_hash)))
    return report


def _line_user_hash(line: bytes, checker: Checker) -> str | None:
    user = user_of(blank_identities(line.decode("utf-8", "replace"))[1])
    return None if user is None else checker.user_hash(user)


def find_raw_lines(raw_root: str, months: list[str], user_hash: str, salt: str, *,
                   identity: str | None = None, storage_options: dict | None = None
                   ) -> list[tuple[str, str, list[int], str]]:
    """(url, source_file, line numbers, note) of the raw lines of the user in ``months``.

    Lines are matched by hashing the identity field found in their text (as for rejects:
    escaped keys and broken JSON included). When the identity itself is known, lines that
    contain neither it nor a JSON escape are skipped without decoding (the common case).
    """
    checker = Checker("2000-01", salt, None)
    needle = identity.encode() if identity else None
    out = []
    for month in months:
        for url in scan_month(raw_root, month, storage_options).files:
            name = relative_name(raw_root, url, storage_options)
            if file_kind(url) != "jsonl":
                out.append((url, name, [], "Parquet / JSON list: not searched or rewritten; "
                                           "check it by hand"))
                continue
            found: list[int] = []
            note = ""
            no = 0
            try:
                for block in iter_line_blocks(url, storage_options):
                    for line in block:
                        no += 1
                        if needle is not None and needle not in line and b"\\u" not in line:
                            continue
                        if _line_user_hash(line, checker) == user_hash:
                            found.append(no)
            except TruncatedStream as cut:
                if _line_user_hash(cut.tail, checker) == user_hash:
                    found.append(no + 1)
                note = f"broken stream at byte {cut.offset}: the part after it cannot be read"
            if found or note:
                out.append((url, name, found, note))
    return out


def blank_raw_lines(url: str, line_nos: list[int], storage_options: dict | None = None) -> None:
    """Rewrite a JSON-lines file (plain or .gz) with those lines emptied; atomic rename."""
    wanted = set(line_nos)
    fs, path = open_root(url, storage_options)
    tmp = f"{path.rsplit('/', 1)[0]}/.forget-{uuid.uuid4().hex}"
    gz = path.lower().endswith(".gz")
    no = 0
    try:
        with fs.open(tmp, "wb") as raw_out:
            out = gzip.GzipFile(fileobj=raw_out, mode="wb", mtime=0) if gz else raw_out
            first = True
            for block in iter_line_blocks(url, storage_options):
                for line in block:
                    no += 1
                    if not first:
                        out.write(b"\n")
                    first = False
                    if no not in wanted:
                        out.write(line)
            out.write(b"\n")
            if gz:
                out.close()
        fs.mv(tmp, path)
    finally:
        if fs.exists(tmp):
            fs.rm(tmp)


def forget_user(lake: Lake, *, user_hash: str, raw_root: str | None = None, salt: str = "",
                identity: str | None = None, dry_run: bool = False, purge_raw: bool = False,
                storage_options: dict | None = None, completions_root: str | None = None) -> ForgetReport:
    """Forget one user in the lake, then find (and with ``purge_raw`` blank) their raw lines
    in the affected months, under the raw root and the Copilot Arena root. ``salt`` is
    needed to recognise raw lines (hash them)."""
    report = forget_in_lake(lake, user_hash, dry_run=dry_run)
    roots = [(r, p) for r, p in ((raw_root, ""), (completions_root, "completions:")) if r]
    for root, prefix in roots if salt else []:
        for url, name, line_nos, note in find_raw_lines(
                root, report.affected_months, user_hash, salt, identity=identity,
                storage_options=storage_options):
            hit = RawHit(prefix + name, line_nos, note=note)
            if purge_raw and line_nos and not dry_run and not note:
                blank_raw_lines(url, line_nos, storage_options)
                hit.purged = True
            report.raw.append(hit)
    return report
