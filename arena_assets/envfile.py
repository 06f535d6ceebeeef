"""Settings for commands that run outside Dagster: the shell's environment first, then
``.env``, then the default (the dotenv convention, as ``load_dotenv(override=False)``).

Dagster's own CLI (``dagster dev``, ``dagster asset materialize``) does the opposite: it
loads ``.env`` from the working directory *over* the shell's variables. So a command that
starts the Dagster CLI runs it through :func:`dagster_workdir`, a working directory whose
``.env`` holds the merged values with the shell's taking precedence, so the shell wins
there too.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path


def dotenv_file(path: str | Path = ".env") -> dict[str, str]:
    from dotenv import dotenv_values

    if not Path(path).exists():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def effective_env(path: str | Path = ".env", environ: Mapping[str, str] | None = None
                  ) -> dict[str, str]:
    """``.env`` overlaid by the environment (the environment wins)."""
    environ = os.environ if environ is None else environ
    return {**dotenv_file(path), **environ}


def setting(name: str, default: str, path: str | Path = ".env") -> str:
    """One setting: shell, then ``.env``, then ``default`` (an empty value counts as unset)."""
    return os.environ.get(name) or dotenv_file(path).get(name) or default


def apply_to_environ(path: str | Path = ".env") -> dict[str, str]:
    """Put ``.env``'s values into ``os.environ`` where the shell has none (the rule of
    :func:`setting`), for code that resolves Dagster ``EnvVar``\ s in this process (the
    code location's resources in ``forget --recompute``); returns what was added."""
    added = {k: v for k, v in dotenv_file(path).items() if not os.environ.get(k)}
    os.environ.update(added)
    return added


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
    with tempfile.TemporaryDirectory(prefix="arena-dagster-") as tmp:
        lines = [f"{k}={_quote(v)}" for k, v in merged.items()]
        (Path(tmp) / ".env").write_text("\n".join(lines) + "\n")
        yield Path(tmp), {**os.environ, **merged}


def _quote(value: str) -> str:
    return "'" + value.replace("'", "\\'") + "'"
