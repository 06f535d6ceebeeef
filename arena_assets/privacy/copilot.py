"""Forgetting a user in Copilot Arena's data, beside the chat arena's (``forget``).

Copilot Arena's records (``ARENA_COMPLETIONS_ROOT``, default ``<raw root>/_completions``)
are the platform's files like the chat logs: ``forget_user(completions_root=...)`` scans
and, with ``purge_raw``, blanks them the same way (their ``userId`` is an identity field,
``clean.rejects.IDENTITY_KEYS``). ``completion_battles`` and ``completion_rejects`` hold
the salted user hash, so the lake's forget removes their rows with every user table's;
``copilot_leaderboard``, derived from them, is rebuilt by its asset like every other
derived table (the forget's rebuild plan follows every table it edited through the asset
graph: ``defs/privacy/rebuild.py``).
"""

from __future__ import annotations

from arena_assets.completions.settings import completions_root
from arena_assets.envfile import setting


def completions_root_for(raw_root: str) -> str:
    """The Copilot Arena root ``completion_battles`` reads, from the same variable."""
    return completions_root(setting, raw_root)
