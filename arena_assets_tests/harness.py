"""Run the real code location's assets in-process for one month (tests only)."""

from __future__ import annotations

import dagster as dg

from arena_assets.definitions import defs as load_defs


def materialize(month: str, selection: str = "*", raise_on_error: bool = True) -> dg.ExecuteInProcessResult:
    """Materialize ``selection`` of the code location for one partition, checks included."""
    defs = load_defs()
    job = defs.resolve_implicit_global_asset_job_def()
    asset_selection = dg.AssetSelection.from_coercible(selection) if selection != "*" else dg.AssetSelection.all()
    return dg.materialize(
        assets=list(defs.assets or []),
        resources=defs.resources,
        partition_key=month,
        selection=asset_selection,
        raise_on_error=raise_on_error,
    ) if job is not None else None
