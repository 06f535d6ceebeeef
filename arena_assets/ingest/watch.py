"""Noticing new raw data: which months of the raw root differ from what was ingested.

A sensor (wired in the Dagster definitions) calls `list_raw_root` on every tick and
`plan_ticks` with the cursor it stored last time and the fingerprints of the files each
month was built from (its manifest in the lake, ``manifest.built_fingerprints``). A month's
fingerprint covers every raw file's name, size and version: the ETag on S3 (a rewritten
object gets a new one), the modification time on a local disk. A month whose files differ
from its manifest (added, gone, grown, rewritten) is requested, whatever the sensor saw
before: a sensor that never ticked while a month was built, or a new instance over an old
lake, still sees a change. A month without a manifest (built before manifests were kept, or
never) is compared with the cursor instead (`changed_months`). The cursor keeps one short
fingerprint per month, so it stays small whatever the number of files, and it is plain
JSON (what a Dagster sensor cursor stores as a string; `dumps_cursor` / `loads_cursor`).

A month folder that holds no raw file (empty, or only hidden / `_tmp` entries that writers
keep while uploading) is reported as skipped, never requested: materializing it would write
empty tables and copy the previous leaderboard. Files that are not raw data by the ingest
rules (`sources.RAW_EXTENSIONS`, hidden and underscore entries skipped) do not count, so a
sidecar written next to the logs does not trigger a run.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from arena_assets.ingest.sources import file_version, is_raw_file, is_skipped, open_root

CURSOR_VERSION = 1
_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


@dataclass(frozen=True, order=True)
class RawFile:
    name: str  # path relative to the raw root, e.g. "2024-02/events-2024-02-01.jsonl.gz"
    size: int
    version: str  # S3 ETag, or the local modification time


def list_raw_root(raw_root: str, storage_options: dict | None = None) -> dict[str, list[RawFile]]:
    """Every month folder under the raw root (``YYYY-MM``), with its raw files sorted by
    name; a month folder without raw files maps to ``[]``. Other top-level entries
    (``models.json``, ``_truth/``) are not months and are left out."""
    fs, root = open_root(raw_root, storage_options)
    # s3fs keeps directory listings between calls on the same (cached) filesystem object;
    # a sensor must see the storage as it is now
    fs.invalidate_cache(root)
    if not fs.exists(root):
        return {}
    months: dict[str, list[RawFile]] = {}
    for entry in fs.ls(root, detail=True):
        name = entry["name"].rstrip("/").rsplit("/", 1)[-1]
        if entry.get("type") == "directory" and _MONTH.match(name):
            months[name] = []
    for path, info in fs.find(root, detail=True).items():
        rel = path[len(root) + 1 :] if path.startswith(root + "/") else path
        month, _, inside = rel.partition("/")
        if month not in months or not inside or info.get("type") == "directory":
            continue
        if is_skipped(inside) or not is_raw_file(inside):
            continue
        months[month].append(RawFile(rel, int(info.get("size") or 0), file_version(info)))
    return {m: sorted(files) for m, files in sorted(months.items())}


def month_fingerprint(files: list[RawFile]) -> str:
    """A short digest of (name, size, version) of every file: equal iff nothing changed."""
    payload = json.dumps([[f.name, f.size, f.version] for f in sorted(files)]).encode()
    return hashlib.sha256(payload).hexdigest()[:24]


def loads_cursor(cursor: str | dict | None) -> dict:
    """A cursor from its stored form; None or "" is the first tick (nothing seen yet)."""
    if cursor is None or cursor == "":
        return {"version": CURSOR_VERSION, "months": {}}
    data = json.loads(cursor) if isinstance(cursor, str) else cursor
    if (
        not isinstance(data, dict)
        or data.get("version") != CURSOR_VERSION
        or not isinstance(data.get("months"), dict)
    ):
        raise ValueError(f"not a raw-root cursor of version {CURSOR_VERSION}: {cursor!r:.200}")
    return data


def dumps_cursor(cursor: dict) -> str:
    return json.dumps(cursor, sort_keys=True, separators=(",", ":"))


def changed_months(
    previous_cursor: str | dict | None, listing: dict[str, list[RawFile]]
) -> tuple[list[str], dict, list[str]]:
    """(months to materialize, the new cursor, months skipped because they hold no raw file).

    A month is to materialize when it has raw files and its fingerprint is new or differs
    from the cursor's. The new cursor holds the fingerprint of every month that has files;
    a month whose files all vanished leaves the cursor, so files arriving later trigger it.
    """
    seen = loads_cursor(previous_cursor)["months"]
    fingerprints = {m: month_fingerprint(files) for m, files in listing.items() if files}
    changed = sorted(m for m, fp in fingerprints.items() if seen.get(m) != fp)
    skipped = sorted(m for m, files in listing.items() if not files)
    return changed, {"version": CURSOR_VERSION, "months": fingerprints}, skipped


@dataclass
class TickPlan:
    requested: list[str]  # months to ingest
    cursor: dict  # the cursor to store
    empty: list[str]  # month folders without raw files (never requested)
    adopted: list[str]  # no manifest; already ingested when the sensor first ticked
    pending: list[str]  # differ from their manifest; requested on an earlier tick


def plan_ticks(
    previous_cursor: str | dict | None,
    listing: dict[str, list[RawFile]],
    valid: set[str],
    already_ingested: set[str],
    built: dict[str, str],
) -> TickPlan:
    """What one tick requests, for the months of ``listing`` in ``valid`` (the partition
    range; months outside it never enter the cursor, so widening the range later still
    triggers them). ``built``: {month: fingerprint of the files its manifest lists}.

    With a manifest, a month is requested when its files differ from it, once per state of
    its files (the cursor remembers the state requested; the run key repeats it): a run
    that fails, e.g. on the shrink guard, is not requested again until the files change.
    Without one, a month is requested when its files differ from the cursor's; on the very
    first tick (no cursor) months already ingested in this instance are adopted as they
    are, not re-run: turning the sensor on after `make demo` must not redo the demo.
    """
    seen = loads_cursor(previous_cursor)["months"]
    _, cursor, empty = changed_months(previous_cursor, listing)
    cursor["months"] = {m: fp for m, fp in cursor["months"].items() if m in valid}
    plan = TickPlan([], cursor, empty, [], [])
    for month, fingerprint in sorted(cursor["months"].items()):
        if month in built:
            if fingerprint == built[month]:
                continue
            (plan.pending if seen.get(month) == fingerprint else plan.requested).append(month)
        elif seen.get(month) != fingerprint:
            ingested = not previous_cursor and month in already_ingested
            (plan.adopted if ingested else plan.requested).append(month)
    return plan
