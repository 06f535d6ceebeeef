"""Simulated arena: a hidden world of models and users that writes raw logs and serves an
OpenAI-compatible endpoint. See ``api.simulate_months`` and ``endpoint.ArenaEndpoint``."""

_EXPORTS = {
    "SimulationSummary": ".api",
    "month_range": ".api",
    "simulate_months": ".api",
    "start_endpoint": ".api",
    "CATEGORIES": ".config",
    "LANGUAGES": ".config",
    "TEXT_CATEGORIES": ".config",
    "VISION_CATEGORIES": ".config",
    "WorldConfig": ".config",
    "MALFORMED_KINDS": ".malformed",
    "MonthSummary": ".month",
    "generate_month": ".month",
    "load_truth": ".truth",
    "PromptTruthIndex": ".prompt_truth",
    "lookup_prompt_truth": ".prompt_truth",
    "parse_prompt": ".prompt_truth",
    "read_prompt_truth": ".prompt_truth",
    "CRITERIA": ".topics",
    "TOPICS": ".topics",
    "VISION_LABELS": ".topics",
    "ModelSpec": ".world",
    "World": ".world",
}

__all__ = [
    "CATEGORIES",
    "CRITERIA",
    "LANGUAGES",
    "MALFORMED_KINDS",
    "TEXT_CATEGORIES",
    "TOPICS",
    "VISION_CATEGORIES",
    "VISION_LABELS",
    "ModelSpec",
    "MonthSummary",
    "PromptTruthIndex",
    "SimulationSummary",
    "World",
    "WorldConfig",
    "generate_month",
    "load_truth",
    "lookup_prompt_truth",
    "month_range",
    "parse_prompt",
    "read_prompt_truth",
    "simulate_months",
    "start_endpoint",
]


def __getattr__(name: str):
    # exports load on first use (PEP 562): importing this package, e.g. for the CLI's
    # parser, costs nothing until a name is used
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
