"""Run the real code location's assets in-process for one month (tests only)."""

from __future__ import annotations

import dagster as dg

from arena_assets.definitions import defs as load_defs


def materialize(month: str, selection: str = "*", raise_on_error: bool = True) -> dg.ExecuteInProcessResult:
    """Materialize ``selection`` ("*" or comma-separated asset names) for one partition,
    with its asset checks, the code location's resources and the current environment."""
    defs = load_defs()
    chosen = (dg.AssetSelection.all() if selection == "*"
              else dg.AssetSelection.assets(*selection.split(",")))
    return dg.materialize(
        assets=list(defs.assets or []),
        resources=defs.resources,
        partition_key=month,
        selection=chosen,
        raise_on_error=raise_on_error,
    )
