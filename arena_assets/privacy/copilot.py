"""Forgetting a user in Copilot Arena's data, beside the chat arena's (``forget``).

Copilot Arena's records (``ARENA_COMPLETIONS_ROOT``, default ``<raw root>/_completions``)
are the platform's files like the chat logs: ``forget_user(completions_root=...)`` scans
and, with ``purge_raw``, blanks them the same way (their ``userId`` is an identity field,
``privacy.rejects.IDENTITY_KEYS``). ``completion_battles`` and ``completion_rejects`` hold
the salted user hash, so the lake's forget removes their rows with every user table's;
``copilot_leaderboard`` is derived from them without user rows and is rebuilt here, every
month of it from the first affected one (each board covers every month up to its own).
Kept apart from ``recompute`` (the chat arena's rebuild) so either can change alone.
"""

from __future__ import annotations

from arena_assets.completions.settings import board_options_from, completions_root
from arena_assets.envfile import setting
from arena_assets.storage import Lake


def completions_root_for(raw_root: str) -> str:
    """The Copilot Arena root ``completion_battles`` reads, from the same variable."""
    return completions_root(setting, raw_root)


def recompute_copilot_leaderboard(lake: Lake, first: str) -> list[str]:
    """Rebuild ``copilot_leaderboard`` of every month from ``first`` on, with the board
    options the ``completion_settings`` resource reads; returns lines to print."""
    from arena_assets.pipeline.completions import COPILOT_LEADERBOARD, copilot_leaderboard_month

    options = board_options_from(setting)
    out = []
    for month in lake.months(COPILOT_LEADERBOARD):
        if month >= first:
            step = copilot_leaderboard_month(lake, month, options)
            out.append(f"recomputed copilot_leaderboard {month}: {step.figures['accepted_pairs']} accepted pairs")
    return out
