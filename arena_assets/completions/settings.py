"""The Copilot board's settings as the environment gives them (strings), without Dagster:
the variables, their defaults, and the parsing both the ``completion_settings`` resource
and ``forget --recompute`` use, so both read the same board from the same variables.

Fractions and switches arrive as strings, as elsewhere in the project (Dagster's
``EnvVar`` has no float form; an empty value means the default); a value that is not one
is refused in one line naming the variable.
"""

from __future__ import annotations

from collections.abc import Callable

from arena_assets.completions.board import CopilotBoardOptions

# option -> (variable, default); ARENA_BOOTSTRAP_ROUNDS is shared with the arena boards
BOARD_VARIABLES = {
    "bootstrap_rounds": ("ARENA_BOOTSTRAP_ROUNDS", "200"),
    "ci_level": ("ARENA_COPILOT_CI_LEVEL", "0.95"),
    "seed": ("ARENA_COPILOT_SEED", "0"),
    "min_battles": ("ARENA_COPILOT_MIN_BATTLES", "20"),
    "min_file_type_battles": ("ARENA_COPILOT_MIN_FILE_TYPE_BATTLES", "300"),
    "include_unaccepted": ("ARENA_COPILOT_INCLUDE_UNACCEPTED", "false"),
    "fit": ("ARENA_COPILOT_FIT", "copilot-arena"),
}
ROOT_VARIABLE = "ARENA_COMPLETIONS_ROOT"


def fraction(value: str, name: str, default: float, lo: float = 0.0, hi: float = 1.0) -> float:
    """A fractional setting from its string (empty = ``default``), in [lo, hi]."""
    try:
        out = float(value) if str(value).strip() else default
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not lo <= out <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, got {value!r}")
    return out


def switch(value: str, name: str) -> bool:
    """A yes/no setting from its string (empty = no)."""
    text = str(value).strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name} must be true or false, got {value!r}")


def integer(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def board_options(values: dict[str, object]) -> CopilotBoardOptions:
    """``CopilotBoardOptions`` from the settings' values (option -> value or string)."""
    var = {k: v for k, (v, _) in BOARD_VARIABLES.items()}
    return CopilotBoardOptions(
        bootstrap_rounds=integer(values["bootstrap_rounds"], var["bootstrap_rounds"]),
        level=fraction(values["ci_level"], var["ci_level"], 0.95, 0.5, 0.999),
        seed=integer(values["seed"], var["seed"]),
        min_battles=integer(values["min_battles"], var["min_battles"]),
        min_file_type_battles=integer(
            values["min_file_type_battles"], var["min_file_type_battles"]
        ),
        include_unaccepted=switch(values["include_unaccepted"], var["include_unaccepted"]),
        fit=str(values["fit"]).strip() or "copilot-arena",
    )


def board_options_from(get: Callable[[str, str], str]) -> CopilotBoardOptions:
    """The board the ``completion_settings`` resource would fit, outside Dagster:
    ``get(variable, default)`` (``envfile.setting``: the shell, else ``.env``)."""
    return board_options({k: get(v, d) for k, (v, d) in BOARD_VARIABLES.items()})


def completions_root(get: Callable[[str, str], str], raw_root: str) -> str:
    """``ARENA_COMPLETIONS_ROOT``, empty = the raw root's ``_completions`` folder."""
    return get(ROOT_VARIABLE, "").strip() or f"{raw_root.rstrip('/')}/_completions"
