"""Shared resources: where the raw logs, the lake, the DuckDB catalog and the public site live.

Every stage uses ``storage`` (an ``ArenaStorage``); the catalog is dagster-duckdb's
``DuckDBResource``, injected into ``storage`` and also available on its own as
``catalog``. A stage's own settings live in ``defs/<stage>/resources.py``. Every field
bound here reads an environment variable listed in `.env.example`; `dagster dev` and the
`dagster` CLI load `.env` from the working directory.
"""

from __future__ import annotations

import os
import time
from typing import Any

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource
from pydantic import PrivateAttr

from arena_assets.errors import ArenaError
from arena_assets.storage import Lake, create_view, sql_literal


class StorageUnreachable(ArenaError, OSError):
    """An ``s3://`` root whose endpoint, bucket or credentials do not answer."""


_REACHABLE: set[tuple[str, str]] = set()  # (root, endpoint) that answered in this process


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
    # the folder catalog views are relative to (the project's; empty = the working
    # directory when ARENA_LAKE_ROOT is relative, else absolute paths): a copied checkout
    # then reads its own lake. `arena-assets ui/demo` set it for the Dagster processes they
    # start from another folder (envfile.dagster_workdir)
    project_dir: str = ""
    # "true": a step failing on a known error shows the traceback behind its one line
    # (defs/failures.py); a string, as allow_empty_month
    debug: str = "false"
    # the run a step's writes belong to (its instance and id), set in setup_for_execution:
    # the lake refuses a write once that run has ended or its process died
    _run: tuple[Any, str] | None = PrivateAttr(default=None)

    @property
    def empty_month_allowed(self) -> bool:
        return self.allow_empty_month.strip().lower() in ("1", "true", "yes", "on")

    @property
    def debug_enabled(self) -> bool:
        return self.debug.strip().lower() in ("1", "true", "yes", "on")

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        run = context.run
        if context.instance is not None and run is not None:
            self._run = (context.instance, run.run_id)

    def _write_guard(self) -> str | None:
        from arena_assets.instance import stale_writer

        instance, run_id = self._run or (None, None)
        return stale_writer(instance, run_id)

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

    @classmethod
    def from_settings(cls) -> ArenaStorage:
        """The storage a command outside Dagster uses: roots and S3 settings from the shell,
        else ``.env``, else the defaults (``envfile.setting``), over an in-memory catalog."""
        from arena_assets.envfile import setting

        return cls(
            catalog=DuckDBResource(database=":memory:"),
            raw_root=setting("ARENA_RAW_ROOT", "./data/raw"),
            lake_root=setting("ARENA_LAKE_ROOT", "./data/lake"),
            s3_endpoint_url=setting("ARENA_S3_ENDPOINT_URL", ""),
            s3_access_key_id=setting("ARENA_S3_ACCESS_KEY_ID", ""),
            s3_secret_access_key=setting("ARENA_S3_SECRET_ACCESS_KEY", ""),
            s3_region=setting("ARENA_S3_REGION", ""),
        )

    def _options_for(self, url: str) -> dict[str, Any]:
        return self.storage_options() if url.startswith("s3://") else {}

    def check_reachable(self, url: str, setting: str) -> None:
        """For an ``s3://`` root: one quick request (no retries) before a step starts, so
        an endpoint that is down, a bucket that does not exist or refused credentials stop
        the step with one line naming the setting, not minutes of retries and a botocore
        traceback. Checked once per process and root."""
        if not url.startswith("s3://") or (url, self.s3_endpoint_url) in _REACHABLE:
            return
        import fsspec

        opts = {
            **self.storage_options(),
            "skip_instance_cache": True,
            "config_kwargs": {
                "connect_timeout": 5,
                "read_timeout": 10,
                "retries": {"max_attempts": 1},
            },
        }
        bucket = url[len("s3://") :].split("/", 1)[0]
        where = (
            f"{url} ({setting}; S3 endpoint {self.s3_endpoint_url or 'AWS default'} "
            "from ARENA_S3_ENDPOINT_URL)"
        )
        try:
            fsspec.filesystem("s3", **opts).ls(bucket)
        except FileNotFoundError:
            raise StorageUnreachable(
                f"bucket {bucket!r} does not exist or is not visible with "
                f"these credentials: {where}"
            ) from None
        except Exception as exc:  # botocore / aiohttp errors have no common base worth naming
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise StorageUnreachable(f"cannot reach {where}: {first}") from None
        _REACHABLE.add((url, self.s3_endpoint_url))

    def raw_storage_options(self) -> dict[str, Any]:
        self.check_reachable(self.raw_root, "ARENA_RAW_ROOT")
        return self._options_for(self.raw_root)

    def lake(self) -> Lake:
        self.check_reachable(self.lake_root, "ARENA_LAKE_ROOT")
        # views are relative to the project: the one named, else the working directory when
        # the lake root is configured relative (./data/lake); an absolute root stays absolute
        relative = not self.lake_root.startswith("/") and "://" not in self.lake_root
        return Lake(
            self.lake_root,
            self._options_for(self.lake_root),
            allow_empty=self.empty_month_allowed,
            relative_to=self.project_dir or (os.getcwd() if relative else None),
            guard=self._write_guard,
        )

    def publish(self, asset: str, log=None) -> None:
        """Make sure the catalog has a view for ``asset`` (after its first file exists).

        The view reads a glob, so it is created once (or again when the lake root moved, or
        when an older view lacks the ``month`` column every view now has). The catalog is
        tried three times within about a second (another run of ours may be publishing);
        if it stays locked (e.g. a `duckdb` shell opened without -readonly) or cannot be
        written (a read-only file or folder) the run goes on at once: Parquet is the system
        of record, and the warning says so. (DuckDBResource's own retries waited ~100 s.)
        """
        lake = self.lake()
        try:
            with self._catalog_connection() as con:
                # the name inlined as a literal, not bound: a bound parameter makes DuckDB
                # import pandas (~0.5 s, once per run process) to check the value's type
                name = sql_literal(asset)
                found = con.execute(
                    f"select sql from duckdb_views() where view_name = {name} and not internal"
                ).fetchone()
                # views made before every view had a `month` (bench tables) are made again
                has_month = (
                    con.execute(
                        f"select count(*) from duckdb_columns() where table_name = {name} "
                        "and column_name = 'month'"
                    ).fetchone()[0]
                    > 0
                )
                if found is None or lake.glob_url(asset) not in found[0] or not has_month:
                    create_view(con, lake, asset)
        except (duckdb.Error, OSError) as exc:
            if log is None:
                raise
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            log.warning(
                f"catalog {self.catalog.database} not updated for {asset!r} ({first}); "
                "the Parquet files are written; the view appears on the next run "
                "(open the catalog with -readonly to leave it free)"
            )

    def _catalog_connection(self) -> duckdb.DuckDBPyConnection:
        for pause in (0.2, 0.6, None):  # ~1 s in all: a lock held longer is not ours
            try:
                return duckdb.connect(
                    self.catalog.database, config=dict(self.catalog.connection_config)
                )
            except duckdb.IOException:
                if pause is None:
                    raise
                time.sleep(pause)
        raise AssertionError("unreachable")


class SiteSettings(dg.ConfigurableResource):
    """Where the monthly leaderboard site goes (a folder or s3://bucket/prefix), where
    readers reach it, and what its pages show. `arena-assets site` reads the same
    variables (``cli/site.py``)."""

    site_root: str = "./data/site"
    site_name: str = "Arena leaderboard"
    # the base URL the site is served at (https://leaderboard.example.org/): links in
    # metadata point there; empty = the root itself (a file:// URL for a local folder)
    public_url: str = ""
    # a model with no vote in this many months up to the page's month counts as deprecated
    # (as does one the registry marks `"deprecated": true`); 0 = the registry alone
    deprecate_after_months: int = 2
    plot_top: int = 30  # models in the interval and win-rate figures
    heatmap_top: int = 20  # models in the win-fraction and battle-count heatmaps
    # processes drawing the figures (0 = one per core, at most 4)
    figure_workers: int = 0

    def options(self):
        from arena_assets.site.build import SiteOptions

        workers = self.figure_workers or min(4, os.cpu_count() or 1)
        return SiteOptions(
            site_name=self.site_name,
            plot_top=self.plot_top,
            heatmap_top=self.heatmap_top,
            workers=workers,
        )

    def page_url(self, month: str, board_page: str = "index.html") -> str:
        """Where the month's page of a board is (or will be, once the site is built)."""
        from arena_assets.site.publish import page_address

        return page_address(self.site_root, month, board_page, self.public_url)


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
                project_dir=dg.EnvVar("ARENA_PROJECT_DIR"),
                debug=dg.EnvVar("ARENA_DEBUG"),
            ),
            # the site stage writes it; the boards and the bench link their pages in metadata
            "site_settings": SiteSettings(
                site_root=dg.EnvVar("ARENA_SITE_ROOT"),
                site_name=dg.EnvVar("ARENA_SITE_NAME"),
                public_url=dg.EnvVar("ARENA_SITE_PUBLIC_URL"),
                deprecate_after_months=dg.EnvVar.int("ARENA_SITE_DEPRECATE_AFTER_MONTHS"),
                plot_top=dg.EnvVar.int("ARENA_SITE_PLOT_TOP"),
                heatmap_top=dg.EnvVar.int("ARENA_SITE_HEATMAP_TOP"),
            ),
        }
    )
