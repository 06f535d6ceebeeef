"""Copilot Arena: code-completion battles from an editor, and their leaderboard (no Dagster).

``adapters`` reads Copilot Arena's server log and its public release into one row per pair
of completions shown (``completion_battles``), cleaned; ``board`` fits the leaderboard
with intervals and a latency control. Month steps: ``arena_assets.pipeline.completions``;
assets: ``arena_assets.defs.completions``.
"""
