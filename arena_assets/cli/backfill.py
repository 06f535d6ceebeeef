"""`arena-assets backfill`: a range of months materialized run by run, as the assets'
backfill policies say, or ``--parallel N`` runs at once (months that do not read each other
together). Runs go through the Dagster CLI against the project's instance (DAGSTER_HOME):
the same code path, executor and run storage the UI uses, so every run shows up there."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arena_assets.cli.common import (
    EVERY_ASSET_JOB,
    children_cpu,
    env_setting,
    free_dead_runs,
    storage_options,
)


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


def job_command(assets: tuple[str, ...], ops: dict[str, str], tags: dict[str, str]) -> list[str]:
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


def parallel_backfill_plan(first: str, last: str):
    """The runs of a backfill with what each waits for (``backfill.plan_parallel``), from
    the code location's assets, policies and partition mappings (the publishing stages,
    release and site, left out as in ``backfill_plan``)."""
    from arena_assets.definitions import defs as load_defs
    from arena_assets.pipeline.backfill import AssetNode, months_between, plan_parallel, policy_of

    graph = load_defs().resolve_asset_graph()
    nodes = []
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if node.group_name in ("release", "site"):
            continue
        deps = tuple(
            (
                p.to_user_string(),
                int(getattr(graph.get_partition_mapping(key, p), "start_offset", 0) or 0),
            )
            for p in node.parent_keys
        )
        nodes.append(AssetNode(key.to_user_string(), policy_of(node.backfill_policy)[0], deps))
    return plan_parallel(nodes, months_between(first, last))


# what the two publishing assets write outside the lake, per month: the site's month
# folder (its summary.json is written last) and the release's datasets (release/write.py)
RELEASE_DATASETS = ("chat", "battle", "bench", "sft")


def _published(root_url: str, month: str, asset: str) -> list[str]:
    """The month's existing files of a publishing asset under its root (names for the
    dry run: ``2024-02/`` or ``arena-chat-2024-02/``)."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(root_url, **storage_options(root_url))
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

    lake = Lake(lake_root, storage_options(lake_root))
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
        return run_parallel_backfill(args)
    started = time.perf_counter()
    try:
        plan, ops = backfill_plan(args.first, args.last, args.select)
    except MonthError as exc:
        raise SystemExit(f"arena-assets backfill: {exc}") from None
    lake_root = env_setting("ARENA_LAKE_ROOT", "./data/lake")
    site_root = env_setting("ARENA_SITE_ROOT", "./data/site")
    release_root = env_setting("ARENA_RELEASE_ROOT", "./data/release")
    for i, run in enumerate(plan, 1):
        command = job_command(run.assets, ops, run.partition_tags)
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

    started, cpu = time.perf_counter(), children_cpu()
    with dagster_workdir(".") as (workdir, env):
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-5000:] + proc.stderr[-5000:])
        raise SystemExit(f"the run of {what} failed")
    print(f"  {what}: {time.perf_counter() - started:.1f}s (CPU {children_cpu() - cpu:.1f}s)")


def run_parallel_backfill(args: argparse.Namespace) -> int:
    """``--parallel N``: up to N runs at once, each as soon as what it reads is there: a
    process per run (``dagster job execute``, its log kept for a failure), or with
    ``--in-process-workers`` N long-lived workers (``worker_pool``)."""
    from arena_assets.cli.worker_pool import cli_environment, execute_runs
    from arena_assets.envfile import dagster_workdir
    from arena_assets.pipeline.backfill import MonthError, run_ops, run_parallel

    started = time.perf_counter()
    try:  # the same month checks and op names as the sequential backfill
        ops = backfill_plan(args.first, args.last, None)[1]
    except MonthError as exc:
        raise SystemExit(f"arena-assets backfill: {exc}") from None
    plan = parallel_backfill_plan(args.first, args.last)
    for run in plan:
        print(
            f"{'+'.join(run.assets)} for {run.label}"
            + (f"  (after {len(run.after)} run(s))" if run.after else "")
        )
    if args.dry_run:
        return 0
    if args.in_process_workers:
        with cli_environment():
            free_dead_runs()  # runs of a killed earlier backfill would hold pool slots
            left = execute_runs(plan, lambda run: run_ops(run.assets, ops), args.parallel)
            if left:
                free_dead_runs()  # a worker killed mid-run leaves its run STARTED
        failed = [run for run in plan if run in left]
        print(
            f"Backfill {args.first}..{args.last}: {len(plan) - len(failed)} of {len(plan)} runs "
            f"in {time.perf_counter() - started:.0f}s, up to {args.parallel} at once "
            "(in-process workers)"
        )
        return 1 if failed else 0
    with dagster_workdir(".") as (workdir, env), tempfile.TemporaryDirectory() as logs:
        log_of: dict = {}

        def launch(run):
            cmd = job_command(run.assets, ops, run.partition_tags)
            log_of[run.key] = Path(logs) / f"run-{len(log_of)}.log"
            with log_of[run.key].open("w") as out:  # the child keeps its own descriptor
                return subprocess.Popen(
                    cmd, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT
                )

        done = run_parallel(plan, launch, args.parallel)
        failed = [run for run in plan if done.get(run.key, (None,))[0] != 0]
        for run in failed:
            where = f"{'+'.join(run.assets)} for {run.label}"
            if run.key not in done:
                print(f"  {where}: not started (it waits on a failed run)")
            else:
                print(f"  {where}: failed\n{log_of[run.key].read_text()[-3000:]}")
    print(
        f"Backfill {args.first}..{args.last}: {len(plan) - len(failed)} of {len(plan)} runs "
        f"in {time.perf_counter() - started:.0f}s, up to {args.parallel} at once"
    )
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction) -> None:
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
