"""The ingest stage's own settings (bound to environment variables below)."""

from __future__ import annotations

import dagster as dg


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

    @property
    def partial_files_allowed(self) -> bool:
        return self.allow_partial_files.strip().lower() in ("1", "true", "yes", "on")


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "ingest_settings": IngestSettings(
                user_salt=dg.EnvVar("ARENA_USER_SALT"),
                workers=dg.EnvVar.int("ARENA_INGEST_WORKERS"),
                allow_partial_files=dg.EnvVar("ARENA_ALLOW_PARTIAL_FILES"),
                raw_logs_retention_months=dg.EnvVar.int("ARENA_RAW_LOGS_RETENTION_MONTHS"),
            )
        }
    )
