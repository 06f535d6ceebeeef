"""``arena-assets ingest RAW_ROOT --month YYYY-MM --out DIR``: parse one month to Parquet.

Writes ``raw_logs.parquet`` and ``raw_rejects.parquet`` into DIR part by part (bounded
memory, see ``parse.iter_parsed_files``), each under a temporary name renamed at the end,
so an interrupted run leaves the previous files intact. Prints counts per file and reason.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from arena_assets.schema import REJECT_REASONS

from .frames import empty_raw_logs, empty_rejects
from .parse import iter_parsed_files, partial_files
from .sources import load_model_registry, scan_month

DEFAULT_SALT_ENV = "ARENA_USER_SALT"
MAX_FILES_LISTED = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    cmd = subparsers.add_parser("ingest", help="parse one month of raw logs into Parquet",
                                description=__doc__.splitlines()[0])
    cmd.add_argument("raw_root", metavar="RAW_ROOT", help="folder or fsspec URL holding YYYY-MM/")
    cmd.add_argument("--month", required=True, help="partition month, YYYY-MM")
    cmd.add_argument("--out", required=True, type=Path, help="local output folder")
    cmd.add_argument("--salt", default=None,
                     help=f"salt for user hashes (default: ${DEFAULT_SALT_ENV}, else 'arena')")
    cmd.add_argument("--workers", type=int, default=1, help="processes parsing files")
    cmd.add_argument("--no-registry", action="store_true",
                     help="ignore RAW_ROOT/models.json (accept any model name)")
    cmd.set_defaults(func=run_ingest)


def run_ingest(args: argparse.Namespace) -> int:
    salt = args.salt or os.environ.get(DEFAULT_SALT_ENV)
    if not salt:
        salt = "arena"
        print(f"warning: no --salt and no ${DEFAULT_SALT_ENV}: user hashes use a public salt",
              file=sys.stderr)
    known = None if args.no_registry else load_model_registry(args.raw_root)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    targets = {"raw_logs": out / "raw_logs.parquet", "raw_rejects": out / "raw_rejects.parquet"}
    temps = {k: p.with_name(f".{p.name}.{os.getpid()}.tmp") for k, p in targets.items()}
    writers: dict[str, pq.ParquetWriter] = {}
    per_file: dict[str, list[int]] = {}
    reasons: Counter[str] = Counter()
    lines = accepted = 0
    partial: list[str] = []
    listing = scan_month(args.raw_root, args.month)
    if not listing.folder_exists or listing.skipped:
        print(listing.describe(), file=sys.stderr)  # never skipped silently
    started = time.perf_counter()
    try:
        for part in iter_parsed_files(args.raw_root, args.month, salt=salt, known_models=known,
                                      workers=args.workers):
            for key, frame in (("raw_logs", part.raw_logs), ("raw_rejects", part.rejects)):
                table = frame.to_arrow()
                if key not in writers:
                    writers[key] = pq.ParquetWriter(temps[key], table.schema, compression="zstd")
                writers[key].write_table(table)
            counts = per_file.setdefault(part.source_file, [0, 0, 0])
            counts[0] += part.lines_read
            counts[1] += part.raw_logs.height
            counts[2] += part.rejects.height
            reasons.update(part.rejects["reason"].to_list())
            partial += partial_files(part.rejects)
            lines += part.lines_read
            accepted += part.raw_logs.height
        _finish(writers, temps, targets)
    except BaseException:
        for writer in writers.values():
            writer.close()
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise
    elapsed = time.perf_counter() - started
    _report(args.month, per_file, reasons, lines, accepted, elapsed, targets)
    for message in partial:
        print(f"warning: partial file: {message}", file=sys.stderr)
    return 0


def _finish(writers: dict, temps: dict[str, Path], targets: dict[str, Path]) -> None:
    empties = {"raw_logs": empty_raw_logs, "raw_rejects": empty_rejects}
    for key, target in targets.items():
        if key in writers:
            writers[key].close()
        else:  # no files in the month: still write empty tables with the right schema
            empties[key]().write_parquet(temps[key])
        os.replace(temps[key], target)


def _report(month: str, per_file: dict[str, list[int]], reasons: Counter[str], lines: int,
            accepted: int, elapsed: float, targets: dict[str, Path]) -> None:
    print(f"month {month}: {len(per_file)} files, {lines:,} lines, {accepted:,} accepted, "
          f"{lines - accepted:,} rejected in {elapsed:.1f}s")
    shown = list(per_file.items())
    if len(shown) > MAX_FILES_LISTED:  # a month of daily files: the worst ones matter
        shown = sorted(shown, key=lambda kv: -kv[1][2])[:MAX_FILES_LISTED]
        print(f"  (the {MAX_FILES_LISTED} files with most rejects)")
    for name, (n, ok, bad) in shown:
        print(f"  {name}: {n:,} lines, {ok:,} accepted, {bad:,} rejected")
    if reasons:
        print("rejects by reason:")
        for reason, count in reasons.most_common():
            print(f"  {reason:<22} {count:>9,}  {REJECT_REASONS.get(reason, '')}")
    for path in targets.values():
        print(f"wrote {path}")
    sys.stdout.flush()
