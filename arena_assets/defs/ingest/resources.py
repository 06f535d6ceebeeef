"""The ingest stage's own settings (bound to environment variables below)."""

from __future__ import annotations

import dagster as dg

from arena_assets import settings
from arena_assets.ingest.shrink import ShrinkRule

# a run tag that lets one run replace a month with a smaller build (ARENA_ALLOW_SHRINK
# does it for every run)
ALLOW_SHRINK_TAG = "arena/allow_shrink"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


class IngestSettings(dg.ConfigurableResource):
    """How raw logs are parsed.

    ``user_salt``: a salted hash replaces every user address or id at ingest, so no later
    table (nor the lake) ever holds the raw value. ``workers``: processes parsing the
    month's files in parallel (1 = in the run's own process).
    """

    user_salt: str
    workers: int = 1
    # "true" accepts a month whose compressed files broke mid-stream (their complete lines
    # are kept, the rest is a truncated_file reject); otherwise the blocking
    # no_partial_files check fails the run. A string: Dagster's EnvVar has no bool form.
    allow_partial_files: str = "false"
    # raw_logs keeps message text as typed: months older than this many (counted back
    # from the current month) are deleted after each ingest; 0 keeps every month
    raw_logs_retention_months: int = 0
    # "true" lets a new build replace a month with a smaller one (files gone or cut short,
    # or more than shrink_max_fraction fewer accepted lines); otherwise the run fails
    # before writing and the lake keeps the month. Strings: EnvVar has no bool or float.
    allow_shrink: str = "false"
    shrink_max_fraction: str = "0.2"

    @property
    def partial_files_allowed(self) -> bool:
        return self.allow_partial_files.strip().lower() in _TRUE

    def shrink_rule(self, run_tags: dict[str, str]) -> ShrinkRule:
        """The shrink guard's rule for a run: the settings, and the run's own tag.

        A value that is not one the setting or tag allows stops the run in one line: a
        typo must neither block every month nor let a shrink through."""
        problem = settings.check("ARENA_SHRINK_MAX_FRACTION", self.shrink_max_fraction)
        problem = problem or settings.check("ARENA_ALLOW_SHRINK", self.allow_shrink)
        tag = run_tags.get(ALLOW_SHRINK_TAG, "").strip().lower()
        if not problem and tag not in _TRUE + _FALSE:
            problem = (
                f"run tag {ALLOW_SHRINK_TAG}={run_tags[ALLOW_SHRINK_TAG]!r}: expected true or false"
            )
        if problem:
            raise ValueError(problem)
        limit = float(self.shrink_max_fraction)
        allowed_by = ""
        if tag in _TRUE:
            allowed_by = f"run tag {ALLOW_SHRINK_TAG}=true"
        elif self.allow_shrink.strip().lower() in _TRUE:
            allowed_by = "ARENA_ALLOW_SHRINK=true"
        return ShrinkRule(
            max_fraction=limit,
            allowed_by=allowed_by,
            how_to_allow=(
                f"rerun with the run tag {ALLOW_SHRINK_TAG}=true (that run only) or set "
                f"ARENA_ALLOW_SHRINK=true; ARENA_SHRINK_MAX_FRACTION={limit:g} is the share of "
                "accepted lines a month may lose"
            ),
        )


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "ingest_settings": IngestSettings(
                user_salt=dg.EnvVar("ARENA_USER_SALT"),
                workers=dg.EnvVar.int("ARENA_INGEST_WORKERS"),
                allow_partial_files=dg.EnvVar("ARENA_ALLOW_PARTIAL_FILES"),
                raw_logs_retention_months=dg.EnvVar.int("ARENA_RAW_LOGS_RETENTION_MONTHS"),
                allow_shrink=dg.EnvVar("ARENA_ALLOW_SHRINK"),
                shrink_max_fraction=dg.EnvVar("ARENA_SHRINK_MAX_FRACTION"),
            )
        }
    )
