"""`arena-assets` command line: the library's entry points without Dagster.

Each sub-package that offers a command exposes ``register(subparsers)``; the command's
function receives the parsed ``argparse.Namespace`` and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# module paths whose ``register`` adds sub-commands. Building the parser imports each of
# them, so they import only argparse at module level and load their libraries inside the
# command's function: `arena-assets --help` stays fast. Every module here is part of this
# package, so a failing import is a bug and is raised, never skipped.
COMMAND_MODULES = (
    "arena_assets.simulator.cli",
    "arena_assets.ingest.cli",
    "arena_assets.ranking.cli",
    "arena_assets.pipeline.cli",
    "arena_assets.pipeline.ui",
    "arena_assets.judging.cli",
    "arena_assets.release.cli",
    "arena_assets.privacy.cli",
    "arena_assets.labels.cli",
    "arena_assets.pipeline.plan_cli",
    "arena_assets.site.cli",
    "arena_assets.evaluators.cli",
    "arena_assets.routing.cli",
    "arena_assets.recover",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena-assets",
        description="Arena logs to cleaned conversations, battles and leaderboards.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
