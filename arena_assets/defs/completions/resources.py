"""The completions stage's settings: where Copilot Arena's records are, and the board's fit.

Every field is bound to an environment variable (``ENV``); fractions and switches arrive
as strings, as elsewhere in the project (Dagster's ``EnvVar`` has no float form; an empty
value means the default), and a value that is not one is refused in one line.
"""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from arena_assets.completions.board import CopilotBoardOptions

# field -> (variable, kind); ARENA_BOOTSTRAP_ROUNDS is shared with the arena boards
ENV = {"root": ("ARENA_COMPLETIONS_ROOT", str), "bootstrap_rounds": ("ARENA_BOOTSTRAP_ROUNDS", int),
       "ci_level": ("ARENA_COPILOT_CI_LEVEL", str), "seed": ("ARENA_COPILOT_SEED", int),
       "min_battles": ("ARENA_COPILOT_MIN_BATTLES", int),
       "min_file_type_battles": ("ARENA_COPILOT_MIN_FILE_TYPE_BATTLES", int),
       "include_unaccepted": ("ARENA_COPILOT_INCLUDE_UNACCEPTED", str)}


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


def env_fields(env: dict[str, tuple[str, type]]) -> dict:
    """Resource fields bound to their variables (``dg.EnvVar``)."""
    return {f: dg.EnvVar.int(var) if kind is int else dg.EnvVar(var) for f, (var, kind) in env.items()}


def from_settings(env: dict[str, tuple[str, type]], defaults: dg.ConfigurableResource,
                  get: Callable[[str, str], str]) -> dict:
    """The same fields outside Dagster: ``get(variable, default)`` (``envfile.setting``)."""
    out = {}
    for f, (var, kind) in env.items():
        value = get(var, str(getattr(defaults, f)))
        try:
            out[f] = kind(value)
        except ValueError:
            raise ValueError(f"{var} must be an integer, got {value!r}") from None
    return out


class CompletionSettings(dg.ConfigurableResource):
    """``root``: a folder (or s3:// prefix) with one sub-folder per month (``YYYY-MM/``) of
    Copilot Arena log files (JSON lines, JSON, Parquet) or release CSVs; empty = the raw
    root's ``_completions`` folder, where the simulator writes them (the underscore keeps
    the chat ingest from reading them). The board: bootstrap rounds and interval level,
    seed, the accepted pairs a model needs on a board and a language board needs at all,
    and whether unaccepted pairs enter the fit as ties (Copilot Arena's board: no)."""

    root: str = ""
    bootstrap_rounds: int = 200
    ci_level: str = "0.95"
    seed: int = 0
    min_battles: int = 20
    min_file_type_battles: int = 300
    include_unaccepted: str = "false"

    def root_for(self, raw_root: str) -> str:
        return self.root.strip() or f"{raw_root.rstrip('/')}/_completions"

    def board_options(self) -> CopilotBoardOptions:
        return CopilotBoardOptions(
            bootstrap_rounds=self.bootstrap_rounds, seed=self.seed, min_battles=self.min_battles,
            level=fraction(self.ci_level, "ARENA_COPILOT_CI_LEVEL", 0.95, 0.5, 0.999),
            min_file_type_battles=self.min_file_type_battles,
            include_unaccepted=switch(self.include_unaccepted, "ARENA_COPILOT_INCLUDE_UNACCEPTED"))

    @classmethod
    def from_env(cls, get: Callable[[str, str], str]) -> CompletionSettings:
        """The settings the resource would read, outside Dagster (``forget --recompute``)."""
        return cls(**from_settings(ENV, cls(), get))


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"completion_settings": CompletionSettings(**env_fields(ENV))})
