"""The architecture as code: the import-linter contracts of pyproject.toml hold (layers, the
simulator beside the product, no cycles), and no module imports another module's private
(``_name``) definitions: what two modules share is public where it belongs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("arena_assets", "arena_assets_tests", "benchmarks", "docs")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def private_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """Where ``source`` (the text of ``module``) uses another module's private name: ``from
    M import _x``, or ``m._x`` on a module it imported (``import M as m``, ``from P import
    m``). Only names of this project's modules and benchmark scripts count: a third-party
    library's internals are its own business."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    ours = ("arena_assets", "bench_")
    found, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source_module = ".".join(base + ([node.module] if node.module else []))
            else:
                source_module = node.module or ""
            if not source_module.startswith(ours):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and source_module != module:
                    found.append(f"{node.lineno}: from {source_module} import {alias.name}")
                else:
                    modules[alias.asname or alias.name] = f"{source_module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(ours):
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_the_scan_finds_private_imports_of_every_form():
    source = (
        "from arena_assets.battles.reference import _pair_frame, outcome_counts\n"
        "from .sources import _is_skipped\n"
        "from arena_assets.clean import snapshots\n"
        "import arena_assets.llm.tokens as tokens\n"
        "snapshots._Buckets(); tokens._TOKEN; snapshots.Buckets()\n"
        "from dagster._core.events import DagsterEventType\n"  # a library's: not ours
        "from arena_assets.ingest.parse import __all__\n"  # dunder: public
    )
    found = sorted(private_imports(source, "arena_assets.ingest.watch"))
    assert found == [
        "1: from arena_assets.battles.reference import _pair_frame",
        "2: from arena_assets.ingest.sources import _is_skipped",
        "5: snapshots._Buckets",
        "5: tokens._TOKEN",
    ]
    # a module's own private names are its own, however it names itself
    for own in ("from .watch import _x\n", "from arena_assets.ingest.watch import _x\n"):
        assert private_imports(own, "arena_assets.ingest.watch") == []


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            module = _module_name(path)
            for where in private_imports(path.read_text(), module, path.name == "__init__.py"):
                offenders.append(f"{path.relative_to(ROOT)}:{where}")
    assert offenders == [], "make these names public where they belong:\n" + "\n".join(offenders)


def test_the_import_contracts_hold():
    """Layers top to bottom, no production module importing the simulator, the simulator
    using libraries only, and no cycle at any depth (`lint-imports`, as CI runs it)."""
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
