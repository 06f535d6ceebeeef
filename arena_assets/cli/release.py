"""`arena-assets release LAKE --month M --out ROOT`: a month's public release from the lake.

The release secret (from which each release's salt is derived) comes from the environment
variable named by ``--secret-env`` (default ARENA_RELEASE_SECRET), never from the command
line, where other users of the machine could read it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "release",
        help="write a month's Chat / Battle / Bench release and SFT export (Hugging Face layout)",
        description="Read the month's redacted conversations and battles from the lake and "
        "write arena-{chat,battle,bench,sft}-MONTH under OUT, each with a dataset card.",
    )
    p.add_argument("lake", help="lake root (local folder or s3://...)")
    p.add_argument("--month", required=True, help="YYYY-MM")
    p.add_argument("--out", required=True, help="release root (local folder or s3://...)")
    p.add_argument(
        "--bench",
        type=Path,
        default=None,
        help="bench prompts (Parquet or JSONL with question_id/uid and prompt)",
    )
    p.add_argument("--license", default="other", help="licence field of the cards")
    p.add_argument(
        "--secret-env",
        default="ARENA_RELEASE_SECRET",
        help="environment variable holding the release secret",
    )
    p.add_argument(
        "--name", default=None, help="release name the salt is derived from (default: the month)"
    )
    p.add_argument("--rows-per-shard", type=int, default=200_000)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arena_assets.release import UnsafeReleaseError, release_salt, write_month_release
    from arena_assets.storage import Lake

    secret = os.environ.get(args.secret_env, "")
    if not secret:
        print(f"error: set {args.secret_env} to the release secret", file=sys.stderr)
        return 2
    lake = Lake(args.lake, setting="LAKE")
    if args.month not in lake.months("conversations"):
        print(f"error: no conversations for {args.month} under {args.lake}", file=sys.stderr)
        return 2
    battles = lake.read("battles", args.month) if args.month in lake.months("battles") else None
    bench = None
    if args.bench:
        import polars as pl

        bench = (
            pl.read_parquet(args.bench)
            if args.bench.suffix == ".parquet"
            else pl.read_ndjson(args.bench)
        )
    try:
        summary = write_month_release(
            args.month,
            args.out,
            conversations=lake.read("conversations", args.month),
            battles=battles,
            bench=bench,
            salt=release_salt(secret, args.name or args.month),
            release_name=args.name or args.month,
            license=args.license,
            rows_per_shard=args.rows_per_shard,
        )
    except UnsafeReleaseError as exc:  # nothing was written: frames are checked first
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        json.dumps(
            {
                "datasets": summary.datasets,
                "rows": summary.rows,
                "battles": summary.battle_counts,
                "sft_skipped": summary.sft_skipped,
            },
            indent=2,
        )
    )
    return 0
