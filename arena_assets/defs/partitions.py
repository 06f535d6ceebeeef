"""The one partitions definition: calendar months, keys "YYYY-MM"."""

from __future__ import annotations

import warnings

import dagster as dg

from arena_assets import settings
from arena_assets.errors import FIX_SETTING, SettingError

# Partition definitions are static structure, known when the code location loads, so the
# first and last month are read here, through dg.EnvVar, rather than in a resource.
# Empty first month = the registry's default (2024-01); empty last month (inclusive) = up
# to the month that just ended (Dagster's default for monthly partitions). A bound keeps
# "All" in the UI from launching months without data.
PARTITIONS_START = dg.EnvVar("ARENA_PARTITIONS_START").get_value("") or ""
PARTITIONS_END = dg.EnvVar("ARENA_PARTITIONS_END").get_value("") or ""

# every earlier month (100 years back) and this one; months before the first partition
# simply do not exist
with warnings.catch_warnings():
    # a beta parameter of the pinned dagster 1.13, chosen knowingly: its warning would
    # precede every command's output (a one-line error included)
    warnings.simplefilter("ignore", dg.BetaWarning)
    ALL_EARLIER = dg.TimeWindowPartitionMapping(
        start_offset=-1200, end_offset=0, allow_nonexistent_upstream_partitions=True
    )


def month_after(month: str) -> str:
    """ "2024-03" -> "2024-04" (Dagster's end_date is exclusive)."""
    year, mon = (int(p) for p in month.split("-"))
    return f"{year + mon // 12:04d}-{mon % 12 + 1:02d}"


def monthly_partitions_between(start: str, end: str) -> dg.MonthlyPartitionsDefinition:
    """Months ``start``..``end`` (inclusive; empty ``end`` = up to the month that just
    ended); a ``SettingError`` naming the variable when the registry's rule refuses them."""
    problems = settings.partition_problems(start, end)
    if problems:  # one line each, not a traceback of the code location's import
        raise SettingError(*(f"{p}: {FIX_SETTING}" for p in problems))
    return dg.MonthlyPartitionsDefinition(
        start_date=start.strip() or settings.get("ARENA_PARTITIONS_START").default,
        end_date=month_after(end.strip()) if end.strip() else None,
        fmt="%Y-%m",
        timezone="UTC",
    )


monthly_partitions = monthly_partitions_between(PARTITIONS_START, PARTITIONS_END)


def months_in_window(context: dg.AssetExecutionContext) -> list[str]:
    """Month keys covered by the run's partition time window (one or several)."""
    window = context.partition_time_window
    keys = monthly_partitions.get_partition_keys_in_time_window(window)
    return list(keys)
