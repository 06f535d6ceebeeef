"""`arena-assets` command line: the library's entry points without Dagster.

Each sub-package that offers a command exposes ``register(subparsers)``; the command's
function receives the parsed ``argparse.Namespace`` and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# module paths whose ``register`` adds sub-commands; imported lazily so that
# `arena-assets --help` stays fast and one broken extra does not break the others.
COMMAND_MODULES = (
    "arena_assets.simulator.cli",
    "arena_assets.ingest.cli",
    "arena_assets.ranking.cli",
    "arena_assets.pipeline_cli",
    "arena_assets.labels.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena-assets",
        description="Arena logs to cleaned conversations, battles and leaderboards.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that part is not built in this checkout
                continue
            raise
        module.register(sub)
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
