"""Bradley-Terry leaderboards from battles: pure functions, no Dagster.

Entry points: ``fit_bt`` (ratings, sandwich or bootstrap intervals, rank bounds, win
rates), ``fit_style_controlled``, ``arena_boards`` (the monthly boards), all driven by one
``FitOptions``; ``encode_battles`` / ``aggregate``, ``rankable`` (which models the data can
rank, and why the others cannot), ``read_battles``, ``sample_bt_battles``.
"""

_EXPORTS = {
    "Aggregated": ".cells",
    "BattleSet": ".cells",
    "aggregate": ".cells",
    "encode_battles": ".cells",
    "LEFT_OUT_REASONS": ".identify",
    "rankable": ".identify",
    "filter_category": ".io",
    "read_battles": ".io",
    "Leaderboard": ".leaderboard",
    "RatingScale": ".leaderboard",
    "TooFewModels": ".leaderboard",
    "fit_bt": ".leaderboard",
    "leaderboard_from_aggregated": ".leaderboard",
    "NoMaximumLikelihood": ".newton",
    "STYLE_FEATURES": ".options",
    "FitOptions": ".options",
    "RankingInputError": ".options",
    "StyleLeaderboard": ".style",
    "fit_style_controlled": ".style",
    "sample_bt_battles": ".synthetic",
    "true_ratings": ".synthetic",
}

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


def __getattr__(name: str):
    # exports load on first use (PEP 562): importing this package, e.g. for the CLI's
    # parser, costs nothing until a name is used
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
