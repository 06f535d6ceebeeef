"""Battles: a month's votes with both conversations, style features and abuse flags.

Pure library (no Dagster). Entry point: `build_battles`.
"""

from arena_assets.battles.anomaly import anomalous_voters
from arena_assets.battles.build import BattleResult, build_battles
from arena_assets.battles.config import (
    AliasRule,
    AnomalyConfig,
    BattleConfig,
    RiggingConfig,
    derived_identity_names,
)
from arena_assets.battles.schema import REMOVAL_REASONS, STYLE_FEATURES
from arena_assets.battles.style import style_features

__all__ = [
    "REMOVAL_REASONS",
    "STYLE_FEATURES",
    "AliasRule",
    "AnomalyConfig",
    "BattleConfig",
    "BattleResult",
    "RiggingConfig",
    "anomalous_voters",
    "build_battles",
    "derived_identity_names",
    "style_features",
]
