"""Metadata every partition file carries in the Dagster UI."""

from __future__ import annotations

from typing import Any

import dagster as dg
import polars as pl

from arena_assets.report import markdown_table

PREVIEW_ROWS = 5


def table_metadata(frame: pl.DataFrame | None, url: str, rows: int | None = None) -> dict[str, Any]:
    """Row count, where the file is, its columns and a preview of a few rows."""
    n = rows if rows is not None else (frame.height if frame is not None else 0)
    meta: dict[str, Any] = {"dagster/row_count": n, "path": dg.MetadataValue.path(url)}
    if frame is not None:
        meta["dagster/column_schema"] = dg.TableSchema(
            columns=[dg.TableColumn(name, str(dtype)) for name, dtype in frame.schema.items()]
        )
        preview = frame.select(
            [c for c, t in frame.schema.items() if not isinstance(t, pl.List | pl.Struct)]
        )
        meta["preview"] = dg.MetadataValue.md(markdown_table(preview, PREVIEW_ROWS))
    return meta
