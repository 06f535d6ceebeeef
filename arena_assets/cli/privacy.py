"""``arena-assets forget (--user USER_ID_OR_IP | --hash H | --resume) [--dry-run] [--purge-raw]
[--recompute]``.

Puts the user on the lake's forget list first (every later ingest of any month and source
keeps them out), removes them from every lake table (by hash, conversation id and the
prompts only they typed), rewrites the month releases and deletes the LLM answers computed
from their prompts alone, then prints what it removed per table and month, the releases
(with a warning for published ones), the cache entries, and the raw files of every month
folder that hold the user's lines (blanked with ``--purge-raw``; Copilot Arena's records
under ``ARENA_COMPLETIONS_ROOT``, default ``<raw root>/_completions``, likewise). The
forget is recorded in the lake's journal with the partitions to rebuild; ``--recompute``
rebuilds them here through the code location's own assets and resources (exactly what a
Dagster rematerialization computes), and finishes the rebuild of any earlier forget that
did not complete. ``--resume``: only that. Without ``--recompute`` it says what is left;
the Dagster ``forget_user`` job does the rebuild through the instance instead.

Settings: the shell's, else ``.env`` (``ARENA_LAKE_ROOT``, ``ARENA_RAW_ROOT``,
``ARENA_USER_SALT``, ``ARENA_LLM_CACHE_ROOT``, ``ARENA_RELEASE_*``, and for ``--recompute``
every variable the code location reads); the options override them. Runs are recorded in
``$DAGSTER_HOME`` when set.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    cmd = subparsers.add_parser(
        "forget",
        help="remove every row of one user from the lake",
        description=__doc__.splitlines()[0],
    )
    who = cmd.add_mutually_exclusive_group(required=True)
    who.add_argument("--user", help="the user id or IP address as the platform logs it")
    who.add_argument("--hash", dest="user_hash", help="the user's salted user_hash")
    who.add_argument(
        "--resume", action="store_true", help="no new user: finish the rebuild of earlier forgets"
    )
    cmd.add_argument("--dry-run", action="store_true", help="count, change nothing")
    cmd.add_argument(
        "--purge-raw",
        action="store_true",
        help="also blank the user's lines in the raw files of every month folder",
    )
    cmd.add_argument(
        "--recompute",
        action="store_true",
        help="rebuild what depends on the user through the assets (every unfinished forget)",
    )
    cmd.add_argument("--lake", default=None, help="lake root (default: $ARENA_LAKE_ROOT)")
    cmd.add_argument("--raw-root", default=None, help="raw root (default: $ARENA_RAW_ROOT)")
    cmd.add_argument("--salt", default=None, help="user salt (default: $ARENA_USER_SALT)")
    cmd.set_defaults(func=run_forget)


def run_forget(args: argparse.Namespace) -> int:
    from arena_assets.envfile import applied_to_environ, setting

    # the code location's EnvVars resolve in this process, the shell winning over .env and
    # an option over both (for the rebuild's resources too)
    options = {
        "ARENA_LAKE_ROOT": args.lake,
        "ARENA_RAW_ROOT": args.raw_root,
        "ARENA_USER_SALT": args.salt,
    }
    with applied_to_environ(overrides=options):
        from arena_assets.ingest.forgotten import ForgetListSaltError

        salt = setting("ARENA_USER_SALT", "")
        if not args.resume and not salt and (args.user is not None or not args.dry_run):
            print(
                "error: forget needs the salt ingest used (--salt or $ARENA_USER_SALT): it "
                "hashes --user, and the forget list is kept under it",
                file=sys.stderr,
            )
            return 2
        try:
            return _forget(args, salt)
        except ForgetListSaltError as exc:  # nothing was removed
            print(f"error: {exc}", file=sys.stderr)
            return 2


def _storage():
    from arena_assets.defs.resources import ArenaStorage

    return ArenaStorage.from_settings()


def _site_months() -> set[str]:
    """The months of the leaderboard site (rebuilt after a forget: their counts change)."""
    from arena_assets.envfile import setting
    from arena_assets.site.publish import SiteRoot

    root = setting("ARENA_SITE_ROOT", "./data/site")
    return set(SiteRoot(root, _storage()._options_for(root)).months())


def _forget(args: argparse.Namespace, salt: str) -> int:
    import os

    import dagster as dg

    from arena_assets.defs.privacy.rebuild import (
        materialized_months,
        pending_by_month,
        rebuild_in_process,
        rebuild_plan,
    )
    from arena_assets.envfile import setting
    from arena_assets.privacy import journal
    from arena_assets.privacy.copilot import completions_root_for
    from arena_assets.privacy.forget import forget_user, user_hash_of
    from arena_assets.privacy.releases import ReleaseTarget, released_months

    storage = _storage()
    lake = storage.lake()
    cache_root = (
        setting("ARENA_LLM_CACHE_ROOT", "") or f"{storage.lake_root.rstrip('/')}/_llm_cache"
    )
    root = setting("ARENA_RELEASE_ROOT", "./data/release")
    target = ReleaseTarget(
        root,
        setting("ARENA_RELEASE_SECRET", ""),
        setting("ARENA_RELEASE_LICENSE", "cc-by-4.0"),
        storage._options_for(root),
        setting("ARENA_RELEASE_PUBLISHED", ""),
    )
    instance = dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else None
    defs = None
    if not args.resume:
        user_hash = args.user_hash or user_hash_of(args.user, salt)
        plan = None
        if not args.dry_run:
            from arena_assets.definitions import defs as load_defs

            defs = load_defs()
            graph = defs.resolve_asset_graph()
            materialized = materialized_months(
                lake,
                instance,
                lambda: set(released_months(target, sorted(lake.months("conversations")))),
                _site_months,
            )
            plan = lambda months, edited: rebuild_plan(graph, months, materialized, edited)  # noqa: E731
        report = forget_user(
            lake,
            user_hash=user_hash,
            raw_root=storage.raw_root,
            salt=salt,
            identity=args.user,
            dry_run=args.dry_run,
            purge_raw=args.purge_raw,
            storage_options=storage.raw_storage_options(),
            release=target if target.secret else None,
            plan_rebuild=plan,
            completions_root=completions_root_for(storage.raw_root),  # Copilot Arena's records
            cache_root=cache_root,
            cache_storage_options=storage._options_for(cache_root),
        )
        for text in report.lines():
            print(text)
        if plan is not None and report.journal is not None:
            known = set(graph.get(dg.AssetKey("raw_logs")).partitions_def.get_partition_keys())
            outside = sorted(set(report.journal.months) - known)
            if outside:
                print(
                    f"warning: {', '.join(outside)} outside the code location's months "
                    "(ARENA_PARTITIONS_START..ARENA_PARTITIONS_END): what derives from the "
                    "user's rows there is not rebuilt by this forget"
                )
        left = [h for h in report.raw if h.line_nos and not h.purged]
        if left and not args.dry_run:
            print(
                "note: the raw files above still hold the user's lines: ingest keeps them "
                "out (the forget list), but their text stays there until purged "
                "(--purge-raw) or the files are replaced on the platform's side"
            )
    if args.dry_run:
        return 0
    pending = pending_by_month(journal.unfinished(lake))
    if not pending:
        print("nothing left to rebuild")
        return 0
    if not args.recompute:
        print("left to rebuild: " + "; ".join(f"{m}: {', '.join(a)}" for m, a in pending.items()))
        print("next: arena-assets forget --resume --recompute (or the Dagster forget_user job)")
        return 0
    if defs is None:
        from arena_assets.definitions import defs as load_defs

        defs = load_defs()
    with instance or dg.DagsterInstance.ephemeral() as run_instance:
        done = rebuild_in_process(defs, lake, run_instance, print)
    if not done:
        print(
            "the forget is recorded in the lake's journal: fix the cause and run "
            "arena-assets forget --resume --recompute to finish the rebuild",
            file=sys.stderr,
        )
        return 1
    return 0
