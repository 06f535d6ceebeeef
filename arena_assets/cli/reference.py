"""Reference text generated from the code itself, so it cannot drift: the command line
(from the argparse definitions) and the asset graph (from the code location's Definitions).

The documentation site renders both at build time (``docs/hooks.py``); the README keeps a
committed copy of the graph between two markers, which `arena-assets graph --write
README.md` refreshes and a test compares with the code location.
"""

from __future__ import annotations

import argparse
import os
import re
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

GRAPH_START = "<!-- asset-graph:start (generated: arena-assets graph --write README.md) -->"
GRAPH_END = "<!-- asset-graph:end -->"
HELP_WIDTH = "100"  # argparse wraps at $COLUMNS: a fixed width gives the same page anywhere


@contextmanager
def _help_width():
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def command_markdown(commands: dict[str, argparse.ArgumentParser], program: str) -> str:
    """One section per command of ``commands`` (name -> parser): its help text as
    `program NAME --help` prints it."""
    out = []
    with _help_width():
        for name, parser in commands.items():
            text = parser.format_help().rstrip()
            out += [f"### `{program} {name}`", "", "```text", text, "```", ""]
            for action in parser._actions:  # a command of commands (`arena-assets llm`)
                if isinstance(action, argparse._SubParsersAction):
                    for sub, child in action.choices.items():
                        text = child.format_help().rstrip()
                        out += [f"### `{program} {name} {sub}`", "", "```text", text, "```", ""]
    return "\n".join(out)


def cli_reference() -> str:
    """The `arena-assets` part of the command-line reference page."""
    from arena_assets.cli import commands

    return "\n".join(
        [
            "## arena-assets",
            "",
            "The product's commands: run the pipeline through Dagster, plan and budget the LLM "
            "stages, and use each stage's library on your own files without Dagster.",
            "",
            command_markdown(commands(), "arena-assets"),
        ]
    )


def asset_graph(definitions=None) -> tuple[dict[str, list[str]], list[tuple[str, str]], dict]:
    """(assets by stage, in the order stages first appear upstream; upstream -> downstream
    edges; each asset's node) from the code location's Definitions."""
    if definitions is None:
        from arena_assets.definitions import defs

        definitions = defs()
    graph = definitions.resolve_asset_graph()
    stages: dict[str, list[str]] = defaultdict(list)
    nodes, edges = {}, []
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if not node.is_materializable:
            continue
        name = key.to_user_string()
        stages[node.group_name].append(name)
        nodes[name] = node
        edges += [(p.to_user_string(), name) for p in sorted(node.parent_keys)]
    edges = [(a, b) for a, b in edges if a in nodes]
    return dict(stages), edges, nodes


def graph_mermaid(definitions=None) -> str:
    """A Mermaid flowchart of the asset graph, one box per stage."""
    stages, edges, _ = asset_graph(definitions)
    lines = ["```mermaid", "flowchart LR"]
    for stage, assets in stages.items():
        lines.append(f'  subgraph stage_{stage} ["{stage}"]')  # a stage may share an asset's name
        lines += [f"    {a}" for a in assets]
        lines.append("  end")
    lines += [f"  {a} --> {b}" for a, b in edges]
    lines.append("```")
    return "\n".join(lines)


def _first_sentence(text: str | None) -> str:
    text = " ".join((text or "").split())
    match = re.match(r"(.+?\.)(\s|$)", text)
    return (match.group(1) if match else text).replace("|", "\\|")


def assets_reference(definitions=None) -> str:
    """The asset-graph page: the picture, then every asset with its stage, checks and what
    it means to a user (its docstring's first sentence)."""
    if definitions is None:
        from arena_assets.definitions import defs

        definitions = defs()
    stages, _, nodes = asset_graph(definitions)
    checks: dict[str, list[str]] = defaultdict(list)
    for spec in definitions.resolve_asset_graph().asset_check_keys:
        checks[spec.asset_key.to_user_string()].append(spec.name)
    rows = ["| stage | asset | checks | what it is |", "| --- | --- | --- | --- |"]
    for stage, assets in stages.items():
        for a in assets:
            names = ", ".join(f"`{c}`" for c in sorted(checks.get(a, []))) or "–"
            rows.append(f"| {stage} | `{a}` | {names} | {_first_sentence(nodes[a].description)} |")
    return "\n".join(
        [
            "# Asset graph",
            "",
            "Generated from the code location's Definitions when the site is built. Every "
            "asset shares one monthly partitions definition; each stage is a Dagster asset "
            "group (a folder under `arena_assets/defs/`).",
            "",
            graph_mermaid(definitions),
            "",
            *rows,
            "",
        ]
    )


def replace_graph_block(text: str, graph: str) -> str:
    """``text`` with the part between the graph markers replaced by ``graph``."""
    start, end = text.find(GRAPH_START), text.find(GRAPH_END)
    if start < 0 or end < start:
        raise ValueError(f"no {GRAPH_START!r} ... {GRAPH_END!r} block")
    return text[: start + len(GRAPH_START)] + "\n" + graph + "\n" + text[end:]


def run_graph(args: argparse.Namespace) -> int:
    graph = graph_mermaid()
    if not args.write:
        print(graph)
        return 0
    for path in map(Path, args.write):
        try:
            text = path.read_text()
            updated = replace_graph_block(text, graph)
        except (OSError, ValueError) as exc:
            print(f"arena-assets graph: {path}: {exc}")
            return 2
        if updated != text:
            path.write_text(updated)
            print(f"{path}: asset graph updated")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser(
        "graph",
        help="the asset graph as a Mermaid flowchart, from the code location",
        description="Prints the code location's asset graph (one box per stage) as a Mermaid "
        "flowchart, or, with --write, refreshes the block between the asset-graph markers "
        "of the given Markdown files (the README's picture).",
    )
    g.add_argument("--write", nargs="+", metavar="FILE", help="Markdown files to refresh")
    g.set_defaults(func=run_graph)
