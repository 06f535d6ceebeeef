"""Freshness of the latest month: the leaderboard people read should cover the month that
just ended by 06:00 UTC on the 2nd (a day after the monthly close). WARN, not blocking."""

import dagster as dg

freshness_checks = dg.build_time_partition_freshness_checks(
    assets=["conversations", "arena_leaderboard"],
    deadline_cron="0 6 2 * *",
    timezone="UTC",
    severity=dg.AssetCheckSeverity.WARN,
)

# evaluates the freshness checks on its own (they never run inside a materialization)
freshness_sensor = dg.build_sensor_for_freshness_checks(
    freshness_checks=freshness_checks,
    name="freshness_sensor",
    default_status=dg.DefaultSensorStatus.RUNNING,
)
