"""Retention of ``raw_logs``: the one table that keeps message text as users typed it.

``raw_logs`` keeps the original text so that conversations can be cleaned again when the
redaction improves; that makes it the most sensitive table of the lake. It is never part
of a release, and it is kept only for a configurable number of months
(``ARENA_RAW_LOGS_RETENTION_MONTHS``; 0 keeps everything). Deleting an old month's
raw_logs leaves its conversations, battles and leaderboards as they are; what is lost is
the ability to re-clean that month from the lake (the platform's raw files, if still
kept, can be ingested again).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from arena_assets.storage import Lake

RETAINED_ASSETS = ("raw_logs",)


def _month_index(month: str) -> int:
    year, mon = (int(p) for p in month.split("-"))
    return year * 12 + mon - 1


def oldest_kept_month(keep_months: int, today_month: str) -> str | None:
    """First month kept when ``keep_months`` months up to ``today_month`` are retained
    (``today_month`` included); None when everything is kept (``keep_months`` <= 0)."""
    if keep_months <= 0:
        return None
    index = _month_index(today_month) - keep_months + 1
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


@dataclass
class RetentionResult:
    keep_months: int
    oldest_kept: str | None
    deleted: dict[str, list[str]] = field(default_factory=dict)  # asset -> months deleted


def current_month() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m")


def apply_retention(
    lake: Lake,
    keep_months: int,
    today_month: str,
    *,
    assets: tuple[str, ...] = RETAINED_ASSETS,
    protect: str | None = None,
    dry_run: bool = False,
) -> RetentionResult:
    """Delete the partitions of ``assets`` older than the last ``keep_months`` months
    ending at ``today_month``; 0 (or less) keeps every month. ``protect``: a month never
    deleted by this call (the partition a run has just written for its later stages)."""
    oldest = oldest_kept_month(keep_months, today_month)
    result = RetentionResult(keep_months, oldest)
    if oldest is None:
        return result
    for asset in assets:
        old = [m for m in lake.months(asset) if m < oldest and m != protect]
        if not dry_run:
            for month in old:
                lake.fs.rm(lake.partition_path(asset, month))
        result.deleted[asset] = old
    return result
