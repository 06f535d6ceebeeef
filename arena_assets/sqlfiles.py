"""The SQL each stage keeps beside its code, in ``arena_assets/<stage>/sql/<name>.sql``."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def sql(stage: str, name: str) -> str:
    """Text of ``arena_assets/<stage>/sql/<name>.sql`` from the installed package (a wheel too)."""
    return (files(f"arena_assets.{stage}") / "sql" / f"{name}.sql").read_text()
