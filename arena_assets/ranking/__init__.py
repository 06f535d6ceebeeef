"""Bradley-Terry leaderboards from battles: pure functions, no Dagster.

Entry points: ``fit_bt`` (ratings, sandwich or bootstrap intervals, rank bounds, win
rates), ``fit_style_controlled``, ``aggregate``, ``read_battles``, ``sample_bt_battles``.
"""

from arena_assets.ranking.aggregate import Aggregated, aggregate
from arena_assets.ranking.io import filter_category, read_battles
from arena_assets.ranking.leaderboard import (
    Leaderboard,
    RatingScale,
    TooFewModels,
    fit_bt,
    leaderboard_from_aggregated,
)
from arena_assets.ranking.style import STYLE_FEATURES, StyleLeaderboard, fit_style_controlled
from arena_assets.ranking.synthetic import sample_bt_battles, true_ratings

__all__ = [
    "Aggregated",
    "Leaderboard",
    "RatingScale",
    "STYLE_FEATURES",
    "StyleLeaderboard",
    "TooFewModels",
    "aggregate",
    "filter_category",
    "fit_bt",
    "fit_style_controlled",
    "leaderboard_from_aggregated",
    "read_battles",
    "sample_bt_battles",
    "true_ratings",
]
