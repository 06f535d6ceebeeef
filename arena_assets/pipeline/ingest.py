"""The ingest step: a month of raw files -> the lake's ``raw_logs`` and ``raw_rejects``.

Streams: files are parsed one part at a time into the raw_logs Parquet writer, so memory
stays bounded whatever the month's size. Used by the ``raw_logs`` asset and by
``arena-assets ingest``.

A month folder that does not exist under the raw root stops the step before anything is
written (``MissingMonthError``, one line naming the folder and ``ARENA_RAW_ROOT``): a
wrong root must not turn a month that had data into an empty one. A folder that exists but
holds no raw file gives empty tables only where the lake had none (``Lake`` refuses to
empty a partition that has rows); ``raw_rejects`` may be empty when lines were read.

A month that had data is not replaced by a shrunken build either: the files are listed and
hashed first, parsed into a temporary file, and compared with the lake's month (its rows and
its manifest, ``arena_assets.ingest.shrink``) before anything is renamed into place; a
refused build raises ``ShrinkError`` and leaves both tables and the manifest as they were.
After both tables, the month's manifest (``arena_assets.ingest.manifest``) records the
files they were built from.
Forgotten users stay out: the lake's forget list (``ingest/forgotten.py``) is read first,
under the salt in use (another salt stops the step with one line, before anything is
written), and their lines become ``forgotten_user`` rejects with no text
(``forgotten_lines``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import polars as pl

from arena_assets.contracts import FORGOTTEN_USER
from arena_assets.errors import ArenaError
from arena_assets.ingest import (
    MonthListing,
    iter_parsed_files,
    partial_files,
    reason_counts,
    scan_month,
)
from arena_assets.ingest.forgotten import load_forgotten
from arena_assets.ingest.manifest import (
    Manifest,
    ManifestError,
    build_manifest,
    hash_files,
    read_manifest,
    write_manifest,
)
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA, RAW_REJECTS_SCHEMA
from arena_assets.ingest.shrink import BuildComparison, ShrinkError, ShrinkRule, compare_builds
from arena_assets.storage import Lake

RAW_LOGS_ARROW = pl.DataFrame(schema=RAW_LOGS_SCHEMA).to_arrow().schema


class MissingMonthError(ArenaError, FileNotFoundError):
    """The month's folder is not under the raw root."""


@dataclass
class IngestStats:
    month: str
    lines_read: int = 0
    accepted: int = 0
    rejected: int = 0
    files: set[str] = field(default_factory=set)
    # per source file: [lines read, accepted, rejected]
    per_file: dict[str, list[int]] = field(default_factory=dict)
    formats: Counter = field(default_factory=Counter)
    rejects_by_reason: dict[str, int] = field(default_factory=dict)
    preview: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=RAW_LOGS_SCHEMA))
    rejects: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=RAW_REJECTS_SCHEMA))
    # which root and month folder were read, and every file skipped there (with why)
    listing: MonthListing | None = None
    # files whose compressed stream broke (their complete lines were kept)
    partial_files: list[str] = field(default_factory=list)
    # what the month was built from (written beside the partition) and where it was written
    manifest: Manifest | None = None
    manifest_url: str = ""
    # this build against the month the lake held, and who allowed a shrink ("" = none)
    comparison: BuildComparison | None = None
    shrink_allowed_by: str = ""

    @property
    def conserved(self) -> bool:
        return self.lines_read == self.accepted + self.rejected

    @property
    def forgotten_lines(self) -> int:
        """Lines of users on the forget list (rejected, no text kept)."""
        return self.rejects_by_reason.get(FORGOTTEN_USER, 0)


def ingest_month(
    lake: Lake,
    raw_root: str,
    month: str,
    *,
    salt: str,
    known_models: set[str] | None,
    storage_options: dict | None = None,
    workers: int = 1,
    shrink: ShrinkRule | None = None,
) -> IngestStats:
    """Parse the month's raw files into the lake's ``raw_logs`` and ``raw_rejects``, then
    write its manifest; ``shrink``: the rule a new build must pass to replace the lake's
    month (None = the default rule, nobody allowing a shrink)."""
    rule = shrink or ShrinkRule()
    stats = IngestStats(month, listing=scan_month(raw_root, month, storage_options))
    if not stats.listing.folder_exists:
        raise MissingMonthError(
            f"raw_logs {month}: {stats.listing.describe()}; nothing was "
            "written (the lake keeps what it had)"
        )
    forgotten = load_forgotten(lake, salt)  # ForgetListSaltError: before anything is written
    lines_before = lake.rows("raw_logs", month) if lake.exists("raw_logs", month) else None
    before, unreadable = _previous_manifest(lake, month)
    hashes = hash_files(stats.listing, storage_options, threads=workers)
    reject_parts: list[pl.DataFrame] = []

    def accepted_parts():
        for part in iter_parsed_files(
            raw_root,
            month,
            salt=salt,
            known_models=known_models,
            storage_options=storage_options,
            workers=workers,
            urls=stats.listing.files,
            forgotten=forgotten,
        ):
            stats.files.add(part.source_file)
            counts = stats.per_file.setdefault(part.source_file, [0, 0, 0])
            counts[0] += part.lines_read
            counts[1] += part.raw_logs.height
            counts[2] += part.rejects.height
            stats.lines_read += part.lines_read
            stats.formats[part.source_format] += part.raw_logs.height
            reject_parts.append(part.rejects)
            if stats.preview.height == 0:
                stats.preview = part.raw_logs.head(5)
            yield part.raw_logs

    def guard(accepted: int) -> None:
        """Runs once the new raw_logs is written to its temporary file, before it replaces
        the month: a refusal leaves both tables and the manifest as they were."""
        stats.manifest = build_manifest(
            month, raw_root, stats.listing, hashes, stats.per_file, storage_options
        )
        stats.comparison = compare_builds(
            month, lines_before, before, stats.manifest.files, accepted, unreadable
        )
        if not stats.comparison.shrinks(rule.max_fraction):
            return
        if rule.allowed_by:
            stats.shrink_allowed_by = rule.allowed_by
        elif accepted == 0 and lake.allow_empty:  # emptied on purpose is a shrink allowed
            stats.shrink_allowed_by = "ARENA_ALLOW_EMPTY_MONTH"
        else:
            raise ShrinkError(stats.comparison.refusal(rule), stats.comparison)

    stats.accepted = lake.write_batches(
        "raw_logs", month, RAW_LOGS_ARROW, accepted_parts(), guard=guard
    )
    if reject_parts:
        stats.rejects = pl.concat(reject_parts)
    stats.rejected = stats.rejects.height
    # no rejected line is a normal month, once lines were read at all
    lake.write("raw_rejects", month, stats.rejects, empty_ok=stats.lines_read > 0)
    # last: a crash before this line leaves the previous manifest, which only makes the
    # sensor ask for the month again (see arena_assets.ingest.manifest)
    stats.manifest_url = write_manifest(lake, stats.manifest)
    stats.rejects_by_reason = reason_counts(stats.rejects)
    stats.partial_files = partial_files(stats.rejects)
    return stats


def _previous_manifest(lake: Lake, month: str) -> tuple[Manifest | None, str]:
    """The lake's manifest of the month, or None and why (one line) when it cannot be read:
    the guard then compares line counts only, and says so."""
    try:
        return read_manifest(lake, month), ""
    except ManifestError as exc:
        return None, str(exc)
