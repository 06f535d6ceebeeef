"""Rebuild what depends on forgotten rows, without Dagster (``forget --recompute``).

The lake's tables are rebuilt with the same month steps the assets call: conversations
and battles of every affected month from its (forgotten) raw_logs, then the arena
leaderboard of every month from the first affected one to the last in the lake (a
snapshot covers all battles up to its month). Leaderboard options: the library defaults,
or the same environment variables the Dagster resources read.
"""

from __future__ import annotations

from arena_assets.envfile import setting
from arena_assets.storage import Lake


def leaderboard_options() -> dict:
    anchor = setting("ARENA_ANCHOR_MODEL", "")
    return {
        "bootstrap_rounds": int(setting("ARENA_BOOTSTRAP_ROUNDS", "200")),
        "min_battles": int(setting("ARENA_MIN_BATTLES", "300")),
        "min_category_battles": int(setting("ARENA_MIN_CATEGORY_BATTLES", "1000")),
        "anchor": (anchor, 1000.0) if anchor else None,
    }


def recompute_after_forget(lake: Lake, months: list[str], board_options: dict | None = None
                           ) -> list[str]:
    """Recompute conversations, battles and leaderboards; returns lines to print."""
    from arena_assets.pipeline import arena_leaderboard_month, battles_month, clean_month

    out = []
    for month in sorted(months):
        if lake.exists("raw_logs", month):
            stats = clean_month(lake, month)
            out.append(f"recomputed conversations {month}: {stats.conversations} rows")
            if lake.exists("battles", month):
                result, _ = battles_month(lake, month)
                out.append(f"recomputed battles {month}: {result.battles.height} rows")
    options = leaderboard_options() if board_options is None else board_options
    for month in lake.months("arena_leaderboard"):
        if month >= min(months):
            _, info = arena_leaderboard_month(lake, month, **options)
            out.append(f"recomputed arena_leaderboard {month}: {info['battles_used']} battles used")
    return out
