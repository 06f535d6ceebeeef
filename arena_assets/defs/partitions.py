"""The one partitions definition: calendar months, keys "YYYY-MM"."""

from __future__ import annotations

import re
import warnings

import dagster as dg

from arena_assets.errors import SettingError

# Partition definitions are static structure, known when the code location loads, so the
# first and last month are read here, through dg.EnvVar, rather than in a resource.
PARTITIONS_START = dg.EnvVar("ARENA_PARTITIONS_START").get_value("2024-01") or "2024-01"
# The last month (inclusive). Empty = up to the month that just ended (Dagster's default for
# monthly partitions). A bound keeps "All" in the UI from launching months without data.
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


def _month(name: str, value: str) -> str:
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", value):
        raise ValueError(f"{name}={value!r} is not a month (YYYY-MM)")
    return value


def monthly_partitions_between(start: str, end: str) -> dg.MonthlyPartitionsDefinition:
    _month("ARENA_PARTITIONS_START", start)
    if end:
        _month("ARENA_PARTITIONS_END", end)
    if end and end < start:
        raise ValueError(f"ARENA_PARTITIONS_END={end} is before ARENA_PARTITIONS_START={start}")
    return dg.MonthlyPartitionsDefinition(
        start_date=start, end_date=month_after(end) if end else None, fmt="%Y-%m", timezone="UTC"
    )


try:
    monthly_partitions = monthly_partitions_between(PARTITIONS_START, PARTITIONS_END)
except ValueError as exc:  # one line, not a traceback of the code location's import
    raise SettingError(f"{exc}: fix it in .env or the shell") from None


def months_in_window(context: dg.AssetExecutionContext) -> list[str]:
    """Month keys covered by the run's partition time window (one or several)."""
    window = context.partition_time_window
    keys = monthly_partitions.get_partition_keys_in_time_window(window)
    return list(keys)
