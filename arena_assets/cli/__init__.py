"""`arena-assets` command line: the library's entry points without Dagster.

Each sub-package that offers a command exposes ``register(subparsers)``; the command's
function receives the parsed ``argparse.Namespace`` and returns an exit code. A known
error it raises (``errors.ArenaError``) is printed as one line, exit status 2 (``main``).
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
    "arena_assets.cli.ingest",
    "arena_assets.cli.ranking",
    "arena_assets.cli.demo",
    "arena_assets.cli.backfill",
    "arena_assets.cli.runs",
    "arena_assets.cli.ui",
    "arena_assets.cli.judging",
    "arena_assets.cli.release",
    "arena_assets.cli.privacy",
    "arena_assets.cli.labels",
    "arena_assets.cli.plan",
    "arena_assets.cli.site",
    "arena_assets.cli.evaluators",
    "arena_assets.cli.routing",
    "arena_assets.cli.recover",
    "arena_assets.cli.reference",
)


def _parser_and_commands() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog="arena-assets",
        description="Arena logs to cleaned conversations, battles and leaderboards.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser, dict(sub.choices)


def build_parser() -> argparse.ArgumentParser:
    return _parser_and_commands()[0]


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by name, in `--help` order (the command reference)."""
    return _parser_and_commands()[1]


def main(argv: list[str] | None = None) -> int:
    """Run one command. The settings are judged first (``environment.check_settings``),
    and a known error (``errors.ArenaError``: a setting, a lake file, an endpoint, a month)
    ends the command with its one line on stderr and exit status 2; with
    ``ARENA_DEBUG=true`` the traceback comes first. Other errors keep their traceback."""
    import traceback

    from arena_assets.environment import check_settings, debug
    from arena_assets.errors import ArenaError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        check_settings()
        return int(args.func(args) or 0)
    except ArenaError as exc:
        if debug():
            traceback.print_exc()
        for line in str(exc).splitlines():  # a SettingError has a line per setting
            print(
                f"arena-assets {args.command}: error: {line.removeprefix('error: ')}",
                file=sys.stderr,
            )
        return 2


if __name__ == "__main__":
    sys.exit(main())
