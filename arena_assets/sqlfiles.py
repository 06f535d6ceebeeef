"""The SQL transformations shipped in ``arena_assets/sql`` (also linked as ``./sql``)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def sql(name: str) -> str:
    """Text of ``sql/<name>.sql`` from the installed package (works from a wheel too)."""
    return (files("arena_assets") / "sql" / f"{name}.sql").read_text()
