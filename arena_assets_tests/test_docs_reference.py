"""The front door and the generated reference stay true to the code: the README's asset graph
is the code location's, the command reference has every command, the asset reference every
asset, the README stays short, and no tracked file narrates the development history."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from arena_assets.cli.reference import (
    GRAPH_END,
    GRAPH_START,
    assets_reference,
    cli_reference,
    graph_mermaid,
    replace_graph_block,
)
from arena_assets.definitions import defs

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def definitions():
    return defs()


def test_the_readme_graph_is_the_code_locations(definitions):
    text = README.read_text()
    block = text[text.index(GRAPH_START) + len(GRAPH_START) : text.index(GRAPH_END)].strip()
    assert block == graph_mermaid(definitions), (
        "the README's asset graph is stale: run `arena-assets graph --write README.md`"
    )


def test_the_graph_has_every_asset_and_edge(definitions):
    graph = definitions.resolve_asset_graph()
    mermaid = graph_mermaid(definitions)
    for key in graph.materializable_asset_keys:
        name = key.to_user_string()
        assert f"\n    {name}\n" in mermaid
        for parent in graph.get(key).parent_keys:
            assert f"  {parent.to_user_string()} --> {name}" in mermaid
    # a stage named like one of its assets (battles) is a box of its own id
    assert 'subgraph stage_battles ["battles"]' in mermaid


def test_a_stale_block_is_replaced_and_a_missing_one_said():
    text = f"intro\n{GRAPH_START}\nold picture\n{GRAPH_END}\nrest\n"
    assert replace_graph_block(text, "new") == f"intro\n{GRAPH_START}\nnew\n{GRAPH_END}\nrest\n"
    with pytest.raises(ValueError, match="asset-graph"):
        replace_graph_block("no markers here", "new")


def test_the_command_reference_has_every_command():
    from arena_assets.cli import commands

    page = cli_reference()
    names = list(commands())
    assert len(names) > 20
    for name in names:
        assert f"### `arena-assets {name}`" in page
        assert f"usage: arena-assets {name}" in page
    # help is rendered at a fixed width, whatever the terminal
    help_lines = [b for i, b in enumerate(page.split("```")) if i % 2 == 1]
    assert max(len(line) for block in help_lines for line in block.splitlines()) <= 100


def test_the_asset_reference_lists_every_asset_with_its_checks(definitions):
    page = assets_reference(definitions)
    graph = definitions.resolve_asset_graph()
    for key in graph.materializable_asset_keys:
        assert f"| `{key.to_user_string()}` |" in page
    for check in graph.asset_check_keys:
        assert f"`{check.name}`" in page


def test_the_readme_is_a_short_front_door():
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    assert "make demo" in text and "make test" in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), f"README links to a missing page: {link}"


def test_no_tracked_file_narrates_the_development_history():
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    if not files:
        pytest.skip("not a git checkout")
    pattern = re.compile(r"\b(issue|stop)s? #?[0-9]+", re.IGNORECASE)
    found = []
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.suffix in {".png", ".parquet", ".gz", ".ico"}:
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        found += [f"{name}: {m.group(0)}" for m in pattern.finditer(text)]
    assert found == [], "say what and why; history belongs in git log:\n" + "\n".join(found)
