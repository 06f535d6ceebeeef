"""The completions stage's settings: where Copilot Arena's records are, and the board's fit."""

from __future__ import annotations

import dagster as dg

from arena_assets.completions.board import CopilotBoardOptions


class CompletionSettings(dg.ConfigurableResource):
    """``root``: a folder (or s3:// prefix) with one sub-folder per month (``YYYY-MM/``) of
    Copilot Arena log files (JSON lines, JSON, Parquet) or release CSVs; empty = the raw
    root's ``_completions`` folder, where the simulator writes them (the underscore keeps
    the chat ingest from reading them)."""

    root: str = ""
    bootstrap_rounds: int = 200
    ci_level: float = 0.95
    seed: int = 0
    min_battles: int = 20
    min_file_type_battles: int = 300
    include_unaccepted: bool = False

    def root_for(self, raw_root: str) -> str:
        return self.root.strip() or f"{raw_root.rstrip('/')}/_completions"

    def board_options(self) -> CopilotBoardOptions:
        return CopilotBoardOptions(bootstrap_rounds=self.bootstrap_rounds, level=self.ci_level, seed=self.seed,
                                   min_battles=self.min_battles, min_file_type_battles=self.min_file_type_battles,
                                   include_unaccepted=self.include_unaccepted)


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"completion_settings": CompletionSettings(
        root=dg.EnvVar("ARENA_COMPLETIONS_ROOT"),
        bootstrap_rounds=dg.EnvVar.int("ARENA_BOOTSTRAP_ROUNDS"),
        min_battles=dg.EnvVar.int("ARENA_COPILOT_MIN_BATTLES"),
    )})
