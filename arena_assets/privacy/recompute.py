"""Rebuild what depends on forgotten rows, without Dagster (``forget --recompute``).

The lake's tables are rebuilt with the same month steps the assets call: conversations
and battles of every affected month from its (forgotten) raw_logs, then the arena
leaderboard of every month from the first affected one to the last in the lake (a
snapshot covers all battles up to its month), and Copilot Arena's (``privacy.copilot``).
Leaderboard options: the library defaults, or the same environment variables the Dagster
resources read.
"""

from __future__ import annotations

from arena_assets.envfile import setting
from arena_assets.storage import Lake


def leaderboard_options() -> dict:
    """Keyword arguments of ``board_options`` plus ``min_category_battles``, from the same
    environment variables the Dagster resources read."""
    anchor = setting("ARENA_ANCHOR_MODEL", "")
    return {
        "bootstrap_rounds": int(setting("ARENA_BOOTSTRAP_ROUNDS", "200")),
        "min_battles": int(setting("ARENA_MIN_BATTLES", "300")),
        "min_category_battles": int(setting("ARENA_MIN_CATEGORY_BATTLES", "1000")),
        "anchor": (anchor, 1000.0) if anchor else None,
    }


def recompute_after_forget(lake: Lake, months: list[str], settings: dict | None = None
                           ) -> list[str]:
    """Recompute conversations, battles and leaderboards; returns lines to print."""
    from arena_assets.pipeline.battles import battles_month
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.pipeline.leaderboards import arena_leaderboard_month, battle_cells_month
    from arena_assets.ranking.boards import board_options

    out = []
    for month in sorted(months):
        if lake.exists("raw_logs", month):
            stats = clean_month(lake, month)
            out.append(f"recomputed conversations {month}: {stats.conversations} rows")
            if lake.exists("battles", month):
                step = battles_month(lake, month)
                out.append(f"recomputed battles {month}: {step.result.battles.height} rows")
                battle_cells_month(lake, month)
    options = dict(leaderboard_options() if settings is None else settings)
    min_category = options.pop("min_category_battles", 1000)
    fit = board_options(**options)
    for month in lake.months("arena_leaderboard"):
        if month >= min(months):
            step = arena_leaderboard_month(lake, month, fit, min_category_battles=min_category)
            out.append(f"recomputed arena_leaderboard {month}: "
                       f"{step.info['battles_used']} battles used")
    from arena_assets.privacy.copilot import recompute_copilot_leaderboard

    return out + recompute_copilot_leaderboard(lake, min(months))  # Copilot Arena's board too
