"""Settings: one rule for every entry point. **A variable set in the shell wins; `.env`
gives the value otherwise; then the code's default.**

How the rule holds for each:
- `arena-assets` commands read settings with :func:`setting` (shell, then ``.env``, then the
  default: python-dotenv's ``load_dotenv(override=False)`` convention).
- The Dagster CLI (``dagster``, ``dg``, ``dagster dev``) loads ``.env`` from its working
  directory *over* the shell. So the project's ``.env`` writes each value as
  ``NAME=${NAME:-value}``: python-dotenv (Dagster's reader) expands it to the shell's value
  when there is one, else to ``value``. :func:`sync_env_file` (run by ``make install``)
  writes ``.env`` from ``.env.example`` in that form and brings older ``.env`` files to it.
  A value that cannot be written so (it holds ``}``, ``$``, quotes or blanks, e.g. the JSON
  of ``ARENA_CANDIDATES``) stays a plain line: under the Dagster CLI alone, such a line
  beats the shell; `sync` names them.
- Commands that start the Dagster CLI themselves (`arena-assets backfill`, `ui`, `demo
  --executor multiprocess`) also run it through :func:`dagster_workdir`, a working directory
  whose ``.env`` holds the merged values with the shell winning, so plain lines follow the
  rule there too; `arena-assets demo` (its runs in its own process) puts the same merged
  values into its environment.

Tested end to end in ``arena_assets_tests/test_settings_rule.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path


def dotenv_file(path: str | Path = ".env") -> dict[str, str]:
    from dotenv import dotenv_values

    if not Path(path).exists():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def effective_env(
    path: str | Path = ".env", environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``.env`` overlaid by the environment (the environment wins)."""
    environ = os.environ if environ is None else environ
    return {**dotenv_file(path), **environ}


def setting(name: str, default: str, path: str | Path = ".env") -> str:
    """One setting: shell, then ``.env``, then ``default`` (an empty value counts as unset)."""
    return os.environ.get(name) or dotenv_file(path).get(name) or default


@contextlib.contextmanager
def applied_to_environ(
    path: str | Path = ".env", overrides: Mapping[str, str | None] | None = None
) -> Iterator[None]:
    """``.env``'s values in ``os.environ`` where the shell has none (the rule of
    :func:`setting`), then the non-empty ``overrides``, for code that resolves Dagster
    ``EnvVar`` settings in this process (the code location's resources in
    ``forget --recompute``); the environment is restored afterwards."""
    saved = dict(os.environ)
    try:
        os.environ.update({k: v for k, v in dotenv_file(path).items() if not os.environ.get(k)})
        os.environ.update({k: v for k, v in (overrides or {}).items() if v})
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _absolute(value: str, base: Path) -> str:
    # relative paths in settings (./data/raw) are relative to the project directory
    return str((base / value).resolve()) if value.startswith(("./", "../")) else value


@contextlib.contextmanager
def dagster_workdir(project: str | Path = ".") -> Iterator[tuple[Path, dict[str, str]]]:
    """(working directory, environment) for a Dagster CLI subprocess in which the shell's
    variables win over the project's ``.env`` (see module doc); relative paths among the
    merged values are made absolute against ``project``."""
    base = Path(project).resolve()
    file_values = dotenv_file(base / ".env")
    merged = {k: _absolute(os.environ.get(k) or v, base) for k, v in file_values.items()}
    # catalog views stay relative to the project, not to this working directory
    merged["ARENA_PROJECT_DIR"] = os.environ.get("ARENA_PROJECT_DIR") or str(base)
    with tempfile.TemporaryDirectory(prefix="arena-dagster-") as tmp:
        lines = [f"{k}={_quote(v)}" for k, v in merged.items()]
        (Path(tmp) / ".env").write_text("\n".join(lines) + "\n")
        yield Path(tmp), {**os.environ, **merged}


def _quote(value: str) -> str:
    return "'" + value.replace("'", "\\'") + "'"


_PLAIN_VALUE = re.compile(r"^[A-Za-z0-9_./:@,+=*%-]*$")
_ASSIGNMENT = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)$")


def shell_first(line: str) -> str:
    """``NAME=value`` -> ``NAME=${NAME:-value}`` when the value can be written so; other
    lines (comments, already in that form, values with quotes, blanks, ``$`` or ``}``) as
    they are."""
    match = _ASSIGNMENT.match(line.strip())
    if not match or not _PLAIN_VALUE.match(match["value"]):
        return line
    return f"{match['name']}=${{{match['name']}:-{match['value']}}}"


def sync_env_file(example: str | Path, target: str | Path) -> list[str]:
    """Create ``target`` from ``example`` with every value in the shell-first form, or
    bring an existing one to it: plain lines rewritten (same value), variables it lacks
    appended. Returns what it did, one line each (printed by ``make install``)."""
    example, target = Path(example), Path(target)
    said = []
    lines = target.read_text().splitlines() if target.exists() else []
    if not target.exists():
        said.append(f"created {target} from {example}")
    seen = set()
    out = []
    for line in lines:
        new = shell_first(line)
        match = _ASSIGNMENT.match(line.strip())
        if match:
            seen.add(match["name"])
            if new != line:
                said.append(
                    f"{target}: {match['name']} now yields to the shell "
                    f"(written {match['name']}=${{{match['name']}:-...}})"
                )
        out.append(new)
    for line in example.read_text().splitlines():
        match = _ASSIGNMENT.match(line.strip())
        if not target.exists() or (match and match["name"] not in seen):
            if target.exists():
                said.append(f"{target}: added {match['name']}")
            out.append(shell_first(line))
    pinned = [
        m["name"]
        for line in out
        if (m := _ASSIGNMENT.match(line.strip())) and "${" not in line and m["value"]
    ]
    if pinned:
        said.append(
            f"{target}: plain values (the Dagster CLI puts them over the shell): "
            + ", ".join(pinned)
        )
    target.write_text("\n".join(out) + "\n")
    return said


if __name__ == "__main__":  # python -m arena_assets.envfile EXAMPLE TARGET (make install)
    import sys

    for message in sync_env_file(sys.argv[1], sys.argv[2]):
        print(message)
