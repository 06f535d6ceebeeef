"""Bradley-Terry leaderboards from battles: pure functions, no Dagster.

Entry points: ``fit_bt`` (ratings, sandwich or bootstrap intervals, rank bounds, win
rates), ``fit_style_controlled``, ``arena_boards`` (the monthly boards), all driven by one
``FitOptions``; ``encode_battles`` / ``aggregate``, ``rankable`` (which models the data can
rank, and why the others cannot), ``read_battles``, ``sample_bt_battles``.
"""

from arena_assets.ranking.aggregate import Aggregated, BattleSet, aggregate, encode_battles
from arena_assets.ranking.identify import LEFT_OUT_REASONS, rankable
from arena_assets.ranking.io import filter_category, read_battles
from arena_assets.ranking.leaderboard import (
    Leaderboard,
    RatingScale,
    TooFewModels,
    fit_bt,
    leaderboard_from_aggregated,
)
from arena_assets.ranking.newton import NoMaximumLikelihood
from arena_assets.ranking.options import STYLE_FEATURES, FitOptions, RankingInputError
from arena_assets.ranking.style import StyleLeaderboard, fit_style_controlled
from arena_assets.ranking.synthetic import sample_bt_battles, true_ratings

__all__ = [
    "LEFT_OUT_REASONS",
    "STYLE_FEATURES",
    "Aggregated",
    "BattleSet",
    "FitOptions",
    "Leaderboard",
    "NoMaximumLikelihood",
    "RankingInputError",
    "RatingScale",
    "StyleLeaderboard",
    "TooFewModels",
    "aggregate",
    "encode_battles",
    "filter_category",
    "fit_bt",
    "fit_style_controlled",
    "leaderboard_from_aggregated",
    "rankable",
    "read_battles",
    "sample_bt_battles",
    "true_ratings",
]
