"""Shared check helpers: figures from ``arena_assets.pipeline.quality`` -> check results.

Blocking checks guard what downstream would get wrong (schema, nulls in keys, duplicate
keys, broken intervals); drift is a WARN (a real change in traffic is not an error).
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
import polars as pl

from arena_assets.pipeline import quality
from arena_assets.storage import Lake

WARN = dg.AssetCheckSeverity.WARN


def table_specs(asset: str, what: str) -> list[dg.AssetCheckSpec]:
    """The blocking shape checks of a table people read."""
    return [
        dg.AssetCheckSpec(
            "schema_matches",
            asset=asset,
            blocking=True,
            description=f"Every column of the {what} contract, with its type.",
        ),
        dg.AssetCheckSpec(
            "keys_unique_and_present",
            asset=asset,
            blocking=True,
            description=f"The key of each {what} row is never null and never repeated.",
        ),
    ]


def range_spec(asset: str, what: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        "values_in_range",
        asset=asset,
        blocking=True,
        description=f"Every {what} value within its domain (see metadata).",
    )


def range_result(asset: str, problems: Mapping[str, int]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name="values_in_range",
        passed=not any(problems.values()),
        metadata=dict(problems),
    )


def drift_spec(asset: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        "month_over_month_drift",
        asset=asset,
        blocking=False,
        description="WARN when the month's volume is under half or over twice the previous "
        "month's, or the language mix moved by more than "
        f"{quality.MAX_LANGUAGE_SHIFT:.0%} (total variation).",
    )


def table_results(
    asset: str, frame: pl.DataFrame, schema: Mapping[str, pl.DataType], keys: list[str]
) -> list[dg.AssetCheckResult]:
    mismatches = quality.schema_mismatches(frame, schema)
    nulls = quality.null_counts(frame, keys)
    dups = quality.duplicate_keys(frame, keys) if not mismatches else 0
    return [
        dg.AssetCheckResult(
            asset_key=asset,
            check_name="schema_matches",
            passed=not mismatches,
            metadata={"mismatches": dg.MetadataValue.json(mismatches)},
        ),
        dg.AssetCheckResult(
            asset_key=asset,
            check_name="keys_unique_and_present",
            passed=not nulls and dups == 0,
            metadata={
                "key": ", ".join(keys),
                "duplicate_rows": dups,
                "null_keys": dg.MetadataValue.json(nulls),
            },
        ),
    ]


def previous_month(lake: Lake, asset: str, month: str) -> str | None:
    earlier = [m for m in lake.months(asset, upto=month) if m < month]
    return earlier[-1] if earlier else None


def drift_result(
    asset: str, lake: Lake, month: str, rows: int, languages: Mapping[str, int]
) -> dg.AssetCheckResult:
    """Volume and language mix against the latest earlier month in the lake (WARN)."""
    prev = previous_month(lake, asset, month)
    prev_rows, prev_langs = None, {}
    if prev is not None:
        frame = lake.read(asset, prev, columns=["language"])
        prev_rows = frame.height
        prev_langs = dict(frame["language"].fill_null("?").value_counts().iter_rows())
    ratio = quality.volume_ratio(rows, prev_rows)
    shift = quality.language_shift(languages, prev_langs)
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name="month_over_month_drift",
        severity=WARN,
        passed=quality.drift_ok(ratio, shift),
        metadata={
            "previous_month": prev or "none",
            "rows": rows,
            "previous_rows": prev_rows or 0,
            "volume_ratio": round(ratio, 3) if ratio is not None else "n/a",
            "language_shift": round(shift, 3) if shift is not None else "n/a",
        },
    )
