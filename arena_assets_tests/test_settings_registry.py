"""The registry of every ARENA_* setting (arena_assets/settings.py) covers what the code
reads, statically and at run time; `.env.example` is its rendering; `check` names the
variable, the value and what is allowed."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from dotenv import dotenv_values

from arena_assets import settings
from arena_assets_tests.conftest import arena_env_values

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "arena_assets"
# the simulator stands beside the product (its own settings are its own); the registry
# itself builds names from its templates
NOT_SCANNED = (PACKAGE / "simulator", PACKAGE / "settings.py")

NAME = re.compile(r"ARENA_[A-Z0-9_]+")
TEMPLATE = re.compile(r"ARENA_[A-Z0-9_{}]+")  # an f-string's constant parts, {} per field


class Found:
    """What a source reads: ARENA_* names, f-string name templates (``ARENA_{}_MODEL``),
    the task prefixes passed to ``llm_task_resource`` and calls of it whose prefix is not
    a literal."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # name -> where
        self.templates: dict[str, str] = {}
        self.prefixes: dict[str, str] = {}
        self.dynamic_prefixes: list[str] = []

    def scan(self, source: str, where: str = "<source>") -> Found:
        tree = ast.parse(source)
        fragments = set()  # constant parts of f-strings: read as templates, not names
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                fragments.update(id(v) for v in node.values)
                text = "".join(
                    v.value if isinstance(v, ast.Constant) else "{}" for v in node.values
                )
                if "{}" in text and TEMPLATE.fullmatch(text):
                    self.templates.setdefault(text, f"{where}:{node.lineno}")
            elif isinstance(node, ast.Call) and _callee(node) == "llm_task_resource":
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    self.prefixes.setdefault(arg.value, f"{where}:{node.lineno}")
                else:
                    self.dynamic_prefixes.append(f"{where}:{node.lineno}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in fragments
                and NAME.fullmatch(node.value)
            ):
                self.names.setdefault(node.value, f"{where}:{node.lineno}")
        return self

    def problems(self) -> list[str]:
        """One line per name, template or prefix the registry does not cover."""
        out = [
            f"{where}: {name} is not in arena_assets/settings.py"
            for name, where in sorted(self.names.items())
            if name not in registered()
        ]
        suffixes = set(settings.LLM_TASK_SUFFIXES)
        for template, where in sorted(self.templates.items()):
            match = re.fullmatch(r"ARENA_\{\}_([A-Z0-9_]+)", template)
            if not match or match[1] not in suffixes:
                out.append(
                    f"{where}: {template} is not a per-task name ARENA_{{TASK}}_<one of "
                    f"{sorted(suffixes)}>; register its settings in arena_assets/settings.py"
                )
        for prefix, where in sorted(self.prefixes.items()):
            if prefix not in settings.LLM_TASK_PREFIXES:
                out.append(
                    f"{where}: llm_task_resource({prefix!r}) is not a task of "
                    "LLM_TASK_PREFIXES in arena_assets/settings.py"
                )
        out += [
            f"{where}: llm_task_resource with a prefix that is not a literal (the scan "
            "cannot see which settings it reads)"
            for where in self.dynamic_prefixes
        ]
        return out

    def read_names(self) -> set[str]:
        """Every name the code reads: the literal ones and each template with each prefix."""
        expanded = {
            t.replace("{}", p) for t in self.templates for p in self.prefixes if t.count("{}") == 1
        }
        return set(self.names) | expanded


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def registered() -> set[str]:
    return {s.name for s in settings.SETTINGS}


def scan_package() -> Found:
    found = Found()
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(path == p or p in path.parents for p in NOT_SCANNED):
            continue
        found.scan(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    return found


# --- the code reads nothing the registry lacks, and the registry holds nothing unread -----


def test_every_setting_the_code_reads_is_registered():
    found = scan_package()
    assert len(found.names) > 50 and found.templates and found.prefixes  # the scan sees them
    assert found.problems() == []


def test_every_registered_setting_is_read_by_the_code():
    found = scan_package()
    assert set(found.prefixes) == set(settings.LLM_TASK_PREFIXES)
    assert sorted(registered() - found.read_names()) == []


def test_the_scan_catches_an_unregistered_setting():
    """A new ``dg.EnvVar("ARENA_NEW")``, a per-task suffix or a task prefix that nobody
    registered fails the test above, with the file and line."""
    source = """
import dagster as dg
def resources():
    return dict(
        new=dg.EnvVar("ARENA_NEW"),
        known=dg.EnvVar("ARENA_RAW_ROOT"),
        seed=dg.EnvVar.int("ARENA_SIM_WORLD_SEED"),
        timeout=dg.EnvVar(f"ARENA_{prefix}_TIMEOUT"),
        url=dg.EnvVar(f"ARENA_{prefix}_BASE_URL"),
        task=llm_task_resource("TRANSLATOR"),
        judge=llm_task_resource("JUDGE"),
        message=f"ARENA_PARTITIONS_END={end} is before ARENA_PARTITIONS_START",
    )
"""
    problems = Found().scan(source, "new.py").problems()
    assert len(problems) == 3, problems
    assert problems[0] == "new.py:5: ARENA_NEW is not in arena_assets/settings.py"
    assert "new.py:8: ARENA_{}_TIMEOUT is not a per-task name" in problems[1]
    assert "new.py:10: llm_task_resource('TRANSLATOR')" in problems[2]
    assert Found().scan('x = f"ARENA_{a}_{b}_URL"').problems()  # an unknown template shape
    assert Found().scan("r = llm_task_resource(name)").problems()  # a prefix not known


RECORDER = r"""
import json, os, sys

class Recording(dict):
    # os.environ, recording every ARENA_* name looked up (a copy of the whole mapping is
    # no lookup: dict() of a dict subclass copies without __getitem__)
    read = set()

    def _note(self, key):
        if isinstance(key, str) and key.startswith("ARENA_"):
            Recording.read.add(key)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._note(key)
        return super().__contains__(key)

os.environ = Recording(os.environ)
import dagster as dg
from arena_assets.definitions import defs

loaded = defs()
with dg.build_resources(dict(loaded.resources)):
    pass
print(json.dumps(sorted(Recording.read)))
"""


def test_every_setting_read_while_loading_the_code_location_is_registered(tmp_path):
    """At run time too: the code location loaded and every resource built (their
    ``EnvVar`` fields resolved) with ``os.environ`` replaced by a recording mapping, in a
    fresh process, so that what modules read when they are imported is seen as well."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env.update(arena_env_values(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", RECORDER],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    read = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    # the partition bounds (read when the partitions module is imported) and the resources'
    assert {"ARENA_PARTITIONS_START", "ARENA_RAW_ROOT", "ARENA_JUDGE_MODEL"} <= read
    assert len(read) > 100
    assert sorted(read - registered()) == []


# --- .env.example is the registry's rendering -------------------------------------------------


def test_env_example_is_generated_from_the_registry():
    text = (ROOT / ".env.example").read_text()
    assert text == settings.env_example(), (
        ".env.example differs from the registry: run "
        "`python -m arena_assets.settings --env-example > .env.example`"
    )
    parsed = {k: v or "" for k, v in dotenv_values(stream=io.StringIO(text)).items()}
    assert parsed == settings.defaults()  # python-dotenv reads back every default exactly
    assert list(parsed) == [s.name for s in settings.SETTINGS]


def test_env_example_keeps_its_opening_paragraph_and_wraps_comments():
    lines = settings.env_example().splitlines()
    assert lines[0].startswith("# Every variable the code location reads.")
    assert "see arena_assets/envfile.py." in lines[2]
    help_lines = [line for line in lines[3:] if line.startswith("# ") and "---" not in line]
    assert help_lines and all(len(line) <= 92 for line in help_lines)


def test_every_default_passes_its_own_check():
    assert {s.name: settings.check(s.name, s.default) for s in settings.SETTINGS} == dict.fromkeys(
        registered()
    )


# --- the registry's API --------------------------------------------------------------------


def test_per_task_settings_come_from_one_template():
    for prefix in settings.LLM_TASK_PREFIXES:
        for suffix in settings.LLM_TASK_SUFFIXES:
            if prefix == "REWARD" and suffix in settings.BATCH_SUFFIXES:
                # the reward model's Pooling API has no Batch-API form: no mode to choose
                with pytest.raises(KeyError):
                    settings.get(f"ARENA_{prefix}_{suffix}")
                continue
            setting = settings.get(f"ARENA_{prefix}_{suffix}")
            assert setting.group == "LLM endpoints"
    assert settings.check("ARENA_JUDGE_MODE", "batch") is None
    assert settings.check("ARENA_JUDGE_MODE", "offline") is not None
    assert settings.get("ARENA_JUDGE_API_KEY").secret
    assert settings.get("ARENA_LABELER_MODEL").default == "sim-labeler-large"
    assert settings.check("ARENA_EMBED_BASE_URL", "") is None  # the offline embedder
    assert settings.check("ARENA_JUDGE_BASE_URL", "") is not None


def test_get_names_an_unknown_setting():
    with pytest.raises(KeyError, match="ARENA_NOPE is not a registered setting"):
        settings.get("ARENA_NOPE")


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("ARENA_LABELER_MAX_CONCURRENCY", "-1", "a whole number >= 1"),
        ("ARENA_JUDGE_PRICE_INPUT_PER_1M", "cheap", "a number >= 0"),
        ("ARENA_PARTITIONS_START", "2024-13", "a month, YYYY-MM"),
        (
            "ARENA_BENCH_PROTOCOL",
            "arena-hard-v3",
            "one of arena-assets-pairwise, arena-assets-pairwise-v2",
        ),
        ("ARENA_P2L_LOSS", "logit", "one of bt, grk"),
        ("ARENA_EVALUATORS_CI_LEVEL", "1.5", "a number in 0.5..0.999"),
        ("ARENA_ALLOW_EMPTY_MONTH", "maybe", "true or false"),
        ("ARENA_DUCKDB_MEMORY_LIMIT", "lots", "a memory size"),
        ("ARENA_ROUTER_PRICES", "[1, 2]", "a JSON object"),
        ("ARENA_ROUTER_BUDGETS", "1,two", "numbers, comma-separated"),
        ("ARENA_RELEASE_PUBLISHED", "2024-01,March", "months (YYYY-MM)"),
        ("ARENA_SIM_BASE_URL", "localhost:8000", "a URL"),
        ("ARENA_LABELER_BASE_URL", "ftp://host/v1", "`simulated` or the http(s) base URL"),
    ],
)
def test_check_rejects_a_bad_value_in_one_line(name, value, allowed):
    message = settings.check(name, value)
    assert message is not None and "\n" not in message
    assert message.startswith(f"{name}={value!r} is not allowed: expected ")
    assert allowed in message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ARENA_LABELER_MAX_CONCURRENCY", "16"),
        ("ARENA_JUDGE_PRICE_INPUT_PER_1M", "2.5"),
        ("ARENA_LLM_BUDGET_USD", ""),  # empty where the default is empty
        ("ARENA_PARTITIONS_END", ""),  # up to the month that just ended
        ("ARENA_BENCH_PROTOCOL", " arena-hard-v2 "),
        ("ARENA_ALLOW_PARTIAL_FILES", "TRUE"),
        ("ARENA_DUCKDB_MEMORY_LIMIT", "1.5GiB"),
        ("ARENA_ROUTER_PRICES", '{"a": 1}'),
        ("ARENA_RELEASE_PUBLISHED", "2024-01, *"),
        ("ARENA_LABELER_BASE_URL", "http://localhost:11434/v1"),
    ],
)
def test_check_accepts_what_the_code_accepts(name, value):
    assert settings.check(name, value) is None


def test_check_names_an_empty_required_value():
    assert settings.check("ARENA_BENCH_SIZE", "") == (
        "ARENA_BENCH_SIZE is empty: expected a whole number >= 1"
    )


# --- the documentation's reference page ----------------------------------------------------


def test_reference_page_has_a_table_per_group_with_every_setting():
    page = settings.reference_markdown()
    for group, _ in settings.GROUPS:
        assert f"\n## {group}\n" in page
    rows = [line for line in page.splitlines() if line.startswith("| `ARENA_")]
    assert [row.split("`")[1] for row in rows] == [s.name for s in settings.SETTINGS]
    assert all(row.count(" | ") == 4 for row in rows)  # no stray | splits a cell


def test_docs_hook_replaces_the_placeholder(tmp_path):
    pytest.importorskip("mkdocs")
    from mkdocs.config import load_config
    from mkdocs.structure.files import File, Files

    (tmp_path / "docs" / "reference").mkdir(parents=True)
    (tmp_path / "docs" / "reference" / "configuration.md").write_text("Placeholder\n")
    hooks = ROOT / "docs" / "hooks.py"
    (tmp_path / "mkdocs.yml").write_text(f"site_name: t\nhooks:\n  - {hooks}\n")
    config = load_config(str(tmp_path / "mkdocs.yml"))  # the hook file loaded as MkDocs does
    files = Files([File("reference/configuration.md", str(tmp_path / "docs"), "", False)])
    files = config.plugins.on_files(files, config=config)
    pages = [f for f in files if f.src_uri == "reference/configuration.md"]
    assert len(pages) == 1 and pages[0].content_string == settings.reference_markdown()


def test_the_registry_is_a_base_layer_module():
    """Standard library only: any layer (and the docs hook) may import it."""
    tree = ast.parse((PACKAGE / "settings.py").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported - {"__future__"} <= set(sys.stdlib_module_names)
