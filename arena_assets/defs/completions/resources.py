"""The completions stage's settings: where Copilot Arena's records are, and the board's fit.

Every field is bound to an environment variable (``ENV``); fractions and switches arrive
as strings and are parsed by ``completions.settings`` (the same parsing ``forget
--recompute`` uses outside Dagster), a value that is not one refused in one line.
"""

from __future__ import annotations

import dagster as dg

from arena_assets.completions import settings
from arena_assets.completions.board import CopilotBoardOptions

# field -> (variable, kind): the board's variables of completions.settings, and the root
ENV = {
    "root": (settings.ROOT_VARIABLE, str),
    **{
        f: (var, str if f in ("ci_level", "include_unaccepted", "fit") else int)
        for f, (var, _) in settings.BOARD_VARIABLES.items()
    },
}


def env_fields(env: dict[str, tuple[str, type]]) -> dict:
    """Resource fields bound to their variables (``dg.EnvVar``)."""
    return {
        f: dg.EnvVar.int(var) if kind is int else dg.EnvVar(var) for f, (var, kind) in env.items()
    }


class CompletionSettings(dg.ConfigurableResource):
    """``root``: a folder (or s3:// prefix) with one sub-folder per month (``YYYY-MM/``) of
    Copilot Arena log files (JSON lines, JSON, Parquet) or release CSVs; empty = the raw
    root's ``_completions`` folder, where the simulator writes them (the underscore keeps
    the chat ingest from reading them). The board: bootstrap rounds and interval level,
    seed, the accepted pairs a model needs on a board and a language board needs at all,
    whether unaccepted pairs enter the fit as ties (Copilot Arena's board: no), and the fit:
    Copilot Arena's own penalised one (``copilot-arena``) or Bradley-Terry (``bt``)."""

    root: str = ""
    bootstrap_rounds: int = 200
    ci_level: str = "0.95"
    seed: int = 0
    min_battles: int = 20
    min_file_type_battles: int = 300
    include_unaccepted: str = "false"
    fit: str = "copilot-arena"

    def root_for(self, raw_root: str) -> str:
        return self.root.strip() or f"{raw_root.rstrip('/')}/_completions"

    def board_options(self) -> CopilotBoardOptions:
        return settings.board_options({f: getattr(self, f) for f in settings.BOARD_VARIABLES})


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"completion_settings": CompletionSettings(**env_fields(ENV))})
