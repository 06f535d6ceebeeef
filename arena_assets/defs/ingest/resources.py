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


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"ingest_settings": IngestSettings(
        user_salt=dg.EnvVar("ARENA_USER_SALT"),
        workers=dg.EnvVar.int("ARENA_INGEST_WORKERS"),
    )})
