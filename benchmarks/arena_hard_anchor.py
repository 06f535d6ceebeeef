"""Arena-Hard-Auto's protocol on the four real v0.1 answer files: what the anchor's rules
change against the project's earlier ones.

    .venv/bin/python benchmarks/arena_hard_anchor.py [--real ../shared/real/arena_hard_v0.1] [--seed 5]

1. Token caps: the share of each model's published answers a cap would cut (token_len at
   or over the cap): 1,024 (the project's earlier default) and 4,096 (the anchor's).
2. A length-biased judge over the real answers (baseline gpt-4-0314 as side A in game 1;
   the verdict leans to the longer answer: d = tanh((tokens_model - tokens_baseline)/350)
   + N(0, 0.7), labels by |d|; 1 % of games without a label), then per protocol version:
   the score and interval, the earlier interval (each model's games resampled with their
   strong copies together), and the style-controlled win rate against the baseline next to
   the earlier style control ((a-b)/(a+b) over both orientations, no penalty, a rating),
   its rating gap to the baseline read as a win probability.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena_assets.judging.answers import answer_features, import_arena_hard_answers  # noqa: E402
from arena_assets.judging.metrics import bench_leaderboard  # noqa: E402
from arena_assets.judging.summary import scored_games, style_controlled_leaderboard  # noqa: E402
from arena_assets.judging.verdicts import game_positions, judgment_frame  # noqa: E402

BASE = "gpt-4-0314"


def caps(real: Path) -> None:
    print("1. share of published answers a cap would cut (token_len >= cap)")
    for f in sorted((real / "model_answer").glob("*.jsonl")):
        lens = [json.loads(x)["conv_metadata"]["token_len"] for x in f.read_text().splitlines()]
        print(
            f"   {f.stem:<28} 1,024: {np.mean([t >= 1024 for t in lens]):6.1%}   "
            f"4,096: {np.mean([t >= 4096 for t in lens]):6.1%}   (n={len(lens)})"
        )


def judged(answers: pl.DataFrame, seed: int) -> pl.DataFrame:
    tokens = {
        (q, m): t for q, m, t in answers.select("question_id", "model", "token_len").iter_rows()
    }
    rng = np.random.RandomState(seed)
    rows = []
    for model in sorted(set(answers["model"]) - {BASE}):
        for q in sorted({q for q, _ in tokens}):
            for g, a, b in game_positions(model, BASE):
                sign = 1 if a == model else -1
                d = (
                    sign
                    * (np.tanh((tokens[q, model] - tokens[q, BASE]) / 350) + rng.normal(0, 0.7))
                    + 0.1
                )
                label = (
                    None
                    if rng.random_sample() < 0.01
                    else (
                        "A=B"
                        if abs(d) < 0.25
                        else ("A>>B" if d >= 1.1 else "A>B")
                        if d > 0
                        else ("B>>A" if d <= -1.1 else "B>A")
                    )
                )
                rows.append(
                    {
                        "question_id": q,
                        "model": model,
                        "baseline": BASE,
                        "judge": "length-biased",
                        "game": g,
                        "model_a": a,
                        "model_b": b,
                        "judgment": "",
                        "verdict": label,
                    }
                )
    return judgment_frame(rows)


def earlier_interval(
    judgments: pl.DataFrame, rounds: int = 100, level: float = 0.95, seed: int = 0
) -> dict:
    """The project's interval before: each model's games resampled, a game's strong copies together."""
    games = scored_games(judgments, 3).filter(pl.col("score").is_not_null())
    rng = np.random.default_rng(seed)
    out = {}
    for (model,), part in games.group_by("model", maintain_order=True):
        s, c = part["score"].to_numpy(), part["copies"].to_numpy()
        idx = rng.integers(0, len(s), size=(rounds, len(s)))
        boot = (s[idx] * c[idx]).sum(axis=1) / c[idx].sum(axis=1)
        out[model] = np.quantile(boot, ((1 - level) / 2, (1 + level) / 2))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--real", type=Path, default=ROOT.parent / "shared" / "real" / "arena_hard_v0.1")
    p.add_argument("--seed", type=int, default=5)
    args = p.parse_args()
    if not args.real.exists():
        args.real = ROOT.parents[1] / "shared" / "real" / "arena_hard_v0.1"
    caps(args.real)
    answers = answer_features(import_arena_hard_answers(args.real / "model_answer"))
    games = judged(answers, args.seed)
    print(
        f"\n2. a length-biased judge over the real answers ({games.height} games, "
        f"{int((~games['parsed']).sum())} unparsed)"
    )
    before = earlier_interval(games)
    styled_before = style_controlled_leaderboard(games, answers).table
    rating = dict(zip(styled_before["model"], styled_before["rating"]))
    for protocol in ("arena-hard-v0.1", "arena-hard-v2"):
        board = bench_leaderboard(games, answers, protocol=protocol).filter(pl.col("model") != BASE)
        print(f"   {protocol} (interval {board['level'][0]:.0%}):")
        for r in board.sort("model").iter_rows(named=True):
            lo, hi = before[r["model"]]
            earlier_sc = 1 / (1 + 10 ** ((rating[BASE] - rating[r["model"]]) / 400))
            print(
                f"     {r['model']:<26} score {100 * r['win_rate']:5.1f} ({100 * r['lower']:5.1f}, "
                f"{100 * r['upper']:5.1f}) width {100 * (r['upper'] - r['lower']):4.1f}"
                + (
                    f"; earlier interval width {100 * (hi - lo):4.1f} = "
                    f"{(hi - lo) / (r['upper'] - r['lower']):.2f}x"
                    if protocol.endswith("v0.1")
                    else ""
                )
                + f"; style-controlled {100 * r['sc_win_rate']:5.1f} ({100 * r['sc_lower']:5.1f}, "
                f"{100 * r['sc_upper']:5.1f}), earlier style control {100 * earlier_sc:5.1f}"
            )


if __name__ == "__main__":
    main()
