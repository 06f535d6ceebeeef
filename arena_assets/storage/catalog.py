"""The DuckDB side of the lake: connections that read its URLs and the catalog's views."""

from __future__ import annotations

import os

import duckdb

from arena_assets.storage.lake import Lake


def duckdb_connect(
    lake: Lake, database: str = ":memory:", read_only: bool = False
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that can read the lake's URLs (fsspec registered for non-local)."""
    con = duckdb.connect(database, read_only=read_only)
    if not lake.is_local:
        # DuckDB reads s3:// etc. through the same fsspec filesystem the lake writes with, so
        # no httpfs extension download is needed (this machine has no network).
        con.register_filesystem(lake.fs)
    return con


# the partition month of a lake file, from its name (<asset>/<YYYY-MM>.parquet)
_FILE_MONTH = r"regexp_extract(filename, '(\d{4}-\d{2})\.parquet$', 1)"


def sql_literal(value: str) -> str:
    """``value`` as a SQL string literal (quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def view_sql(lake: Lake, asset: str, month_from_file: bool = False) -> str:
    """The catalog view of ``asset``: every month's file, each row with its ``month``.

    ``month_from_file``: the files carry no ``month`` column (a month's bench prompts,
    answers and judgments are keyed by bench version), so the view takes it from each
    file's name; every view can then be counted by month."""
    source = f"read_parquet('{lake.glob_url(asset)}', union_by_name = true"
    if not month_from_file:
        return f'CREATE OR REPLACE VIEW "{asset}" AS SELECT * FROM {source})'
    return (
        f'CREATE OR REPLACE VIEW "{asset}" AS SELECT * EXCLUDE (filename), '
        f"{_FILE_MONTH} AS month FROM {source}, filename = true)"
    )


def create_view(con: duckdb.DuckDBPyConnection, lake: Lake, asset: str) -> None:
    """Create the view on an open catalog connection (after the asset's first file exists).

    For an S3 lake the view is bound through the lake's fsspec filesystem; reading it later
    from another DuckDB client needs that client's own S3 access (httpfs). The view reads a
    glob, so it covers new months without being touched again; it is recreated anyway so a
    moved lake root is picked up.
    """
    if not lake.is_local:
        con.register_filesystem(lake.fs)
    if lake.relative_to:  # a relative glob is checked from the project, not this process's cwd
        # a literal, not a bound parameter (which makes DuckDB import pandas: ~0.5 s)
        con.execute(f"SET file_search_path = {sql_literal(os.path.realpath(lake.relative_to))}")
    columns = {
        row[0]
        for row in con.execute(
            f"DESCRIBE SELECT * FROM read_parquet('{lake.glob_url(asset)}', union_by_name = true)"
        ).fetchall()
    }
    con.execute(view_sql(lake, asset, month_from_file="month" not in columns))
