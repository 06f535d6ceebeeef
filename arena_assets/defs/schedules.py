"""The monthly refresh: when a month closes, materialize its partition of every asset."""

import dagster as dg

from arena_assets.defs.partitions import monthly_partitions

monthly_refresh = dg.define_asset_job(
    "monthly_refresh",
    selection=dg.AssetSelection.all(),
    partitions_def=monthly_partitions,
    description="Every asset for one month: ingest, clean, battles, then the leaderboards "
    "that cover it. The schedule launches it for the month that just ended.",
)

# Runs at 02:00 UTC on the 1st for the month that just ended. Stopped by default so a fresh
# checkout does not start ingesting by itself; turn it on in the UI (Automation).
monthly_refresh_schedule = dg.build_schedule_from_partitioned_job(
    monthly_refresh, hour_of_day=2, default_status=dg.DefaultScheduleStatus.STOPPED
)
