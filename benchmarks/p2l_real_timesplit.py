"""P2L against the marginal board on the real 2023 arena votes: 10-fold time-split log loss.

    .venv/bin/python benchmarks/p2l_real_timesplit.py [--real ../shared/real] [--folds 10]

Folds are blocks of the votes in time order; block k is scored by the model fitted on the
blocks before it (its ridge chosen inside them, as the monthly fit does). Prompts: the first
turn, embedded offline (wordllama); features: embedding, length (all English, no labels).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", default=str(Path(__file__).resolve().parents[2] / "shared" / "real"))
    ap.add_argument("--folds", type=int, default=10)
    args = ap.parse_args()
    import polars as pl

    from arena_assets.labels.clusters import OfflineEmbedder
    from arena_assets.routing.p2l import P2LConfig
    from arena_assets.routing.timesplit import read_vote_prompts, time_split_scores

    battles = read_vote_prompts(
        Path(args.real) / "battles" / "votes_2023_hard_english_with_prompts.jsonl"
    )
    prompts = pl.DataFrame(
        {
            "dedup_key": battles["dedup_key"],
            "language": "en",
            "prompt_chars": battles["prompt"].str.len_chars(),
        }
    )
    emb = OfflineEmbedder()(battles["prompt"].to_list())
    for loss in ("bt", "grk"):
        t = time.perf_counter()
        scores, s = time_split_scores(
            battles,
            prompts,
            emb,
            folds=args.folds,
            cfg=P2LConfig(loss=loss, rank=4, min_model_battles=20),
        )
        print(
            f"{loss}: {s['folds_scored']} folds, {s['test_battles']} test battles; mean log loss "
            f"P2L {s['log_loss_p2l']:.4f} vs marginal {s['log_loss_marginal']:.4f}; gain per battle "
            f"{s['gain_per_battle']:+.5f} ± {s['gain_se']:.5f} (SE); folds where a ridge beat W = 0: "
            f"{s['folds_with_w']} ({time.perf_counter() - t:.0f} s)"
        )
        for f in scores:
            print(
                f"  fold {f.fold}: train {f.train}, test {f.test}, P2L {f.log_loss_p2l:.4f}, "
                f"marginal {f.log_loss_marginal:.4f}, ridge {f.ridge}"
            )


if __name__ == "__main__":
    main()
