"""Simulated arena: a hidden world of models and users that writes raw logs and serves an
OpenAI-compatible endpoint. See ``api.simulate_months`` and ``endpoint.ArenaEndpoint``."""

_EXPORTS = {
    "SimulationSummary": ".api",
    "month_range": ".api",
    "simulate_months": ".api",
    "CATEGORIES": ".config",
    "LANGUAGES": ".config",
    "TEXT_CATEGORIES": ".config",
    "VISION_CATEGORIES": ".config",
    "WorldConfig": ".config",
    "MALFORMED_KINDS": ".malformed",
    "MonthSummary": ".month",
    "generate_month": ".month",
    "load_truth": ".truth",
    "ModelSpec": ".world",
    "World": ".world",
}

__all__ = [
    "CATEGORIES", "LANGUAGES", "MALFORMED_KINDS", "TEXT_CATEGORIES", "VISION_CATEGORIES",
    "ModelSpec", "MonthSummary", "SimulationSummary", "World", "WorldConfig",
    "generate_month", "load_truth", "month_range", "simulate_months",
]


def __getattr__(name: str):
    # exports load on first use (PEP 562): importing this package, e.g. for the CLI's
    # parser, costs nothing until a name is used
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
