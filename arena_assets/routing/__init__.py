"""Prompt-to-leaderboard (P2L) and routing (pure logic; the Dagster assets wrap it).

Names load on first use so that ``arena-assets --help`` (which imports
``arena_assets.cli.routing``) loads no numpy or scipy.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "aggregate_board": "aggregate",
    "fit_bt_to_probs": "aggregate",
    "fit_grk_to_probs": "aggregate",
    "BoardOptions": "boards",
    "p2l_boards": "boards",
    "apgr": "evaluate",
    "cpt": "evaluate",
    "evaluate_routers": "evaluate",
    "expected_calibration_error": "evaluate",
    "threshold_curve": "evaluate",
    "FeatureConfig": "features",
    "FeatureSpace": "features",
    "near_duplicate_groups": "neardup",
    "Coded": "p2l",
    "P2LConfig": "p2l",
    "P2LModel": "p2l",
    "Params": "p2l",
    "fit_p2l": "p2l",
    "lp_distribution": "router",
    "lp_route": "router",
    "win_scores": "router",
    "RouteLLMFiles": "routellm_files",
    "compute_tiers": "tiers",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'arena_assets.routing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"arena_assets.routing.{_WHERE[name]}"), name)
