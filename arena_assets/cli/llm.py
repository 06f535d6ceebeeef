"""`arena-assets llm export-batch` / `import-batch`: a month's requests of one LLM task as a
Batch-API request file answered elsewhere (OpenAI's Batch API by hand, vLLM's `run-batch`
on one's own GPUs, another provider), and the response file read back into the cache.
"""

from __future__ import annotations

import argparse
import sys

TASK_NAMES = ("labeler", "embed", "judge", "candidates")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "llm",
        help="a month's LLM requests as Batch-API files made and answered elsewhere",
        description="Export a month's pending requests of one LLM task as Batch-API request "
        "lines (custom_id = the request's cache key), answer them elsewhere (OpenAI's Batch "
        "API, `vllm run-batch -i FILE -o OUT --model M`, another provider), and import the "
        "response lines into the cache: the month's run then asks only what is still missing.",
    )
    sub = p.add_subparsers(dest="llm_command", metavar="COMMAND")
    ex = sub.add_parser(
        "export-batch",
        help="write a month's pending requests of a task as a Batch-API JSONL file",
        description="Every request the task's assets would send for the month and the "
        "cache does not answer, one line each: {custom_id, method, url, body}. Requests "
        "that depend on answers not cached yet (a judge's follow-up turn, the answers of a "
        "bench not built yet) are not pending yet: export again after an import.",
    )
    ex.add_argument("--task", required=True, choices=TASK_NAMES)
    ex.add_argument("--month", required=True, metavar="YYYY-MM")
    ex.add_argument("--out", default=None, help="the file to write (default: TASK-MONTH.jsonl)")
    ex.set_defaults(func=run_export)
    im = sub.add_parser(
        "import-batch",
        help="validate a Batch-API response file and fill the cache from it",
        description="Reads output lines {id, custom_id, response: {status_code, body}, error} "
        "(OpenAI's output and error files, vLLM run-batch's output), validates each answer "
        "with its stage's own parser and caches those that parse. Every line ends in one "
        "outcome: accepted, parse_failed, failed (an error line), unknown (its custom_id is "
        "no pending request of the task this month), duplicate or unreadable.",
    )
    im.add_argument("file", metavar="FILE")
    im.add_argument("--task", required=True, choices=TASK_NAMES)
    im.add_argument("--month", required=True, metavar="YYYY-MM")
    im.add_argument(
        "--report",
        default=None,
        metavar="OUT",
        help="write every line's outcome as JSON lines {custom_id, outcome, error}",
    )
    im.set_defaults(func=run_import)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _month_settings():
    from arena_assets.cli.plan import code_location_resources, settings_of

    r, _ = code_location_resources()
    return r["storage"].lake(), settings_of(r)


def _collect(args: argparse.Namespace, responses: bytes | None):
    from arena_assets.pipeline.backfill import MonthError, parse_month
    from arena_assets.pipeline.offline_batch import month_requests

    try:
        parse_month(args.month, "--month")
    except MonthError as exc:
        print(f"arena-assets llm: error: {exc}", file=sys.stderr)
        return None
    lake, settings = _month_settings()
    found = month_requests(lake, args.month, settings, args.task, responses)
    for asset, why in found.skipped.items():
        print(f"note: {asset} not planned: {why}", file=sys.stderr)
    return found


def run_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from arena_assets.llm.batch_files import MAX_BYTES, MAX_LINES

    found = _collect(args, None)
    if found is None:
        return 2
    lines = found.run.lines
    out = Path(args.out or f"{args.task}-{args.month}.jsonl")
    data = b"".join(line + b"\n" for line in lines.values())
    out.write_bytes(data)
    print(
        f"{len(lines):,} pending {args.task} requests of {args.month} ({len(data):,} bytes) -> {out}"
    )
    for cid, why in found.run.not_exported.items():
        print(f"not written: {cid}: {why}", file=sys.stderr)
    if len(lines) > MAX_LINES or len(data) > MAX_BYTES:
        print(
            f"note: OpenAI's Batch API takes at most {MAX_LINES:,} requests and 200 MB a file: "
            "split it by lines for OpenAI (vLLM's run-batch reads it whole)",
            file=sys.stderr,
        )
    return 0


def run_import(args: argparse.Namespace) -> int:
    import json
    from collections import Counter
    from pathlib import Path

    from arena_assets.llm.offline import OUTCOMES

    path = Path(args.file)
    if not path.is_file():
        print(f"arena-assets llm: error: no file {path}", file=sys.stderr)
        return 2
    found = _collect(args, path.read_bytes())
    if found is None:
        return 2
    outcomes = found.outcomes()
    counts = Counter(o for o, _ in outcomes.values())
    print(
        f"{len(outcomes):,} lines: "
        + ", ".join(f"{counts.get(o, 0):,} {o}" for o in OUTCOMES)
        + f"; {found.still_pending():,} pending {args.task} requests of {args.month} "
        "not answered by the file"
    )
    shown = [(cid, o, e) for cid, (o, e) in outcomes.items() if o != "accepted"]
    for cid, outcome, error in shown[:20]:
        print(f"  {outcome:12} {cid}: {error or ''}"[:200])
    if len(shown) > 20:
        print(f"  ... {len(shown) - 20:,} more (--report writes every line)")
    if args.report:
        with open(args.report, "w") as fh:
            for cid, (outcome, error) in outcomes.items():
                fh.write(json.dumps({"custom_id": cid, "outcome": outcome, "error": error}) + "\n")
    return 0
