"""Simulated arena: a hidden world of models and users that writes raw logs and serves an
OpenAI-compatible endpoint. See ``api.simulate_months`` and ``endpoint.ArenaEndpoint``."""

from arena_assets.simulator.api import SimulationSummary, month_range, simulate_months
from arena_assets.simulator.config import (
    CATEGORIES,
    LANGUAGES,
    TEXT_CATEGORIES,
    VISION_CATEGORIES,
    WorldConfig,
)
from arena_assets.simulator.malformed import MALFORMED_KINDS
from arena_assets.simulator.month import MonthSummary, generate_month
from arena_assets.simulator.truth import load_truth
from arena_assets.simulator.world import ModelSpec, World

__all__ = [
    "CATEGORIES", "LANGUAGES", "MALFORMED_KINDS", "TEXT_CATEGORIES", "VISION_CATEGORIES",
    "ModelSpec", "MonthSummary", "SimulationSummary", "World", "WorldConfig",
    "generate_month", "load_truth", "month_range", "simulate_months",
]
