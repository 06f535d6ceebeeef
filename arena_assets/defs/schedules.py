"""The monthly refresh: when a month closes, materialize its partition of every asset."""

from __future__ import annotations

import dagster as dg

from arena_assets.defs.partitions import monthly_partitions
from arena_assets.defs.resources import ArenaStorage
from arena_assets.ingest.watch import list_raw_root, month_fingerprint

monthly_refresh = dg.define_asset_job(
    "monthly_refresh",
    selection=dg.AssetSelection.all(),
    description="Every asset for one month: ingest, clean, battles, then the leaderboards "
    "that cover it. The schedule launches it for the month that just ended.",
)


def month_before(year: int, month: int) -> str:
    return f"{year - (month == 1):04d}-{(month - 2) % 12 + 1:02d}"


# 02:00 UTC on the 1st, for the month that just ended. Stopped by default: the raw-root
# sensor and the automation already follow new data; operators who prefer a fixed
# monthly run turn this on in the UI (Automation).
@dg.schedule(
    job=monthly_refresh,
    cron_schedule="0 2 1 * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
def monthly_refresh_schedule(context: dg.ScheduleEvaluationContext, storage: ArenaStorage):
    """Skips (with the reason shown in the UI) a month outside the partition range or with
    no raw files, instead of writing empty tables and a copy of the previous board."""
    tick = context.scheduled_execution_time
    month = month_before(tick.year, tick.month)
    if month not in set(monthly_partitions.get_partition_keys()):
        return dg.SkipReason(f"{month} is outside the partition range (ARENA_PARTITIONS_START/END)")
    files = list_raw_root(storage.raw_root, storage.raw_storage_options()).get(month)
    if not files:
        return dg.SkipReason(f"no raw files for {month} under {storage.raw_root}")
    return dg.RunRequest(partition_key=month, run_key=f"{month}:{month_fingerprint(files)}")
