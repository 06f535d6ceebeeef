"""`arena-assets backfill --parallel N`: the runs of ``backfill.plan_parallel`` built from the
code location's assets, policies and partition mappings, executed N at once."""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from arena_assets.pipeline.cli import _job_command, _reap_dead_runs, backfill_plan


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


def run_parallel_backfill(args: argparse.Namespace) -> int:
    """``--parallel N``: up to N runs at once, each as soon as what it reads is there: a
    process per run (``dagster job execute``, its log kept for a failure), or with
    ``--in-process-workers`` N long-lived workers (``worker_pool``)."""
    from arena_assets.envfile import dagster_workdir
    from arena_assets.pipeline.backfill import MonthError, run_ops, run_parallel
    from arena_assets.pipeline.worker_pool import cli_environment, execute_runs

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
            _reap_dead_runs()  # runs of a killed earlier backfill would hold pool slots
            left = execute_runs(plan, lambda run: run_ops(run.assets, ops), args.parallel)
            if left:
                _reap_dead_runs()  # a worker killed mid-run leaves its run STARTED
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
            cmd = _job_command(run.assets, ops, run.partition_tags)
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
