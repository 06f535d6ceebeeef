"""The right to be forgotten: remove one user from every table of the lake and the releases.

Who: a user is named by their user id or IP address as the platform logs it (hashed here
with the salt exactly as ingest hashes it, ``Checker.user_hash``), or directly by their
salted ``user_hash``. Tables store only that hash, never the identity itself.

What: every partition of every lake table, found from its Parquet schema (``footprint``):
rows with the user's hash, rows naming one of their conversations, rows of a prompt only
they typed that month, and those prompts' text in example lists. The month releases under
``ARENA_RELEASE_ROOT`` are counted and rewritten (``releases``); a published one is listed
with a warning. Aggregates (battle cells, leaderboards) and everything else derived from the
user's rows are rebuilt afterwards by the assets' own code (``defs/privacy/rebuild.py``),
from the months recorded in the forget's journal (``journal``): a forget is resumable until
that rebuild is done. Each rewritten partition goes through ``Lake.write`` (temporary file,
then rename), so a crash leaves either the old or the new partition, and running forget
again finishes it.

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
identity field (``clean.rejects.IDENTITY_KEYS``); their files are named
``completions:<path>`` in the report.
"""

from __future__ import annotations

import gzip
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from arena_assets.clean.rejects import blank_identities, user_of
from arena_assets.ingest.sources import (
    TruncatedStream,
    file_kind,
    iter_line_blocks,
    open_root,
    relative_name,
    scan_month,
)
from arena_assets.ingest.validate import Checker
from arena_assets.privacy import journal, releases
from arena_assets.privacy.footprint import (
    USER_COLUMNS,
    Footprint,
    find_footprint,
    lake_schemas,
    remove_footprint,
)
from arena_assets.privacy.journal import ForgetEntry
from arena_assets.privacy.releases import ReleaseTarget
from arena_assets.storage import Lake

__all__ = ["USER_COLUMNS", "ForgetReport", "RawHit", "forget_user", "user_hash_of", "user_tables"]


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
    strings: dict[str, dict[str, int]] = field(default_factory=dict)  # list elements removed
    tables_scanned: list[str] = field(default_factory=list)
    raw: list[RawHit] = field(default_factory=list)
    releases: dict[str, dict[str, int]] = field(default_factory=dict)  # month -> kind -> rows
    published: list[str] = field(default_factory=list)  # months released AND published
    journal: ForgetEntry | None = None

    @property
    def affected_months(self) -> list[str]:
        found = {
            m for t in (self.removed, self.strings) for ms in t.values() for m, n in ms.items() if n
        }
        return sorted(found | set(self.journal.months if self.journal else ()))

    @property
    def total_removed(self) -> int:
        return sum(n for months in self.removed.values() for n in months.values())

    def lines(self) -> list[str]:
        """A readable account (what the CLI prints)."""
        verb = "would remove" if self.dry_run else "removed"
        out = [f"user_hash {self.user_hash}: {verb} {self.total_removed} rows"]
        for table in self.tables_scanned:
            months = {m: n for m, n in self.removed.get(table, {}).items() if n}
            strings = {m: n for m, n in self.strings.get(table, {}).items() if n}
            cells = ", ".join(f"{m}: {n}" for m, n in sorted(months.items()))
            cells += "".join(f", {m}: {n} prompt texts" for m, n in sorted(strings.items()))
            out.append(f"  {table:<22} {cells.lstrip(', ') or 'none'}")
        out.append("affected months: " + (", ".join(self.affected_months) or "none"))
        for month, counts in sorted(self.releases.items()):
            state = "would rewrite" if self.dry_run else "rewritten"
            out.append(
                f"  release {month}: {releases.describe(counts)} of the user's rows; {state}"
            )
        for month in self.published:
            out.append(
                f"warning: the {month} release was PUBLISHED (ARENA_RELEASE_PUBLISHED): the "
                f"published copy still holds {releases.describe(self.releases[month])} "
                "of the user's rows; replace it with the rewritten local folder"
            )
        for hit in self.raw:
            state = "blanked" if hit.purged else "NOT purged"
            out.append(
                f"  raw file {hit.source_file}: {len(hit.line_nos)} lines {state}"
                + (f" ({hit.note})" if hit.note else "")
            )
        return out


def user_hash_of(identity: str, salt: str) -> str:
    """The salted hash ingest stores for a user id or IP address (the same function)."""
    # any month: the hash does not depend on it
    return Checker("2000-01", salt, None).user_hash(identity)


def user_tables(lake: Lake) -> dict[str, dict[str, list[str]]]:
    """table -> month -> user columns present in that partition's schema (schemas may
    differ between months: a column added later is checked where it exists)."""
    found: dict[str, dict[str, list[str]]] = {}
    for table, months in lake_schemas(lake).items():
        for month, sch in months.items():
            if sch.users:
                found.setdefault(table, {})[month] = sch.users
    return found


def forget_in_lake(
    lake: Lake,
    user_hash: str,
    *,
    dry_run: bool = False,
    report: ForgetReport | None = None,
    found: tuple[dict, Footprint] | None = None,
) -> tuple[ForgetReport, Footprint]:
    """Remove the user from every partition of every table (see ``footprint``); ``found``:
    the lake's schemas and the user's footprint when already collected."""
    report = report or ForgetReport(user_hash, dry_run)
    schemas = found[0] if found else lake_schemas(lake)
    fp = found[1] if found else find_footprint(lake, schemas, user_hash)
    for table, months in schemas.items():
        keyed = any(sch.kind in ("user", "conversation", "prompt") for sch in months.values())
        for month, sch in months.items():
            gone = remove_footprint(lake, table, month, sch, fp, dry_run=dry_run)
            if keyed or gone.rows:
                report.removed.setdefault(table, {})[month] = gone.rows
            if gone.strings:
                report.strings.setdefault(table, {})[month] = gone.strings
        # tables a user can be in by key, and text tables where something was found
        if table in report.removed or table in report.strings:
            report.tables_scanned.append(table)
    return report, fp


def _line_user_hash(line: bytes, checker: Checker) -> str | None:
    user = user_of(blank_identities(line.decode("utf-8", "replace"))[1])
    return None if user is None else checker.user_hash(user)


def find_raw_lines(
    raw_root: str,
    months: list[str],
    user_hash: str,
    salt: str,
    *,
    identity: str | None = None,
    storage_options: dict | None = None,
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
                out.append(
                    (
                        url,
                        name,
                        [],
                        "Parquet / JSON list: not searched or rewritten; check it by hand",
                    )
                )
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


def forget_user(
    lake: Lake,
    *,
    user_hash: str,
    raw_root: str | None = None,
    salt: str = "",
    identity: str | None = None,
    dry_run: bool = False,
    purge_raw: bool = False,
    storage_options: dict | None = None,
    release: ReleaseTarget | None = None,
    plan_rebuild: Callable[[list[str], dict[str, list[str]]], dict[str, list[str]]] | None = None,
    completions_root: str | None = None,
) -> ForgetReport:
    """Forget one user in the lake and the releases, then find (and with ``purge_raw``
    blank) their raw lines in the affected months. ``salt`` is needed to recognise raw
    lines (hash them). Unless ``dry_run``, the forget is recorded in the lake's journal;
    ``plan_rebuild(months, edited)`` gives the partitions to rebuild (asset -> months) from
    the user's months and the tables edited (table -> months), stored in the journal for the
    recompute (without it nothing is planned). Raw lines are looked for under the raw root
    and Copilot Arena's ``completions_root`` (named ``completions:<path>``)."""
    report = ForgetReport(user_hash, dry_run)
    entry = None if dry_run else journal.for_user(lake, user_hash)
    schemas = lake_schemas(lake)
    fp = find_footprint(lake, schemas, user_hash)
    if entry is None and fp.months and not dry_run:
        entry = journal.new_entry(user_hash)
    if entry is not None:  # the months first: a crash from here on is resumed from them
        entry.months = sorted(set(entry.months) | set(fp.months))
        journal.save(lake, entry)
    months = entry.months if entry is not None else fp.months
    released = releases.released_months(release, months) if release is not None else []
    for month in released:  # counted before the lake forgets which conversations were theirs
        report.releases[month] = releases.count_in_release(
            release,
            month,
            user_hash,
            fp.conversations.get(month, set()),
            fp.exclusive_keys.get(month, set()),
        )
    report.published = [m for m in released if release.is_published(m)]
    forget_in_lake(lake, user_hash, dry_run=dry_run, report=report, found=(schemas, fp))
    if entry is not None:
        for table, by_month in (*report.removed.items(), *report.strings.items()):
            edited = {m for m, n in by_month.items() if n}
            entry.changed[table] = sorted(set(entry.changed.get(table, [])) | edited)
        for month in released:
            releases.rewrite_release(release, lake, month)
            entry.releases = sorted(set(entry.releases) | {month})
        entry.rebuild = (
            plan_rebuild(entry.months, entry.changed) if plan_rebuild is not None else {}
        )
        entry.state = "removed" if entry.pending() else "done"
        journal.save(lake, entry)
        report.journal = entry
    roots = [(r, p) for r, p in ((raw_root, ""), (completions_root, "completions:")) if r]
    for root, prefix in roots if salt else []:
        for url, name, line_nos, note in find_raw_lines(
            root,
            report.affected_months,
            user_hash,
            salt,
            identity=identity,
            storage_options=storage_options,
        ):
            hit = RawHit(prefix + name, line_nos, note=note)
            if purge_raw and line_nos and not dry_run and not note:
                blank_raw_lines(url, line_nos, storage_options)
                hit.purged = True
            report.raw.append(hit)
    return report
