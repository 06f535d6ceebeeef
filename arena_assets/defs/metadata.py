"""Metadata every partition file carries in the Dagster UI."""

from __future__ import annotations

import base64
from typing import Any

import dagster as dg
import polars as pl

from arena_assets.privacy.preview import safe_preview
from arena_assets.report import markdown_table, md_escape

PREVIEW_ROWS = 5


def table_metadata(
    frame: pl.DataFrame | None,
    url: str,
    rows: int | None = None,
    descriptions: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Row count, where the file is, its columns (with ``descriptions`` where given) and a
    preview of a few rows (escaped, floats rounded: ``report.markdown_table``)."""
    n = rows if rows is not None else (frame.height if frame is not None else 0)
    meta: dict[str, Any] = {"dagster/row_count": n, "path": dg.MetadataValue.path(url)}
    if frame is not None:
        meta["dagster/column_schema"] = dg.TableSchema(
            # descriptions are Markdown in the UI: "language:<code>" must stay text
            columns=[
                dg.TableColumn(
                    name,
                    str(dtype),
                    md_escape(d) if (d := (descriptions or {}).get(name)) else None,
                )
                for name, dtype in frame.schema.items()
            ]
        )
        # never message text or a raw identity: metadata outlives every table (no
        # retention or forgetting reaches the event log)
        meta["preview"] = dg.MetadataValue.md(
            markdown_table(safe_preview(frame, PREVIEW_ROWS), PREVIEW_ROWS)
        )
    return meta


def png_markdown(png: bytes, alt: str) -> dg.MetadataValue:
    """A PNG inline in the UI's metadata (a data URL: nothing to serve)."""
    return dg.MetadataValue.md(f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})")
