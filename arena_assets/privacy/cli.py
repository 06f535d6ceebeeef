"""``arena-assets forget --user USER_ID_OR_IP | --hash H [--dry-run] [--purge-raw]``.

Removes every row of one user from every lake table with a user column and prints what
it removed, per table and month, the months affected, and the raw files that still hold
the user's lines (blanked with ``--purge-raw``). With ``--recompute`` the derived tables
of the affected months are rebuilt here from the forgotten lake (conversations, battles,
and the leaderboards, the arena's and Copilot Arena's, of every month from the first
affected one); in Dagster the ``forget_user`` job does this by rematerializing those
partitions instead. Copilot Arena's raw records (``ARENA_COMPLETIONS_ROOT``, default
``<raw root>/_completions``) are searched and purged like the chat logs.

Settings come from the shell, else ``.env`` (``ARENA_LAKE_ROOT``, ``ARENA_RAW_ROOT``,
``ARENA_USER_SALT``); the options override them.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    cmd = subparsers.add_parser("forget", help="remove every row of one user from the lake",
                                description=__doc__.splitlines()[0])
    who = cmd.add_mutually_exclusive_group(required=True)
    who.add_argument("--user", help="the user id or IP address as the platform logs it")
    who.add_argument("--hash", dest="user_hash", help="the user's salted user_hash")
    cmd.add_argument("--dry-run", action="store_true", help="count, change nothing")
    cmd.add_argument("--purge-raw", action="store_true",
                     help="also blank the user's lines in the raw JSON-lines files")
    cmd.add_argument("--recompute", action="store_true",
                     help="rebuild conversations, battles and leaderboards (arena and Copilot "
                          "Arena) of affected months")
    cmd.add_argument("--lake", default=None, help="lake root (default: $ARENA_LAKE_ROOT)")
    cmd.add_argument("--raw-root", default=None, help="raw root (default: $ARENA_RAW_ROOT)")
    cmd.add_argument("--salt", default=None, help="user salt (default: $ARENA_USER_SALT)")
    cmd.set_defaults(func=run_forget)


def run_forget(args: argparse.Namespace) -> int:
    from arena_assets.envfile import setting
    from arena_assets.privacy.copilot import completions_root_for
    from arena_assets.privacy.forget import forget_user, user_hash_of
    from arena_assets.storage import Lake

    lake = Lake(args.lake or setting("ARENA_LAKE_ROOT", "./data/lake"))
    raw_root = args.raw_root or setting("ARENA_RAW_ROOT", "./data/raw")
    salt = args.salt or setting("ARENA_USER_SALT", "")
    if args.user is not None:
        if not salt:
            print("error: --user needs the salt ingest used (--salt or $ARENA_USER_SALT)",
                  file=sys.stderr)
            return 2
        user_hash = user_hash_of(args.user, salt)
    else:
        user_hash = args.user_hash
    completions_root = completions_root_for(raw_root)  # Copilot Arena's records (privacy.copilot)
    report = forget_user(lake, user_hash=user_hash, raw_root=raw_root, salt=salt,
                         identity=args.user, dry_run=args.dry_run, purge_raw=args.purge_raw,
                         completions_root=completions_root)
    for text in report.lines():
        print(text)
    left = [h for h in report.raw if h.line_nos and not h.purged]
    if left and not args.dry_run:
        print("warning: the raw files above still hold the user's lines; rematerializing "
              "raw_logs of those months would bring them back (use --purge-raw)")
    if args.recompute and report.affected_months and not args.dry_run:
        from arena_assets.privacy.recompute import recompute_after_forget

        for text in recompute_after_forget(lake, report.affected_months):
            print(text)
    elif report.affected_months and not args.dry_run:
        print("next: rematerialize conversations and battles of the affected months and "
              f"arena_leaderboard from {report.affected_months[0]} on (or rerun with --recompute)")
    return 0
