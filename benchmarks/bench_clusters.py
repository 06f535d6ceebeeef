"""Topic clustering: adjusted Rand index against known topics, and time.

    .venv/bin/python benchmarks/bench_clusters.py [--points 20000] [--topics 100] [--dim 64] [--k-max 150]

1. Synthetic topic embeddings (what an endpoint whose vectors carry the topic plus noise
   returns): ``--topics`` random unit centroids, each point its centroid + Gaussian noise
   (``--noise`` per coordinate), sizes Zipf-like. Each method with k picked automatically.
2. Offline (wordllama) on the hand-made topic set of the tests (8 topics x 8 prompts) and on
   Arena-Hard v0.1's 500 prompts with their published BERTopic cluster names (250 x 2), if
   ../shared/real is present.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from sklearn.metrics import adjusted_rand_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena_assets.labels.clusters import (  # noqa: E402 - after the sys.path entry
    ClusterConfig,
    OfflineEmbedder,
    build_topic_clusters,
    cluster_embeddings,
)


def synthetic(args) -> None:
    rng = np.random.default_rng(args.seed)
    centroids = rng.normal(size=(args.topics, args.dim))
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    weights = 1 / np.arange(1, args.topics + 1) ** 0.5
    truth = rng.choice(args.topics, size=args.points, p=weights / weights.sum())
    x = centroids[truth] + rng.normal(scale=args.noise, size=(args.points, args.dim))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    runs = [(m, None) for m in ("agglomerative", "kmeans", "hdbscan")]
    if args.k_max:  # the same data with a fixed cap on k (e.g. 150: the adaptive cap's floor)
        runs.insert(1, ("agglomerative", args.k_max))
    for method, k_max in runs:
        if method == "hdbscan" and args.points > 10000:
            print(f"  {method}: skipped above 10,000 points (quadratic time on 2 cores)")
            continue
        start = time.perf_counter()
        ids, outlier = cluster_embeddings(
            x, ClusterConfig(method=method, min_cluster_size=10, k_max=k_max)
        )
        took = time.perf_counter() - start
        print(
            f"  synthetic {args.points} x {args.dim}, {args.topics} topics, noise {args.noise}: {method:13s} "
            f"{f'(k <= {k_max}) ' if k_max else ''}"
            f"k={len(set(ids.tolist())):4d} ARI {adjusted_rand_score(truth, ids):.3f} "
            f"outliers {outlier.mean():.1%} in {took:.1f}s"
        )


def offline(args) -> None:
    from arena_assets_tests.topic_set import TOPICS

    emb = OfflineEmbedder()
    sets = {
        "hand-made 8x8": (
            [t for v in TOPICS.values() for t in v],
            [k for k, v in TOPICS.items() for _ in v],
        )
    }
    q = ROOT.parent / "shared" / "real" / "arena_hard_v0.1" / "question.jsonl"
    if q.exists():
        rows = [json.loads(line) for line in q.open()]
        sets["arena-hard 250x2"] = ([r["prompt"] for r in rows], [r["cluster"] for r in rows])
    for name, (texts, truth) in sets.items():
        frame = pl.DataFrame(
            {
                "dedup_key": [str(i) for i in range(len(texts))],
                "first_prompt": texts,
                "n_conversations": [1] * len(texts),
            }
        )
        k_true = len(set(truth))
        for method in ("agglomerative", "kmeans"):
            for k in (k_true, None):
                a, _, _ = build_topic_clusters(
                    frame, None, emb, month="m", cfg=ClusterConfig(method=method, n_clusters=k)
                )
                print(
                    f"  offline wordllama, {name}: {method:13s} k={'true' if k else 'auto'}"
                    f"({a['cluster_id'].n_unique()}) ARI {adjusted_rand_score(truth, a['cluster_id'].to_list()):.3f}"
                )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--points", type=int, default=20000)
    p.add_argument("--topics", type=int, default=100)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--noise", type=float, default=0.08)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--k-max", type=int, default=0, help="also run agglomerative with k capped here")
    p.add_argument("--synthetic-only", action="store_true")
    args = p.parse_args()
    synthetic(args)
    if not args.synthetic_only:
        offline(args)


if __name__ == "__main__":
    main()
