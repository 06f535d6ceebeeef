"""RouteLLM's published evaluation files as a yardstick for our router evaluation and for a
P2L router trained on real arena battles.

    .venv/bin/python benchmarks/routellm_yardstick.py --routellm PATH [--real ../shared/real]

PATH: a checkout of lm-sys/RouteLLM or a bare git mirror of it (the files are read, never
copied into this project). For GSM8K, MMLU and MT-Bench (gpt-4-1106-preview vs Mixtral
8x7B, RouteLLM's decontamination) it prints APGR, CPT(50 %) and CPT(80 %) of: random
(RouteLLM's 10 seeded runs, and the mean of 1,000), "the longer prompt goes to the strong
model", and P2L trained on the real 2023 arena votes in ``--real``
(battles/votes_2023_hard_english_with_prompts.jsonl, 1,135 votes, 29 models; the 100
battles of 2024 share almost no model with them), routing by P(gpt-4 beats gpt-3.5-turbo |
prompt): the arena's closest pair to the routed one (the same tiers on the arena board). Verdict: the
P2L router is called useful only if it beats the length router on at least two of three.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STRONG, WEAK = "gpt-4", "gpt-3.5-turbo"


def real_battles(real: Path):
    from arena_assets.routing.timesplit import read_vote_prompts

    return read_vote_prompts(real / "battles" / "votes_2023_hard_english_with_prompts.jsonl")


def train_p2l(battles, seed: int, validation_share: float = 0.1, min_validation: int = 200):
    import polars as pl

    from arena_assets.labels.clusters import OfflineEmbedder
    from arena_assets.routing.data import encode
    from arena_assets.routing.features import FeatureSpace
    from arena_assets.routing.p2l import P2LConfig, P2LModel, fit_p2l

    embedder = OfflineEmbedder()
    prompts = pl.DataFrame(
        {
            "dedup_key": battles["dedup_key"],
            "language": "en",
            "prompt_chars": battles["prompt"].str.len_chars(),
        }
    )
    emb = embedder(battles["prompt"].to_list())
    cfg = P2LConfig(
        rank=4,
        min_model_battles=20,
        seed=seed,
        validation_share=validation_share,
        min_validation_battles=min_validation,
    )
    space = FeatureSpace.fit(prompts, emb, embedder.name, cfg.features)
    enc = encode(battles, prompts, space.transform(prompts, emb), loss="bt", tie_mode="half")
    fit = fit_p2l(enc.coded, cfg)
    return P2LModel(enc.coded.models, space, fit.params, cfg, fit.alpha), embedder, fit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routellm", required=True, help="RouteLLM checkout or bare git mirror")
    ap.add_argument("--real", default=str(Path(__file__).resolve().parents[2] / "shared" / "real"))
    ap.add_argument("--seed", type=int, default=0)
    # a diagnostic, not the production rule: hold out more and let a ridge be chosen anyway
    ap.add_argument("--validation-share", type=float, default=0.1)
    ap.add_argument("--min-validation-battles", type=int, default=200)
    args = ap.parse_args()
    import numpy as np
    import polars as pl
    from scipy.special import expit

    from arena_assets.routing.evaluate import evaluate_routers
    from arena_assets.routing.routellm_files import BENCHMARKS, RouteLLMFiles

    files = RouteLLMFiles(args.routellm)
    real = Path(args.real)
    model = embedder = fit = None
    if (real / "battles" / "votes_2023_hard_english_with_prompts.jsonl").is_file():
        battles = real_battles(real)
        model, embedder, fit = train_p2l(
            battles, args.seed, args.validation_share, args.min_validation_battles
        )
        print(
            f"P2L trained on {battles.height} real arena battles: ridge "
            f"{'W = 0 (marginal board)' if fit.alpha is None else fit.alpha}, "
            f"{fit.info['validation_battles']} held-out battles"
        )
    else:
        print(f"no real arena battles at {real}: P2L router skipped")
    wins = 0
    print("| benchmark | prompts | strong | weak | router | APGR | CPT(50%) | CPT(80%) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in BENCHMARKS:
        b = files.benchmark(name)
        lengths = np.array([len(p) for p in b.prompts], float)
        scores = {}
        if model is not None:
            prompts = pl.DataFrame(
                {
                    "dedup_key": [str(i) for i in range(len(b.prompts))],
                    "language": "en",
                    "prompt_chars": lengths.astype(int),
                }
            )
            beta = model.betas(model.features.transform(prompts, embedder(b.prompts)))
            s, w = model.models.index(STRONG), model.models.index(WEAK)
            scores["p2l"] = expit(beta[:, s] - beta[:, w])
        out = {
            r.router: r for r in evaluate_routers(scores, b.strong, b.weak, lengths, seed=args.seed)
        }
        mean_random = evaluate_routers(
            {}, b.strong, b.weak, None, random_iterations=1000, seed=args.seed
        )[0]
        for r in out.values():
            print(
                f"| {name} | {r.prompts} | {r.strong_quality:.3f} | {r.weak_quality:.3f} | {r.router} | "
                f"{r.apgr:.3f} | {r.cpt50:.1f} | {r.cpt80:.1f} |"
            )
        print(
            f"| {name} | | | | random, mean of 1,000 runs | {mean_random.apgr:.3f} | "
            f"{mean_random.cpt50:.1f} | {mean_random.cpt80:.1f} |"
        )
        if "p2l" in out and out["p2l"].apgr > out["length"].apgr:
            wins += 1
    if model is not None:
        verdict = "useful" if wins >= 2 else "NOT useful"
        print(f"P2L router beats the length router on {wins} of 3 benchmarks: {verdict}")


if __name__ == "__main__":
    main()
