"""`arena-assets backfill` and `arena-assets summary` (and the `demo` command's wiring: the
demo itself is ``pipeline/demo.py``).

Runs go through the Dagster CLI against the project's instance (DAGSTER_HOME), i.e. the
same code path, executor and run storage the UI uses, so every run shows up in `make ui`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def _env_setting(name: str, default: str) -> str:
    """The demo runs outside Dagster: the shell's variable, else ``.env`` (python-dotenv's
    parser), else the default; the Dagster runs it starts see the same values
    (``envfile.dagster_workdir``)."""
    from arena_assets.envfile import setting

    return setting(name, default)


# the job that covers every asset for one month (arena_assets/defs/schedules.py)
EVERY_ASSET_JOB = "monthly_refresh"


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
    _reap_dead_runs()
    started, cpu = time.perf_counter(), _children_cpu()
    # Dagster's CLI loads .env over the shell's variables; this working directory's .env
    # holds the merged values with the shell winning (the dotenv convention)
    with dagster_workdir(".") as (workdir, env):
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-5000:] + proc.stderr[-5000:])
        raise SystemExit(f"materialization of {selection} for {month} failed")
    print(
        f"  {month}: materialized {selection} in {time.perf_counter() - started:.1f}s "
        f"(CPU {_children_cpu() - cpu:.1f}s)"
    )


def _reap_dead_runs() -> None:
    """Runs of the instance killed earlier hold pool slots that would block this run: fail
    them and free the slots first (arena_assets/instance.py; the daemon does it when up)."""
    if not os.environ.get("DAGSTER_HOME"):
        return
    import dagster as dg

    from arena_assets.instance import reap_dead_runs

    with dg.DagsterInstance.get() as instance:
        for run_id in reap_dead_runs(instance):
            print(f"  run {run_id}: its worker had died; marked ended, pool slots freed")


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _is_url(path: str) -> bool:
    return "://" in path


def _storage_options(url: str) -> dict:
    """fsspec options for an s3:// root from the ARENA_S3_* settings, built by the code
    location's own resource (one place decides what they mean)."""
    if not url.startswith("s3://"):
        return {}
    from arena_assets.defs.resources import ArenaStorage

    return ArenaStorage.from_settings().storage_options()


def _remove(path: str) -> None:
    if _is_url(path):
        import fsspec

        fs, root = fsspec.core.url_to_fs(path, **_storage_options(path))
        if fs.exists(root):
            fs.rm(root, recursive=True)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def summary(catalog_path: str, lake_root: str, raw_root: str) -> str:
    """Rows per asset and month, rejects by reason, and where everything is."""
    from arena_assets.storage import Lake, duckdb_connect

    out = []
    # an s3:// lake: the views read through the lake's fsspec filesystem
    lake = Lake(lake_root, _storage_options(lake_root))
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
    site_root = _env_setting("ARENA_SITE_ROOT", "./data/site")
    release_root = _env_setting("ARENA_RELEASE_ROOT", "./data/release")
    if _is_url(site_root) or os.path.exists(os.path.join(site_root, "index.html")):
        out.append(
            f"Leaderboard site: {site_root.rstrip('/')}/index.html   "
            "(arena-assets site --month YYYY-MM --serve: on http://127.0.0.1:8000)"
        )
    if _is_url(release_root) or os.path.isdir(release_root):
        out.append(
            f"Release:          {release_root}   (the month's public datasets, month_release)"
        )
    return "\n".join(out)


def backfill_plan(first: str, last: str, select: str | None):
    """The runs of a backfill, from the code location's assets and backfill policies, and
    each asset's op (a run selects ops of the every-asset job). One-line errors (MonthError)
    for a month that is not YYYY-MM, a reversed range, a month outside the partitions, or
    an unknown asset."""
    from arena_assets.definitions import defs as load_defs
    from arena_assets.defs.partitions import monthly_partitions
    from arena_assets.pipeline.backfill import (
        MonthError,
        months_between,
        plan_backfill,
        policy_of,
        stage_order,
        within_partitions,
    )

    months = within_partitions(
        months_between(first, last), list(monthly_partitions.get_partition_keys())
    )
    graph = load_defs().resolve_asset_graph()
    chosen = set(select.split(",")) if select else None
    assets, ops, deps = [], {}, {}
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        name = key.to_user_string()
        deps[name] = {p.to_user_string() for p in node.parent_keys}
        # default: every stage but the publishing ones (release, site): publishing is a decision
        if (name not in chosen) if chosen is not None else node.group_name in ("release", "site"):
            continue
        assets.append((name, *policy_of(node.backfill_policy)))
        ops[name] = node.assets_def.op.name
    if chosen is not None and chosen - set(ops):
        raise MonthError(f"unknown assets: {', '.join(sorted(chosen - set(ops)))}")
    # independent chains (the Copilot Arena tables beside the chat ones) form stages of
    # their own instead of splitting the chain wherever the topological order lists them
    return plan_backfill(stage_order(assets, deps), months), ops


def _job_command(assets: tuple[str, ...], ops: dict[str, str], tags: dict[str, str]) -> list[str]:
    """`dagster job execute` of the every-asset job, restricted to the run's ops, so the run
    and its materializations carry the job's name (an ad-hoc asset selection has none, which
    the UI's partition pages show as "Job None")."""
    from arena_assets.pipeline.backfill import run_ops

    selected = run_ops(assets, ops)
    dagster = Path(sys.executable).with_name("dagster")
    return [
        str(dagster),
        "job",
        "execute",
        "-m",
        "arena_assets.definitions",
        "-j",
        EVERY_ASSET_JOB,
        "-o",
        ",".join(selected),
        "--tags",
        json.dumps(tags),
    ]


# what the two publishing assets write outside the lake, per month: the site's month
# folder (its summary.json is written last) and the release's datasets (release/write.py)
RELEASE_DATASETS = ("chat", "battle", "bench", "sft")


def _published(root_url: str, month: str, asset: str) -> list[str]:
    """The month's existing files of a publishing asset under its root (names for the
    dry run: ``2024-02/`` or ``arena-chat-2024-02/``)."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(root_url, **_storage_options(root_url))
    root = root.rstrip("/")
    if asset == "leaderboard_site":
        return [f"{month}/"] if fs.exists(f"{root}/{month}/summary.json") else []
    return [
        f"arena-{kind}-{month}/"
        for kind in RELEASE_DATASETS
        if fs.exists(f"{root}/arena-{kind}-{month}")
    ]


def _overwrites(run, lake_root: str, site_root: str, release_root: str) -> list[str]:
    """``asset month`` for every partition of the run that already has files: in the lake,
    or under ARENA_SITE_ROOT / ARENA_RELEASE_ROOT for the site and the release (with the
    folders there that the run would rewrite)."""
    from arena_assets.storage import Lake

    lake = Lake(lake_root, _storage_options(lake_root))
    roots = {"leaderboard_site": site_root, "month_release": release_root}
    out = []
    for asset in run.assets:
        for month in run.months:
            if asset in roots:
                folders = _published(roots[asset], month, asset)
                if folders:
                    out.append(
                        f"{asset} {month} ({roots[asset].rstrip('/')}/: {', '.join(folders)})"
                    )
            elif lake.exists(asset, month):
                out.append(f"{asset} {month}")
    return out


def run_backfill(args: argparse.Namespace) -> int:
    import shlex

    from arena_assets.pipeline.backfill import MonthError

    if args.parallel < 1:
        print(
            f"arena-assets backfill: error: --parallel must be >= 1, got {args.parallel}",
            file=sys.stderr,
        )
        return 2
    if args.parallel > 1 or args.in_process_workers:
        if args.select:
            print(
                "arena-assets backfill: error: --parallel and --in-process-workers backfill "
                "every asset but the release and the site; leave out --select",
                file=sys.stderr,
            )
            return 2
        from arena_assets.pipeline.parallel_backfill import run_parallel_backfill

        return run_parallel_backfill(args)
    started = time.perf_counter()
    try:
        plan, ops = backfill_plan(args.first, args.last, args.select)
    except MonthError as exc:
        raise SystemExit(f"arena-assets backfill: {exc}") from None
    lake_root = _env_setting("ARENA_LAKE_ROOT", "./data/lake")
    site_root = _env_setting("ARENA_SITE_ROOT", "./data/site")
    release_root = _env_setting("ARENA_RELEASE_ROOT", "./data/release")
    for i, run in enumerate(plan, 1):
        command = _job_command(run.assets, ops, run.partition_tags)
        if args.dry_run:
            print(f"run {i}/{len(plan)}: {','.join(run.assets)} for {run.label}")
            print(f"  {shlex.join(['dagster', *command[1:]])}")
            existing = _overwrites(run, lake_root, site_root, release_root)
            print(
                f"  overwrites {len(existing)} existing partition(s)"
                + (f": {', '.join(existing)}" if existing else "")
            )
            continue
        _launch(command, f"{','.join(run.assets)} for {run.label}")
    if not args.dry_run:
        print(
            f"Backfill {args.first}..{args.last}: {len(plan)} runs in "
            f"{time.perf_counter() - started:.0f}s"
        )
    return 0


def _launch(cmd: list[str], what: str) -> None:
    from arena_assets.envfile import dagster_workdir

    started, cpu = time.perf_counter(), _children_cpu()
    with dagster_workdir(".") as (workdir, env):
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-5000:] + proc.stderr[-5000:])
        raise SystemExit(f"the run of {what} failed")
    print(f"  {what}: {time.perf_counter() - started:.1f}s (CPU {_children_cpu() - cpu:.1f}s)")


def run_summary(args: argparse.Namespace) -> int:
    print(
        summary(
            _env_setting("ARENA_CATALOG", "./data/arena.duckdb"),
            _env_setting("ARENA_LAKE_ROOT", "./data/lake"),
            _env_setting("ARENA_RAW_ROOT", "./data/raw"),
        )
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from arena_assets.pipeline.demo import (
        DEMO_CONVERSATIONS_PER_MONTH,
        DEMO_MONTHS,
        DEMO_SEED,
        run_demo,
    )

    demo = sub.add_parser("demo", help="simulate an arena and materialize every asset")
    demo.add_argument("--months", nargs="+", default=list(DEMO_MONTHS))
    demo.add_argument("--per-month", type=int, default=DEMO_CONVERSATIONS_PER_MONTH)
    demo.add_argument("--seed", type=int, default=DEMO_SEED)
    demo.add_argument(
        "--keep",
        dest="fresh",
        action="store_false",
        help="keep existing raw data, lake and catalog",
    )
    demo.add_argument(
        "--executor",
        choices=["in_process", "multiprocess"],
        default="in_process",
        help="the runs' executor: in_process (default; every month's run in "
        "this process, the steps one after another) or multiprocess (each month "
        "launched with `dg launch`, a process per step, as a run launched from "
        "the UI without run config)",
    )
    demo.add_argument(
        "--workers",
        type=int,
        default=2,
        help="in_process: runs at once, each in one of this many worker "
        "processes (months that do not depend on each other at once, as "
        "`backfill --parallel`); 1 = one run per month, one after another",
    )
    demo.set_defaults(func=run_demo)
    fill = sub.add_parser(
        "backfill",
        help="materialize a range of months through the Dagster instance",
        description="Runs in order, as the assets' backfill policies say (as a backfill "
        "from the UI runs them): assets without a policy one month per run, the LLM stages "
        "up to 3 months per run, single-run assets (the boards) one run for the whole "
        "range; months in order. Each run is the monthly_refresh job restricted to its "
        "assets, recorded in the instance (DAGSTER_HOME) and shown in the UI.",
    )
    fill.add_argument("--from", dest="first", required=True, help="first month, YYYY-MM")
    fill.add_argument("--to", dest="last", required=True, help="last month, YYYY-MM")
    fill.add_argument(
        "--select",
        default=None,
        help="comma-separated assets (default: every asset but the release and "
        "the site, which publish)",
    )
    fill.add_argument(
        "--dry-run",
        action="store_true",
        help="print the runs and the existing partitions each would overwrite; launch nothing",
    )
    fill.add_argument(
        "--parallel",
        type=int,
        default=1,
        metavar="N",
        help="up to N runs at once: months that do not read each other together "
        "(battles wait for the previous month's); every asset but the release "
        "and the site",
    )
    fill.add_argument(
        "--in-process-workers",
        action="store_true",
        help="execute the runs in N (--parallel) long-lived worker processes "
        "(Dagster and the code location loaded once a worker, not once a run)",
    )
    fill.set_defaults(func=run_backfill)
    summ = sub.add_parser("summary", help="rows per asset and month, rejects, locations")
    summ.set_defaults(func=run_summary)
