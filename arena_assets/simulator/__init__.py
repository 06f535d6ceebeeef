"""Simulated arena: a hidden world of models and users that writes raw logs and serves an
OpenAI-compatible endpoint. See ``api.simulate_months`` and ``endpoint.ArenaEndpoint``."""

from arena_assets.simulator.api import SimulationSummary, month_range, simulate_months, start_endpoint
from arena_assets.simulator.config import (
    CATEGORIES,
    LANGUAGES,
    TEXT_CATEGORIES,
    VISION_CATEGORIES,
    WorldConfig,
)
from arena_assets.simulator.malformed import MALFORMED_KINDS
from arena_assets.simulator.month import MonthSummary, generate_month
from arena_assets.simulator.prompt_truth import (
    PromptTruthIndex,
    lookup_prompt_truth,
    parse_prompt,
    read_prompt_truth,
)
from arena_assets.simulator.topics import CRITERIA, TOPICS, VISION_LABELS
from arena_assets.simulator.truth import load_truth
from arena_assets.simulator.world import ModelSpec, World

__all__ = [
    "CATEGORIES", "CRITERIA", "LANGUAGES", "MALFORMED_KINDS", "TEXT_CATEGORIES", "TOPICS",
    "VISION_CATEGORIES", "VISION_LABELS",
    "ModelSpec", "MonthSummary", "PromptTruthIndex", "SimulationSummary", "World", "WorldConfig",
    "generate_month", "load_truth", "lookup_prompt_truth", "month_range", "parse_prompt",
    "read_prompt_truth", "simulate_months", "start_endpoint",
]
