"""The one partitions definition: calendar months, keys "YYYY-MM"."""

from __future__ import annotations

import dagster as dg

# Partition definitions are static structure, known when the code location loads, so the
# first month is read here, through dg.EnvVar, rather than in a resource.
PARTITIONS_START = dg.EnvVar("ARENA_PARTITIONS_START").get_value("2024-01") or "2024-01"

monthly_partitions = dg.MonthlyPartitionsDefinition(
    start_date=PARTITIONS_START, fmt="%Y-%m", timezone="UTC"
)


def months_in_window(context: dg.AssetExecutionContext) -> list[str]:
    """Month keys covered by the run's partition time window (one or several)."""
    window = context.partition_time_window
    keys = monthly_partitions.get_partition_keys_in_time_window(window)
    return list(keys)
