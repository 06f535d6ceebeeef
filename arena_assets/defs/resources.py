"""Shared resources: where the raw logs, the lake and the DuckDB catalog live.

Every stage uses ``storage`` (an ``ArenaStorage``); the catalog is dagster-duckdb's
``DuckDBResource``, injected into ``storage`` and also available on its own as
``catalog``. A stage's own settings live in ``defs/<stage>/resources.py``. Every field
bound here reads an environment variable listed in `.env.example`; `dagster dev` and the
`dagster` CLI load `.env` from the working directory.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource

from arena_assets.storage import Lake, create_view


class ArenaStorage(dg.ConfigurableResource):
    """Where raw logs are read from and where the lake and the DuckDB catalog live."""

    catalog: DuckDBResource  # the catalog file with one view per asset over the lake
    raw_root: str = "./data/raw"
    lake_root: str = "./data/lake"
    # DuckDB's memory cap for out-of-core steps (it spills to a temporary folder beyond it)
    duckdb_memory_limit: str = "2GB"
    # S3-compatible object storage (AWS, MinIO, moto...). Empty = s3fs's default chain
    # (AWS_* variables, instance role), so these never shadow credentials set elsewhere.
    s3_endpoint_url: str = ""
    s3_access_key_id: str = ""
    s3_secret_access_key: str = ""
    s3_region: str = ""
    # "true" lets an empty result replace a month that has rows (a month deliberately
    # emptied); otherwise such a write fails and the lake keeps the month (a wrong
    # ARENA_RAW_ROOT or a vanished input must not empty it). A string: EnvVar has no bool.
    allow_empty_month: str = "false"

    @property
    def empty_month_allowed(self) -> bool:
        return self.allow_empty_month.strip().lower() in ("1", "true", "yes", "on")

    def storage_options(self) -> dict[str, Any]:
        """fsspec/s3fs options; applied only to s3:// URLs."""
        opts: dict[str, Any] = {}
        if self.s3_access_key_id:
            opts["key"] = self.s3_access_key_id
            opts["secret"] = self.s3_secret_access_key
        client_kwargs: dict[str, Any] = {}
        if self.s3_endpoint_url:
            client_kwargs["endpoint_url"] = self.s3_endpoint_url
        if self.s3_region:
            client_kwargs["region_name"] = self.s3_region
        if client_kwargs:
            opts["client_kwargs"] = client_kwargs
        return opts

    def _options_for(self, url: str) -> dict[str, Any]:
        return self.storage_options() if url.startswith("s3://") else {}

    def raw_storage_options(self) -> dict[str, Any]:
        return self._options_for(self.raw_root)

    def lake(self) -> Lake:
        return Lake(self.lake_root, self._options_for(self.lake_root),
                    allow_empty=self.empty_month_allowed)

    def publish(self, asset: str, log=None) -> None:
        """Make sure the catalog has a view for ``asset`` (after its first file exists).

        The view reads a glob, so it is created once (or again when the lake root moved, or
        when an older view lacks the ``month`` column every view now has).
        DuckDBResource retries with backoff while another process holds the catalog's
        write lock; if it stays locked (e.g. a `duckdb` shell opened without -readonly) the
        run still succeeds: Parquet is the system of record, and the warning says so.
        """
        lake = self.lake()
        try:
            with self.catalog.get_connection() as con:
                found = con.execute(
                    "select sql from duckdb_views() where view_name = ? and not internal",
                    [asset]).fetchone()
                # views made before every view had a `month` (bench tables) are made again
                has_month = con.execute(
                    "select count(*) from duckdb_columns() where table_name = ? "
                    "and column_name = 'month'", [asset]).fetchone()[0] > 0
                if found is None or lake.glob_url(asset) not in found[0] or not has_month:
                    create_view(con, lake, asset)
        except duckdb.Error as exc:
            if log is None:
                raise
            log.warning(f"catalog {self.catalog.database} not updated for {asset!r} ({exc}); "
                        "the Parquet files are written; the view appears on the next run")


@dg.definitions
def resources() -> dg.Definitions:
    catalog = DuckDBResource(database=dg.EnvVar("ARENA_CATALOG"))
    return dg.Definitions(
        resources={
            "catalog": catalog,
            "storage": ArenaStorage(
                catalog=catalog,
                raw_root=dg.EnvVar("ARENA_RAW_ROOT"),
                lake_root=dg.EnvVar("ARENA_LAKE_ROOT"),
                duckdb_memory_limit=dg.EnvVar("ARENA_DUCKDB_MEMORY_LIMIT"),
                s3_endpoint_url=dg.EnvVar("ARENA_S3_ENDPOINT_URL"),
                s3_access_key_id=dg.EnvVar("ARENA_S3_ACCESS_KEY_ID"),
                s3_secret_access_key=dg.EnvVar("ARENA_S3_SECRET_ACCESS_KEY"),
                s3_region=dg.EnvVar("ARENA_S3_REGION"),
                allow_empty_month=dg.EnvVar("ARENA_ALLOW_EMPTY_MONTH"),
            ),
        }
    )
