"""The ingest step: a month of raw files -> the lake's ``raw_logs`` and ``raw_rejects``.

Streams: files are parsed one part at a time into the raw_logs Parquet writer, so memory
stays bounded whatever the month's size. Used by the ``raw_logs`` asset and by
``arena-assets ingest``.

A month folder that does not exist under the raw root stops the step before anything is
written (``MissingMonthError``, one line naming the folder and ``ARENA_RAW_ROOT``): a
wrong root must not turn a month that had data into an empty one. A folder that exists but
holds no raw file gives empty tables only where the lake had none (``Lake`` refuses to
empty a partition that has rows); ``raw_rejects`` may be empty when lines were read.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import polars as pl

from arena_assets.errors import ArenaError
from arena_assets.ingest import (
    MonthListing,
    iter_parsed_files,
    partial_files,
    reason_counts,
    scan_month,
)
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA, RAW_REJECTS_SCHEMA
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

    @property
    def conserved(self) -> bool:
        return self.lines_read == self.accepted + self.rejected


def ingest_month(
    lake: Lake,
    raw_root: str,
    month: str,
    *,
    salt: str,
    known_models: set[str] | None,
    storage_options: dict | None = None,
    workers: int = 1,
) -> IngestStats:
    """Parse the month's raw files into the lake's ``raw_logs`` and ``raw_rejects``."""
    stats = IngestStats(month, listing=scan_month(raw_root, month, storage_options))
    if not stats.listing.folder_exists:
        raise MissingMonthError(
            f"raw_logs {month}: {stats.listing.describe()}; nothing was "
            "written (the lake keeps what it had)"
        )
    reject_parts: list[pl.DataFrame] = []

    def accepted_parts():
        for part in iter_parsed_files(
            raw_root,
            month,
            salt=salt,
            known_models=known_models,
            storage_options=storage_options,
            workers=workers,
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

    stats.accepted = lake.write_batches("raw_logs", month, RAW_LOGS_ARROW, accepted_parts())
    if reject_parts:
        stats.rejects = pl.concat(reject_parts)
    stats.rejected = stats.rejects.height
    # no rejected line is a normal month, once lines were read at all
    lake.write("raw_rejects", month, stats.rejects, empty_ok=stats.lines_read > 0)
    stats.rejects_by_reason = reason_counts(stats.rejects)
    stats.partial_files = partial_files(stats.rejects)
    return stats
