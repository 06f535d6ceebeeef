"""``arena-assets ingest RAW_ROOT --month YYYY-MM --out DIR``: parse one month to Parquet.

Runs the same month step as the ``raw_logs`` asset (``arena_assets.pipeline.ingest``) with
DIR as the lake: it writes ``DIR/raw_logs/<month>.parquet`` and
``DIR/raw_rejects/<month>.parquet`` part by part (bounded memory), each under a temporary
name renamed at the end, so an interrupted run leaves the previous files intact. Prints
counts per file and reason. A build smaller than the month already in DIR (a raw file it
was built from gone or cut short, or more than ARENA_SHRINK_MAX_FRACTION fewer accepted
lines) is refused in one line and nothing is written, unless --allow-shrink or
ARENA_ALLOW_SHRINK=true.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

DEFAULT_SALT_ENV = "ARENA_USER_SALT"
MAX_FILES_LISTED = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    cmd = subparsers.add_parser(
        "ingest",
        help="parse one month of raw logs into Parquet",
        description=__doc__.splitlines()[0],
    )
    cmd.add_argument("raw_root", metavar="RAW_ROOT", help="folder or fsspec URL holding YYYY-MM/")
    cmd.add_argument("--month", required=True, help="partition month, YYYY-MM")
    cmd.add_argument(
        "--out",
        required=True,
        type=Path,
        help="local lake folder (gets raw_logs/ and raw_rejects/)",
    )
    cmd.add_argument(
        "--salt",
        default=None,
        help=f"salt for user hashes (default: ${DEFAULT_SALT_ENV}, else 'arena')",
    )
    cmd.add_argument("--workers", type=int, default=1, help="processes parsing files")
    cmd.add_argument(
        "--allow-shrink",
        action="store_true",
        help="replace a month in DIR with a smaller build (default: $ARENA_ALLOW_SHRINK)",
    )
    cmd.add_argument(
        "--no-registry",
        action="store_true",
        help="ignore RAW_ROOT/models.json (accept any model name)",
    )
    cmd.set_defaults(func=run_ingest)


def run_ingest(args: argparse.Namespace) -> int:
    from arena_assets.ingest.forgotten import ForgetListSaltError
    from arena_assets.ingest.shrink import ShrinkError
    from arena_assets.ingest.sources import load_model_registry
    from arena_assets.pipeline.ingest import MissingMonthError, ingest_month
    from arena_assets.storage import EmptyPartitionError, Lake

    try:
        rule = _shrink_rule(args.allow_shrink)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    salt = args.salt or os.environ.get(DEFAULT_SALT_ENV)
    if not salt:
        salt = "arena"
        print(
            f"warning: no --salt and no ${DEFAULT_SALT_ENV}: user hashes use a public salt",
            file=sys.stderr,
        )
    known = None if args.no_registry else load_model_registry(args.raw_root)
    lake = Lake(str(args.out), setting="--out")
    started = time.perf_counter()
    try:
        stats = ingest_month(
            lake,
            args.raw_root,
            args.month,
            salt=salt,
            known_models=known,
            workers=args.workers,
            shrink=rule,
        )
    except (
        MissingMonthError,
        EmptyPartitionError,
        ShrinkError,
        ForgetListSaltError,
    ) as exc:  # nothing was written
        print(f"error: {exc}", file=sys.stderr)
        return 2
    listing = stats.listing
    if listing is not None and listing.skipped:
        print(listing.describe(), file=sys.stderr)  # never skipped silently
    _report(
        stats,
        time.perf_counter() - started,
        [lake.url("raw_logs", args.month), lake.url("raw_rejects", args.month)],
    )
    for message in stats.partial_files:
        print(f"warning: partial file: {message}", file=sys.stderr)
    if stats.shrink_allowed_by:
        print(
            f"warning: replaced by a smaller build, allowed by {stats.shrink_allowed_by}: "
            + stats.comparison.losses(rule.max_fraction),
            file=sys.stderr,
        )
    return 0


def _shrink_rule(allow: bool):
    """The shrink guard's rule from the flag and the settings (shell, then .env)."""
    from arena_assets import settings
    from arena_assets.envfile import setting
    from arena_assets.ingest.shrink import ShrinkRule

    limit = setting("ARENA_SHRINK_MAX_FRACTION", "0.2")
    allowed = setting("ARENA_ALLOW_SHRINK", "false")
    problem = settings.check("ARENA_SHRINK_MAX_FRACTION", limit)
    problem = problem or settings.check("ARENA_ALLOW_SHRINK", allowed)
    if problem:
        raise ValueError(problem)
    by = "--allow-shrink" if allow else ""
    if not by and allowed.strip().lower() in ("1", "true", "yes", "on"):
        by = "ARENA_ALLOW_SHRINK=true"
    return ShrinkRule(
        max_fraction=float(limit),
        allowed_by=by,
        how_to_allow="rerun with --allow-shrink or set ARENA_ALLOW_SHRINK=true",
    )


def _report(stats, elapsed: float, written: list[str]) -> None:
    from arena_assets.contracts import REJECT_REASONS

    print(
        f"month {stats.month}: {len(stats.per_file)} files, {stats.lines_read:,} lines, "
        f"{stats.accepted:,} accepted, {stats.rejected:,} rejected in {elapsed:.1f}s"
    )
    shown = list(stats.per_file.items())
    if len(shown) > MAX_FILES_LISTED:  # a month of daily files: the worst ones matter
        shown = sorted(shown, key=lambda kv: -kv[1][2])[:MAX_FILES_LISTED]
        print(f"  (the {MAX_FILES_LISTED} files with most rejects)")
    for name, (n, ok, bad) in shown:
        print(f"  {name}: {n:,} lines, {ok:,} accepted, {bad:,} rejected")
    if stats.rejects_by_reason:
        print("rejects by reason:")
        for reason, count in stats.rejects_by_reason.items():
            print(f"  {reason:<22} {count:>9,}  {REJECT_REASONS.get(reason, '')}")
    for url in written:
        print(f"wrote {url}")
    sys.stdout.flush()
