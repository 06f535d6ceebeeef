"""Resources: every setting the code location reads, each bound to an environment variable.

`.env.example` lists the variables with the defaults the demo uses; `dagster dev` and the
`dagster` CLI load `.env` from the working directory.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
import duckdb
import fsspec
from dagster_duckdb import DuckDBResource

from arena_assets.storage import Lake, create_view


class ArenaStorage(dg.ConfigurableResource):
    """Where raw logs are read from and where the lake and the DuckDB catalog live."""

    raw_root: str = "./data/raw"
    lake_root: str = "./data/lake"
    catalog_path: str = "./data/arena.duckdb"
    # DuckDB's memory cap for out-of-core steps (it spills to a temporary folder beyond it)
    duckdb_memory_limit: str = "2GB"
    # S3-compatible object storage (AWS, MinIO, moto...). Empty = s3fs's default chain
    # (AWS_* variables, instance role), so these never shadow credentials set elsewhere.
    s3_endpoint_url: str = ""
    s3_access_key_id: str = ""
    s3_secret_access_key: str = ""
    s3_region: str = ""

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
        return Lake(self.lake_root, self._options_for(self.lake_root))

    def publish(self, asset: str, log=None) -> None:
        """Make sure the catalog has a view for ``asset`` (after its first file exists).

        The view reads a glob, so it is created once (or again when the lake root moved).
        DuckDBResource retries with backoff while another process holds the catalog's
        write lock; if it stays locked (e.g. a `duckdb` shell opened without -readonly) the
        run still succeeds: Parquet is the system of record, and the warning says so.
        """
        lake = self.lake()
        try:
            with DuckDBResource(database=self.catalog_path).get_connection() as con:
                found = con.execute(
                    "select sql from duckdb_views() where view_name = ? and not internal",
                    [asset]).fetchone()
                if found is None or lake.glob_url(asset) not in found[0]:
                    create_view(con, lake, asset)
        except duckdb.Error as exc:
            if log is None:
                raise
            log.warning(f"catalog {self.catalog_path} not updated for {asset!r} ({exc}); "
                        "the Parquet files are written; the view appears on the next run")


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


class Moderation(dg.ConfigurableResource):
    """An OpenAI-compatible moderation endpoint; empty base_url = moderation columns stay null."""

    base_url: str = ""
    api_key: str = ""
    model: str = "omni-moderation-latest"
    max_concurrency: int = 4
    batch_size: int = 32

    def client(self):
        """The moderation client, or None when no endpoint is configured."""
        if not self.base_url:
            return None
        from arena_assets.clean import OpenAIModeration

        return OpenAIModeration(
            base_url=self.base_url, api_key=self.api_key or "none", model=self.model,
            batch_size=self.batch_size, max_concurrency=self.max_concurrency,
        )


class BattleRules(dg.ConfigurableResource):
    """The battle filter's settings (defaults documented in ``arena_assets.battles.config``).

    ``alias_table`` is a CSV file ``alias,canonical,valid_from,valid_to`` (dates may be
    empty); ``identity_names`` a JSON object ``{model: [names it may call itself]}``.
    """

    alias_table: str = ""
    identity_names: str = ""
    dedup_percentile: float = 99.9
    daily_vote_cap: int = 50
    # the sequential test's false-alarm bound per honest voter (see battles/anomaly.py);
    # a string because Dagster's EnvVar has no float form
    anomaly_alpha: str = "0.001"
    seed: int = 0

    def config(self, registry: list[dict] | None = None):
        """The BattleConfig; ``registry`` (models.json entries) adds every known model name
        and organisation to the identity-leak vocabulary, so an answer naming a model that
        has no vote this month is still caught."""
        import csv
        import json

        from arena_assets.battles import AnomalyConfig, BattleConfig

        aliases: list[tuple] = []
        if self.alias_table:  # fsspec: the table may live next to the logs on S3
            with fsspec.open(self.alias_table, "r", newline="") as fh:
                for row in csv.DictReader(fh):
                    aliases.append((row["alias"], row["canonical"],
                                    row.get("valid_from") or None, row.get("valid_to") or None))
        names = {}
        if self.identity_names:
            with fsspec.open(self.identity_names, "r") as fh:
                names = json.load(fh)
        registry = registry or []
        return BattleConfig(
            aliases=tuple(aliases), identity_names=names, dedup_percentile=self.dedup_percentile,
            known_models=tuple(sorted(r["name"] for r in registry)),
            extra_identity_words=tuple(sorted(
                {str(r["organization"]).lower() for r in registry if r.get("organization")})),
            daily_vote_cap=self.daily_vote_cap, anomaly=AnomalyConfig(alpha=float(self.anomaly_alpha)),
            seed=self.seed,
        )


class LeaderboardSettings(dg.ConfigurableResource):
    """How the arena leaderboard is fitted (Bradley-Terry on the Elo scale)."""

    bootstrap_rounds: int = 200
    ci_level: float = 0.95
    anchor_model: str = ""
    anchor_rating: float = 1000.0
    # models with fewer battles are left off a board; 300 suits real traffic, the demo
    # sets less through ARENA_MIN_BATTLES
    min_battles: int = 300
    # per-category boards need this many battles in the category to be published at all
    min_category_battles: int = 1000
    seed: int = 0

    def anchor(self) -> tuple[str, float] | None:
        return (self.anchor_model, self.anchor_rating) if self.anchor_model else None


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "storage": ArenaStorage(
                raw_root=dg.EnvVar("ARENA_RAW_ROOT"),
                lake_root=dg.EnvVar("ARENA_LAKE_ROOT"),
                catalog_path=dg.EnvVar("ARENA_CATALOG"),
                duckdb_memory_limit=dg.EnvVar("ARENA_DUCKDB_MEMORY_LIMIT"),
                s3_endpoint_url=dg.EnvVar("ARENA_S3_ENDPOINT_URL"),
                s3_access_key_id=dg.EnvVar("ARENA_S3_ACCESS_KEY_ID"),
                s3_secret_access_key=dg.EnvVar("ARENA_S3_SECRET_ACCESS_KEY"),
                s3_region=dg.EnvVar("ARENA_S3_REGION"),
            ),
            "ingest_settings": IngestSettings(
                user_salt=dg.EnvVar("ARENA_USER_SALT"),
                workers=dg.EnvVar.int("ARENA_INGEST_WORKERS"),
                allow_partial_files=dg.EnvVar("ARENA_ALLOW_PARTIAL_FILES"),
                raw_logs_retention_months=dg.EnvVar.int("ARENA_RAW_LOGS_RETENTION_MONTHS"),
            ),
            "battle_rules": BattleRules(
                alias_table=dg.EnvVar("ARENA_ALIAS_TABLE"),
                identity_names=dg.EnvVar("ARENA_IDENTITY_NAMES"),
                daily_vote_cap=dg.EnvVar.int("ARENA_DAILY_VOTE_CAP"),
                anomaly_alpha=dg.EnvVar("ARENA_ANOMALY_ALPHA"),
            ),
            "leaderboard_settings": LeaderboardSettings(
                bootstrap_rounds=dg.EnvVar.int("ARENA_BOOTSTRAP_ROUNDS"),
                min_battles=dg.EnvVar.int("ARENA_MIN_BATTLES"),
                min_category_battles=dg.EnvVar.int("ARENA_MIN_CATEGORY_BATTLES"),
                anchor_model=dg.EnvVar("ARENA_ANCHOR_MODEL"),
            ),
            "moderation": Moderation(
                base_url=dg.EnvVar("ARENA_MODERATION_BASE_URL"),
                api_key=dg.EnvVar("ARENA_MODERATION_API_KEY"),
                model=dg.EnvVar("ARENA_MODERATION_MODEL"),
            ),
        }
    )
