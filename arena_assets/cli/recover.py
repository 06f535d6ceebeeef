"""``arena-assets recover``: after a crash, free what dead runs and writes left behind.

- runs of this host's instance (``$DAGSTER_HOME``) whose worker process is gone: marked
  failed (cancelled when a cancel was pending) and their pool slots freed
  (``arena_assets.instance.reap_dead_runs``; the daemon's run monitoring does the same when
  it runs, ``make ui``);
- temporary files of writes whose process died, in every ``_tmp/`` folder of the lake and
  of the LLM answer cache (``arena_assets.inflight``; a live writer's file is kept);
- forgets whose rebuild is unfinished: listed, with the command that finishes them.

Every run ``arena-assets`` starts reaps dead runs first, so this is for runs started by
hand (``dagster asset materialize``) or to look. Settings: the shell, else ``.env``.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    cmd = subparsers.add_parser(
        "recover",
        help="fail dead runs, free their pool slots, delete orphaned temporary files",
        description=__doc__.splitlines()[0],
    )
    cmd.add_argument("--lake", default=None, help="lake root (default: $ARENA_LAKE_ROOT)")
    cmd.set_defaults(func=run_recover)


def sweep_lake(lake) -> list[str]:
    """Delete orphaned temporary files under every ``_tmp`` folder of the lake."""
    from arena_assets import inflight

    removed = []
    root = lake.folder("")
    for folder in sorted(lake.fs.glob(f"{root}**/_tmp")):
        removed += inflight.sweep(lake.fs, folder)
    return removed


def run_recover(args: argparse.Namespace) -> int:
    import os

    from arena_assets.envfile import setting
    from arena_assets.privacy import journal
    from arena_assets.storage import Lake

    if os.environ.get("DAGSTER_HOME"):
        import dagster as dg

        from arena_assets.instance import reap_dead_runs

        with dg.DagsterInstance.get() as instance:
            for run_id in reap_dead_runs(instance):
                run = instance.get_run_by_id(run_id)
                print(
                    f"run {run_id} ({run.job_name}, {run.tags.get('dagster/partition', '-')}):"
                    f" worker gone; now {run.status.value}, pool slots freed"
                )
    else:
        print("no DAGSTER_HOME: runs not checked")
    lake = Lake(
        args.lake or setting("ARENA_LAKE_ROOT", "./data/lake"),
        setting="--lake" if args.lake else "ARENA_LAKE_ROOT",
    )
    for path in sweep_lake(lake):
        print(f"deleted orphaned temporary file {path}")
    for entry in journal.unfinished(lake):
        months = sorted({m for ms in entry.pending().values() for m in ms})
        print(
            f"forget {entry.id}: rebuild unfinished for {', '.join(months) or 'its months'}; "
            "run arena-assets forget --resume --recompute"
        )
    return 0
