"""The leaderboards stage's own settings: how the arena boards are fitted."""

from __future__ import annotations

import dagster as dg


class LeaderboardSettings(dg.ConfigurableResource):
    """How the arena leaderboard is fitted (Bradley-Terry on the Elo scale)."""

    bootstrap_rounds: int = 200
    ci_level: float = 0.95
    anchor_model: str = ""
    anchor_rating: float = 1000.0
    # models with fewer battles are left off a board; 300 suits real traffic, the demo
    # sets less through ARENA_MIN_BATTLES
    min_battles: int = 300
    # per-category boards need this many battles in the category to be published at all
    min_category_battles: int = 1000
    seed: int = 0

    def anchor(self) -> tuple[str, float] | None:
        return (self.anchor_model, self.anchor_rating) if self.anchor_model else None


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "leaderboard_settings": LeaderboardSettings(
                bootstrap_rounds=dg.EnvVar.int("ARENA_BOOTSTRAP_ROUNDS"),
                min_battles=dg.EnvVar.int("ARENA_MIN_BATTLES"),
                min_category_battles=dg.EnvVar.int("ARENA_MIN_CATEGORY_BATTLES"),
                anchor_model=dg.EnvVar("ARENA_ANCHOR_MODEL"),
            )
        }
    )
