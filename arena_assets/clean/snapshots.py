"""Latest snapshot per conversation (``clean/sql/latest_snapshots.sql``), run by DuckDB.

Why DuckDB and not polars here: picking the newest of several snapshots needs every
snapshot of a conversation side by side, i.e. a sort/group over the whole month. DuckDB
spills that to disk under a memory limit and streams the result back in Arrow batches, so a
month of a million conversations is cleaned batch by batch in bounded memory. The same SQL
runs over an in-memory frame for the library and the CLI.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import duckdb
import polars as pl

from arena_assets.clean.schema import SNAPSHOT_SCHEMA
from arena_assets.sqlfiles import sql
from arena_assets.storage import Lake, duckdb_connect

BATCH_ROWS = 50_000


def _typed(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select([pl.col(c).cast(t) for c, t in SNAPSHOT_SCHEMA.items()])


def latest_snapshots(raw_logs: pl.DataFrame) -> pl.DataFrame:
    """Latest state per conv_id of an in-memory raw_logs frame, sorted by conv_id."""
    with duckdb.connect() as con:
        con.register("raw_logs", raw_logs.to_arrow())
        return _typed(pl.from_arrow(con.execute(sql("clean", "latest_snapshots")).to_arrow_table()))


def iter_latest_snapshots(
    lake: Lake, month: str, *, batch_rows: int = BATCH_ROWS, memory_limit: str = "2GB"
) -> Iterator[pl.DataFrame]:
    """The month's latest snapshots from its raw_logs file, in batches sorted by conv_id.

    ``memory_limit`` is DuckDB's share; the cleaning of one batch needs the rest.
    """
    with tempfile.TemporaryDirectory(prefix="arena-duckdb-") as spill:
        con = duckdb_connect(lake)
        try:
            con.execute(f"set memory_limit = '{memory_limit}'")
            con.execute(f"set temp_directory = '{spill}'")
            con.execute(
                f"create temp view raw_logs as select * from read_parquet('{lake.url('raw_logs', month)}')"
            )
            reader = con.execute(sql("clean", "latest_snapshots")).to_arrow_reader(batch_rows)
            for batch in reader:
                if batch.num_rows:
                    yield _typed(pl.from_arrow(batch))
        finally:
            con.close()
