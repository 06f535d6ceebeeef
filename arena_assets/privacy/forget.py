"""The right to be forgotten: remove one user from every table of the lake and the releases,
and keep them out of every later ingest.

Who: a user is named by their user id or IP address as the platform logs it (hashed here
with the salt exactly as ingest hashes it, ``Checker.user_hash``), or directly by their
salted ``user_hash``. Tables store only that hash, never the identity itself.

First, before anything is removed, the hash goes on the lake's forget list
(``ingest/forgotten.py``): every later ingest of any month and any source (native logs,
release files, Copilot Arena's records) rejects the user's lines as ``forgotten_user``
without their text, so a crash in the middle of a forget, or a re-ingest of raw files that
still hold the user, does not bring them back. The list is tied to the salt: a forget under
another salt than the list's stops there with one line (``ForgetListSaltError``).

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

The LLM answer cache: the answers computed from the user's prompts alone are deleted,
found through the key index the LLM steps keep beside the lake (``cache_keys``); an
answer to a request another user made too is kept.

The platform's raw files (``raw_files``): every month folder of the raw root is searched,
whatever the lake holds, and with ``purge_raw`` the user's lines are blanked, each file
rewritten atomically, and reported per file. Copilot Arena's records
(``ARENA_COMPLETIONS_ROOT``, read by ``completion_battles``) are the platform's files too:
the same search and purge run over them (``completions_root``), their ``userId`` being an
identity field (``clean.rejects.IDENTITY_KEYS``); their files are named
``completions:<path>`` in the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from arena_assets.ingest.forgotten import add_forgotten, load_forgotten, read_forget_list
from arena_assets.ingest.validate import Checker
from arena_assets.privacy import journal, releases
from arena_assets.privacy.cache_keys import CacheForget, forget_cached_answers
from arena_assets.privacy.footprint import (
    USER_COLUMNS,
    Footprint,
    find_footprint,
    lake_schemas,
    remove_footprint,
)
from arena_assets.privacy.journal import ForgetEntry
from arena_assets.privacy.raw_files import RawHit, blank_raw_file, find_raw_lines, rewritable
from arena_assets.privacy.releases import ReleaseTarget
from arena_assets.storage import Lake

__all__ = ["USER_COLUMNS", "ForgetReport", "RawHit", "forget_user", "user_hash_of", "user_tables"]


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
    newly_listed: bool = False  # put on the forget list by this forget (not already there)
    # raw root ("" or "completions:") -> (month folders, files searched, files holding the user)
    raw_searched: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    cache: CacheForget | None = None

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
        listed = "would add" if self.dry_run else "added" if self.newly_listed else "already on it"
        out.append(
            f"  forget list: {listed}; every later ingest of any month and source keeps "
            "the user out"
        )
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
        if self.cache is not None:
            out.extend(self.cache.lines(self.dry_run))
        for root, (months, files, found) in self.raw_searched.items():
            out.append(
                f"  raw files{' (' + root.rstrip(':') + ')' if root else ''}: searched {files} "
                f"files in {months} month folders, {found} hold the user's lines"
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
    cache_root: str | None = None,
    cache_storage_options: dict | None = None,
) -> ForgetReport:
    """Forget one user: on the forget list first (under ``salt``, the salt ingest hashes
    with), then out of the lake and the releases, out of the LLM answer cache under
    ``cache_root``, and their raw lines found in every month folder of ``raw_root`` and
    Copilot Arena's ``completions_root`` (named ``completions:<path>``), blanked with
    ``purge_raw``. Unless ``dry_run``, the forget is recorded in the lake's journal;
    ``plan_rebuild(months, edited)`` gives the partitions to rebuild (asset -> months) from
    the user's months and the tables edited (table -> months), stored in the journal for the
    recompute (without it nothing is planned)."""
    report = ForgetReport(user_hash, dry_run)
    if dry_run:
        if salt:  # the same one line as a real forget under another salt
            load_forgotten(lake, salt)
    else:  # before anything is removed: from here on no ingest lets the user back in
        report.newly_listed = add_forgotten(lake, [user_hash], salt) > 0
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
    if cache_root:
        report.cache = forget_cached_answers(
            lake,
            user_hash,
            cache_root,
            # rows of users on the list make no answer shared, whatever salt listed them
            forgotten=frozenset(read_forget_list(lake)["user_hash"].to_list()),
            storage_options=cache_storage_options,
            dry_run=dry_run,
        )
    roots = [(r, p) for r, p in ((raw_root, ""), (completions_root, "completions:")) if r]
    for root, prefix in roots if salt else []:
        search = find_raw_lines(
            root, user_hash, salt, identity=identity, storage_options=storage_options
        )
        holding = sum(1 for _, hit in search.hits if hit.line_nos)
        report.raw_searched[prefix] = (len(search.months), search.files, holding)
        for url, hit in search.hits:
            hit.source_file = prefix + hit.source_file
            if purge_raw and not dry_run and rewritable(hit):
                blank_raw_file(url, hit.line_nos, storage_options)
                hit.purged = True
            report.raw.append(hit)
    return report
