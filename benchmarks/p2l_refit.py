"""Cost of the monthly P2L refit: ``p2l_model`` materialized through Dagster (in-process,
as a run's step) on a month of ``--battles`` battles over ``--prompts`` distinct prompts.

The month is written straight into a lake (the tables p2l_model reads: battles,
prompt_embeddings with ``--dim``-dimensional unit vectors around 200 topic centres,
topic_labels), shaped like a real month: 100 models with a long-tailed battle share,
~1.25 battles per prompt, a planted low-rank topic × model effect, ties and both-bad votes.
Prints wall and CPU seconds of the materialization, peak RSS and the load average.

    .venv/bin/python benchmarks/p2l_refit.py --out benchmarks/out/p2l-refit
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.p2l_simulated import env_for

MONTH = "2024-01"


def build(lake_root: Path, battles: int, prompts: int, models: int, dim: int, seed: int) -> None:
    import numpy as np
    import polars as pl

    from arena_assets.routing.outcomes import grk_probs
    from arena_assets.storage import Lake

    lake = Lake(str(lake_root))
    if lake.exists("battles", MONTH):
        return
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((200, dim))
    topic = rng.zipf(1.5, prompts) % 200
    emb = topics[topic] + 0.8 * rng.standard_normal((prompts, dim))
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).astype(np.float32)
    keys = [f"k{i:07d}" for i in range(prompts)]
    share = rng.pareto(1.2, models) + 0.2
    a = rng.choice(models, battles, p=share / share.sum())
    b = (a + 1 + rng.choice(models - 1, battles)) % models
    p = rng.integers(0, prompts, battles)
    skill = rng.normal(0, 0.6, models)
    inter = 0.5 * rng.standard_normal((models, 3)) @ rng.standard_normal((3, 200))
    beta = skill[None, :] + inter.T  # topics × models
    probs = grk_probs(beta[topic[p], a], beta[topic[p], b], 0.3)
    o = (rng.random(battles)[:, None] > probs.cumsum(axis=1)).sum(axis=1)
    names = [f"model-{i:03d}" for i in range(models)]
    winner = np.array(["model_a", "model_b", "tie", "tie (bothbad)"])[o]
    t0 = 1704067200.0
    battle_frame = pl.DataFrame(
        {
            "battle_id": [f"b{i:08d}" for i in range(battles)],
            "month": MONTH,
            "tstamp": pl.Series(np.sort(t0 + rng.random(battles) * 30 * 86400) * 1e6)
            .cast(pl.Int64)
            .cast(pl.Datetime("us", "UTC")),
            "model_a": np.array(names)[a],
            "model_b": np.array(names)[b],
            "winner": winner,
            "dedup_key": np.array(keys)[p],
            "keep": np.ones(battles, bool),
        }
    )
    lake.write("battles", MONTH, battle_frame)
    lake.write(
        "prompt_embeddings",
        MONTH,
        pl.DataFrame(
            {
                "month": MONTH,
                "dedup_key": keys,
                "embedder": "synthetic-256",
                "dim": dim,
                "embedding": pl.Series(emb).cast(pl.List(pl.Float32)),
                "language": rng.choice(
                    ["en", "zh", "ru", "es", "de"], prompts, p=[0.5, 0.2, 0.1, 0.1, 0.1]
                ),
                "prompt_chars": rng.lognormal(5, 1.2, prompts).astype(np.int32),
                "is_vision": False,
                "n_conversations": np.full(prompts, 2, np.int32),
            }
        ),
    )
    labels = {
        c: rng.random(prompts) < 0.3
        for c in (
            "specificity",
            "domain_knowledge",
            "complexity",
            "problem_solving",
            "math",
            "code",
        )
    }
    lake.write(
        "topic_labels",
        MONTH,
        pl.DataFrame(
            {
                "month": MONTH,
                "conv_id": keys,
                "dedup_key": keys,
                **labels,
                "if_score": rng.integers(0, 6, prompts).astype(np.int8),
            }
        ),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--prompts", type=int, default=800_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    root = Path(args.out).resolve()
    os.environ.update(env_for(root, "offline"))
    os.environ["ARENA_PARTITIONS_START"] = MONTH
    t = time.perf_counter()
    build(root / "lake", args.battles, args.prompts, args.models, args.dim, args.seed)
    print(f"lake written in {time.perf_counter() - t:.0f} s", flush=True)
    from arena_assets_tests.harness import materialize

    load0 = os.getloadavg()
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    result = materialize(MONTH, "p2l_model")
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    assert result.success
    meta = {
        k: v.value
        for e in result.get_asset_materialization_events()
        for k, v in e.materialization.metadata.items()
    }
    print(
        f"p2l_model on {args.battles:,} battles / {args.prompts:,} prompts / {args.models} models: "
        f"wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB; "
        f"load average before {load0[0]:.1f}, after {os.getloadavg()[0]:.1f}"
    )
    print(f"chosen ridge {meta['chosen_ridge']}; validation battles {meta['validation_battles']}")
    print(meta["ridge_path"])


if __name__ == "__main__":
    main()
