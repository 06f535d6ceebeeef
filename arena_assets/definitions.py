"""The code location: everything under ``arena_assets/defs`` (one folder per stage).

Loading it first judges every ``ARENA_*`` setting the resources will read (the shell's,
then ``.env``'s) by the registry (``environment.check_settings``): a value
that cannot work stops the load with one line per setting, naming the variable, the value
and what is allowed, before any run starts (`dagster dev` / `dg dev` show it as the code
location's load error, the Dagster CLI and `arena-assets` print it).
"""

import warnings
from pathlib import Path

import dagster as dg

from arena_assets.environment import check_settings

# Dagster warns when a job's assets carry different backfill policies (here: none for the
# monthly steps, 3 months a run for the LLM stages, the whole range for the boards) and
# gives the job the smallest, one month a run. That is what a month-by-month job wants,
# and each asset keeps its own policy in backfills of the asset graph and in
# `arena-assets backfill`; the message (twice at every `make ui`, once per CLI run) says
# nothing to act on, so it is silenced for this code location's jobs, and only this one.
warnings.filterwarnings(
    "ignore",
    message=r"Asset job (monthly_refresh|rematerialize_after_forget|__ASSET_JOB\S*) "
    r"materializes assets with varying BackfillPolicies",
    category=UserWarning,
)


@dg.definitions
def defs() -> dg.Definitions:
    check_settings()
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
