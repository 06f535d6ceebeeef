"""Inputs of a site month built by the stages' own steps, for the tests: the Copilot Arena
board from simulated completions and a bench board from judge verdicts."""

from __future__ import annotations


def copilot_and_bench(lake, raw, month: str, baseline: str) -> None:
    """The month's Copilot Arena board (simulated completions) and a bench board (judge
    verdicts of three candidates against a baseline), through their own steps."""
    import polars as pl

    from arena_assets.completions.board import CopilotBoardOptions
    from arena_assets.judging.metrics import bench_leaderboard
    from arena_assets.judging.verdicts import game_positions, judgment_frame
    from arena_assets.pipeline.completions import (
        completion_battles_month,
        copilot_leaderboard_month,
    )
    from arena_assets.simulator import World
    from arena_assets.simulator.completions import generate_completions

    generate_completions(World.build(seed=3), raw, month, 3000)
    completion_battles_month(lake, str(raw / "_completions"), month, salt="s")
    copilot_leaderboard_month(lake, month, CopilotBoardOptions(bootstrap_rounds=20, min_battles=5))
    pattern = [("B>A", "A>B"), ("A>B", "A=B"), ("B>>A", "B>A"), ("A=B", "A>B"), ("A>B", "B>A")]
    games = []
    for i, model in enumerate(("model-01", "model-02", "model-04")):
        for q in range(30):
            for (game, a, b), verdict in zip(
                game_positions(model, baseline), pattern[(q + i) % 5], strict=True
            ):
                games.append(
                    {
                        "question_id": f"q{q}",
                        "category": None,
                        "model": model,
                        "baseline": baseline,
                        "judge": "judge",
                        "game": game,
                        "model_a": a,
                        "model_b": b,
                        "judgment": f"[[{verdict}]]",
                        "verdict": verdict,
                    }
                )
    board = bench_leaderboard(judgment_frame(games), rounds=20)
    lake.write("bench_leaderboard", month, board.with_columns(month=pl.lit(month)))
