"""The code location loads, and every asset is described, grouped and partitioned."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from arena_assets.definitions import defs as load_defs
from arena_assets.defs.partitions import monthly_partitions
from arena_assets_tests.conftest import env_example_keys

PROJECT = Path(__file__).resolve().parents[1]


def test_every_asset_is_described_grouped_and_monthly():
    defs = load_defs()
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"raw_logs", "raw_rejects", "conversations"} <= keys
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.description and len(node.description) > 40, key
        assert node.group_name and node.group_name != "default", key
        assert node.kinds, key
        assert node.partitions_def == monthly_partitions, key


def test_partition_keys_are_months():
    keys = monthly_partitions.get_partition_keys()
    assert keys[0] == "2024-01" and keys[1] == "2024-02"


def test_every_env_var_is_in_env_example():
    source = "\n".join(p.read_text() for p in (PROJECT / "arena_assets").rglob("*.py"))
    import re

    used = set(re.findall(r'EnvVar(?:\.int|\.bool)?\("([A-Z0-9_]+)"\)', source))
    assert used, "no EnvVar found"
    assert used <= env_example_keys(), used - env_example_keys()


def test_no_os_getenv_in_definitions():
    # configuration reaches the code location only through resources and dg.EnvVar
    for path in (PROJECT / "arena_assets" / "defs").rglob("*.py"):
        text = path.read_text()
        assert "os.getenv" not in text and "os.environ" not in text, path


def test_dg_check_defs(arena_env):
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("dg")), "check", "defs"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sql_ships_inside_package():
    from arena_assets.sqlfiles import sql

    assert "row_number()" in sql("clean", "latest_snapshots")
    # ./sql points at where the SQL lives: the cleaning stage's folder (the only SQL)
    assert (PROJECT / "sql").resolve() == (PROJECT / "arena_assets" / "clean" / "sql").resolve()


def test_lazy_package_exports_resolve_after_their_modules_load():
    """A package exports names lazily (PEP 562); a submodule with an exported name would
    shadow it once imported, so every export must still be what it names."""
    import importlib
    import pkgutil
    import types

    for package in ("arena_assets.ingest", "arena_assets.ranking", "arena_assets.simulator"):
        module = importlib.import_module(package)
        for info in pkgutil.iter_modules(module.__path__):
            if info.name != "cli":
                importlib.import_module(f"{package}.{info.name}")
        for name in module.__all__:
            assert not isinstance(getattr(module, name), types.ModuleType), f"{package}.{name}"


def test_cli_help_imports_no_heavy_library():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from arena_assets.cli import build_parser; "
            "build_parser(); print(sorted(m for m in ('polars', 'numpy', 'scipy', 'duckdb', "
            "'dagster') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == "[]"
