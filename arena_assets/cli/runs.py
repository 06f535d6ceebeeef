"""`arena-assets summary`, and one Dagster run for a month started from the shell
(``materialize``) against the project's instance (DAGSTER_HOME), so the UI shows it."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from arena_assets.cli.common import (
    EVERY_ASSET_JOB,
    children_cpu,
    env_setting,
    free_dead_runs,
    is_url,
    storage_options,
)


def materialize(
    selection: str, month: str, partition_args: list[str] | None = None, executor: str | None = None
) -> None:
    """One Dagster run for one month, or for the months of ``partition_args``, recorded in
    the instance.

    ``"*"`` for one month launches the named job covering every asset (`dg launch`), so the
    run and each materialization show that job in the UI (an ad-hoc asset selection shows
    "Job None"); other selections and partition ranges go through
    `dagster asset materialize`, which takes a range and honours backfill policies.
    ``executor``: ``"in_process"`` or ``"multiprocess"`` (the run config of the code
    location's default executor); None = the default, a process per step."""
    from arena_assets.envfile import dagster_workdir

    if selection == "*" and not partition_args:
        dg = Path(sys.executable).with_name("dg")
        cmd = [
            str(dg),
            "launch",
            "--job",
            EVERY_ASSET_JOB,
            "--partition",
            month,
            "-m",
            "arena_assets.definitions",
        ]
    else:
        dagster = Path(sys.executable).with_name("dagster")
        cmd = [
            str(dagster),
            "asset",
            "materialize",
            "-m",
            "arena_assets.definitions",
            "--select",
            selection,
            *(partition_args or ["--partition", month]),
        ]
    if executor:
        cmd += ["--config-json", json.dumps({"execution": {"config": {executor: {}}}})]
    free_dead_runs()
    started, cpu = time.perf_counter(), children_cpu()
    # Dagster's CLI loads .env over the shell's variables; this working directory's .env
    # holds the merged values with the shell winning (the dotenv convention)
    with dagster_workdir(".") as (workdir, env):
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-5000:] + proc.stderr[-5000:])
        raise SystemExit(f"materialization of {selection} for {month} failed")
    print(
        f"  {month}: materialized {selection} in {time.perf_counter() - started:.1f}s "
        f"(CPU {children_cpu() - cpu:.1f}s)"
    )


def summary(catalog_path: str, lake_root: str, raw_root: str) -> str:
    """Rows per asset and month, rejects by reason, and where everything is."""
    from arena_assets.storage import Lake, duckdb_connect

    out = []
    # an s3:// lake: the views read through the lake's fsspec filesystem
    lake = Lake(lake_root, storage_options(lake_root))
    with duckdb_connect(lake, catalog_path, read_only=True) as con:
        views = [
            r[0]
            for r in con.execute(
                "select view_name from duckdb_views() where not internal order by 1"
            ).fetchall()
        ]
        out.append("Rows per asset and month:")
        for view in views:
            rows = con.execute(
                f'select month, count(*) from "{view}" group by 1 order by 1'
            ).fetchall()
            cells = ", ".join(f"{m}: {n:,}" for m, n in rows) or "empty"
            out.append(f"  {view:<22} {cells}")
        if "raw_rejects" in views:
            out.append("Rejected raw lines by reason (all months):")
            for reason, n in con.execute(
                "select reason, count(*) n from raw_rejects group by 1 order by n desc, 1"
            ).fetchall():
                out.append(f"  {reason:<22} {n:,}")
    out += [
        f"Raw logs:        {raw_root}",
        f"Lake (Parquet):  {lake_root}",
        f"DuckDB catalog:  {catalog_path}   e.g. .venv/bin/duckdb -readonly {catalog_path} "
        '"select month, count(*) from conversations group by 1"',
        "Dagster UI:      make ui   (then open http://127.0.0.1:3000)",
    ]
    site_root = env_setting("ARENA_SITE_ROOT", "./data/site")
    release_root = env_setting("ARENA_RELEASE_ROOT", "./data/release")
    if is_url(site_root) or os.path.exists(os.path.join(site_root, "index.html")):
        out.append(f"Leaderboard site: {site_root.rstrip('/')}/index.html   ({_site_where()})")
    if is_url(release_root) or os.path.isdir(release_root):
        out.append(
            f"Release:          {release_root}   (the month's public datasets, month_release)"
        )
    return "\n".join(out)


def _site_where() -> str:
    """Where a reader opens the site, as the runs' metadata links it."""
    from arena_assets.cli.site_server import PUBLIC_URL_SETTING, local_root, serve_port

    public = env_setting(PUBLIC_URL_SETTING, "").strip()
    if public:
        return f"published at {public.rstrip('/')}/"
    port = serve_port(env_setting)
    if port and local_root(env_setting("ARENA_SITE_ROOT", "./data/site")) is not None:
        return f"`make ui` serves it on http://127.0.0.1:{port}/, where the runs link it"
    return "arena-assets site --month YYYY-MM --serve: on http://127.0.0.1:8000"


def run_summary(args: argparse.Namespace) -> int:
    print(
        summary(
            env_setting("ARENA_CATALOG", "./data/arena.duckdb"),
            env_setting("ARENA_LAKE_ROOT", "./data/lake"),
            env_setting("ARENA_RAW_ROOT", "./data/raw"),
        )
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    summ = sub.add_parser("summary", help="rows per asset and month, rejects, locations")
    summ.set_defaults(func=run_summary)
