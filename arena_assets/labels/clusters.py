"""topic_clusters: embed the month's distinct prompts, cluster them, name the clusters.

- Embeddings: the endpoint's ``/v1/embeddings`` when an embedding task is configured
  (``arena_assets.llm.embed_texts``), else ``wordllama`` offline (``OfflineEmbedder``):
  its weights ship inside the wheel, so nothing is downloaded.
- Clustering: kept implementations, seeded. ``agglomerative`` (Ward, scipy: one tree cut at
  the k given or at the k with the best silhouette, up to one cluster per 8 prompts (never
  under 150): the number of clusters follows the data, as BERTopic's does in BenchBuilder),
  ``kmeans`` (scikit-learn) and
  ``hdbscan`` (scikit-learn; finds the number of clusters itself, its outliers are
  reassigned to the nearest centroid and flagged). Above ``max_direct_points`` prompts the
  quadratic methods are fitted on a seeded sample and the rest join the nearest centroid.
  BERTopic would add torch, sentence-transformers and UMAP for the same two steps.
- Names: the LLM (cluster-name-v1) from seeded sample prompts when a naming task is given,
  else the top c-TF-IDF keywords. Keywords are always computed (class-based TF-IDF: term
  frequency within a cluster's joined text x log(1 + mean words per cluster / term count)).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from arena_assets.labels.prompts import (
    CLUSTER_NAME_VERSION,
    cluster_name_messages,
    parse_cluster_name,
)
from arena_assets.labels.schema import (
    TOPIC_CLUSTER_ASSIGNMENTS_SCHEMA,
    TOPIC_CLUSTER_SUMMARY_SCHEMA,
)
from arena_assets.llm import BatchReport, LLMRequest, LLMTask, ResponseCache, run_batch

Embedder = Callable[[list[str]], np.ndarray]
IMAGE_ONLY = "(an image sent without text)"


@dataclass(frozen=True)
class ClusterConfig:
    method: str = "agglomerative"  # agglomerative | kmeans | hdbscan (figures in the README)
    n_clusters: int | None = None  # kmeans/agglomerative: None picks k by silhouette
    max_direct_points: int = 6000  # agglomerative/hdbscan: fit on a seeded sample this big
    k_sample: int = 3000  # prompts sampled (seeded) to pick k
    k_min: int = 2
    # None: k follows the data: up to one cluster per min_topic_size prompts (BenchBuilder
    # runs BERTopic with --min-topic-size 8), never under 150; a fixed cap would bound a
    # bench at cap x per_cluster prompts whatever the month holds
    k_max: int | None = None
    min_topic_size: int = 8
    min_cluster_size: int = 5  # hdbscan
    seed: int = 0
    max_embed_chars: int = 1000  # prompts are cut before embedding
    n_keywords: int = 8
    n_examples: int = 5
    name_samples: int = 8  # prompts shown to the LLM to name a cluster


class OfflineEmbedder:
    """wordllama's bundled model; loads without network (``disable_download``)."""

    def __init__(self, dim: int = 256) -> None:
        import wordllama
        from wordllama import WordLlama

        # weights and tokenizer config live inside the installed package
        self.model = WordLlama.load(
            trunc_dim=dim, cache_dir=Path(wordllama.__file__).parent, disable_download=True
        )
        self.name = f"wordllama-l2-{dim}"

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.model.embed(texts, norm=True), dtype=np.float32)


def k_cap(cfg: ClusterConfig, n_prompts: int) -> int:
    """The cap on k from the month's size (the search also stays under a third of the
    prompts it scores: ``max_clusters``)."""
    return cfg.k_max or max(150, n_prompts // cfg.min_topic_size)


def _k_hi(cfg: ClusterConfig, n_scored: int, cap: int) -> int:
    """The largest k the silhouette search tries: the cap, and a third of the prompts it scores."""
    return max(cfg.k_min, min(cap, n_scored // 3))


def max_clusters(cfg: ClusterConfig, n_prompts: int) -> int:
    """The most clusters ``cluster_embeddings`` can give ``n_prompts`` prompts: the bound
    a first month's plan puts on its naming calls (one per cluster). k is searched on at
    most ``k_sample`` prompts, so it stays under a third of them whatever the month's size
    (1,000 by default; a 500,000-conversation month's k_cap alone is ~29,500)."""
    if n_prompts < 2:
        return n_prompts
    if cfg.method == "hdbscan":  # a cluster holds at least min_cluster_size of the fitted rows
        return max(1, min(n_prompts, cfg.max_direct_points) // cfg.min_cluster_size)  # no k given
    if cfg.n_clusters:
        return min(n_prompts, cfg.n_clusters)
    fitted = n_prompts if cfg.method == "kmeans" else min(n_prompts, cfg.max_direct_points)
    return min(n_prompts, _k_hi(cfg, min(fitted, cfg.k_sample), k_cap(cfg, n_prompts)))


def _best_k(grid_fn, score_fn, cfg: ClusterConfig, n: int, cap: int | None = None) -> int:
    """Best silhouette over a coarse geometric grid of k, then a finer pass around it."""
    hi = _k_hi(cfg, n, cap or k_cap(cfg, n))
    coarse = sorted({round(k) for k in np.geomspace(cfg.k_min, hi, num=12)})
    scores = {k: score_fn(grid_fn(k)) for k in coarse}
    best = max(scores, key=scores.get)
    i = coarse.index(best)
    lo, up = coarse[max(0, i - 1)], coarse[min(len(coarse) - 1, i + 1)]
    for k in sorted({round(v) for v in np.linspace(lo, up, num=10)} - set(scores)):
        scores[k] = score_fn(grid_fn(k))
    return max(scores, key=lambda k: (scores[k], -k))


def _silhouette(x: np.ndarray, seed: int):
    from sklearn.metrics import pairwise_distances, silhouette_score

    # the sample's distances once, not once per k tried (~20 ks): the same scores to the
    # bit, ~2.5x less CPU for picking k
    distances = pairwise_distances(x)

    def score(labels: np.ndarray) -> float:
        return (
            silhouette_score(distances, labels, metric="precomputed", random_state=seed)
            if len(set(labels.tolist())) > 1
            else -1.0
        )

    return score


def _sample(n: int, size: int, seed: int) -> np.ndarray:
    return (
        np.arange(n)
        if n <= size
        else np.sort(np.random.default_rng(seed).choice(n, size, replace=False))
    )


def pick_k(x: np.ndarray, cfg: ClusterConfig) -> int:
    """k for k-means by silhouette on a seeded sample (see ``_best_k``)."""
    from sklearn.cluster import KMeans

    sample = x[_sample(x.shape[0], cfg.k_sample, cfg.seed)]
    return _best_k(
        lambda k: KMeans(k, n_init=2, random_state=cfg.seed).fit_predict(sample),
        _silhouette(sample, cfg.seed),
        cfg,
        sample.shape[0],
        k_cap(cfg, x.shape[0]),
    )


def cluster_embeddings(x: np.ndarray, cfg: ClusterConfig) -> tuple[np.ndarray, np.ndarray]:
    """(cluster id per row, outlier flag per row); ids are 0..k-1, every row assigned.

    agglomerative and hdbscan are fitted on at most ``max_direct_points`` rows (a seeded
    sample; their cost grows with the square of the rows) and the other rows join the
    nearest centroid; k-means is fitted on every row.
    """
    from scipy.cluster.hierarchy import fcluster, linkage
    from sklearn.cluster import HDBSCAN, KMeans

    n = x.shape[0]
    if n < 2:
        return np.zeros(n, np.int32), np.zeros(n, bool)
    outlier = np.zeros(n, bool)
    if cfg.method == "kmeans":
        k = min(n, cfg.n_clusters or pick_k(x, cfg))
        return _renumber(KMeans(k, n_init=3, random_state=cfg.seed).fit_predict(x)), outlier
    rows = _sample(n, cfg.max_direct_points, cfg.seed)
    fit = x[rows].astype(np.float64)
    if cfg.method == "agglomerative":
        tree = linkage(fit, "ward")  # one tree, cut at any k
        cut = lambda k: fcluster(tree, k, "maxclust")  # noqa: E731
        if cfg.n_clusters:
            sub = cut(min(n, cfg.n_clusters))
        else:
            check = _sample(len(rows), cfg.k_sample, cfg.seed)  # silhouette on a sub-sample
            sub = cut(
                _best_k(
                    lambda k: cut(k)[check],
                    _silhouette(fit[check], cfg.seed),
                    cfg,
                    len(check),
                    k_cap(cfg, n),
                )
            )
    elif cfg.method == "hdbscan":
        sub = HDBSCAN(min_cluster_size=cfg.min_cluster_size, copy=True).fit_predict(fit)
        if (sub < 0).all():
            return np.zeros(n, np.int32), np.ones(n, bool)
        noise = sub < 0
        outlier[rows[noise]] = True
        sub = sub.copy()
        sub[noise] = _nearest_to(fit[noise], fit[~noise], sub[~noise])
    else:
        raise ValueError(
            f"unknown clustering method {cfg.method!r}: use agglomerative, kmeans or hdbscan"
        )
    labels = np.empty(n, dtype=np.int64)
    labels[rows] = sub
    rest = np.setdiff1d(np.arange(n), rows)
    if rest.size:
        labels[rest] = _nearest_to(x[rest], fit, sub)
    return _renumber(labels), outlier


def _nearest_to(points: np.ndarray, fit: np.ndarray, labels: np.ndarray) -> np.ndarray:
    ids = np.unique(labels)
    centroids = np.stack([fit[labels == c].mean(axis=0) for c in ids])
    d = -2 * points @ centroids.T + (centroids**2).sum(1)[None, :]
    return ids[np.argmin(d, axis=1)]


def _renumber(labels: np.ndarray) -> np.ndarray:
    """Ids by decreasing size (ties by first appearance), so cluster 0 is the largest."""
    ids, first, counts = np.unique(labels, return_index=True, return_counts=True)
    order = sorted(range(len(ids)), key=lambda i: (-counts[i], first[i]))
    remap = {ids[i]: new for new, i in enumerate(order)}
    return np.asarray([remap[v] for v in labels], dtype=np.int32)


def ctfidf_keywords(texts: list[str], labels: np.ndarray, n_keywords: int) -> dict[int, list[str]]:
    from sklearn.feature_extraction.text import CountVectorizer

    ids = sorted(set(labels.tolist()))
    docs = [" ".join(t for t, lab in zip(texts, labels) if lab == c) for c in ids]
    vec = CountVectorizer(token_pattern=r"(?u)\b[^\W\d_]{3,}\b", stop_words="english")
    try:
        counts = vec.fit_transform(docs).toarray().astype(float)
    except ValueError:  # no words at all (e.g. image-only prompts)
        return {c: [] for c in ids}
    vocab = vec.get_feature_names_out()
    tf = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    idf = np.log(1 + counts.sum(axis=1).mean() / np.maximum(counts.sum(axis=0), 1))
    scores = tf * idf
    return {
        c: [vocab[j] for j in np.argsort(-scores[i])[:n_keywords] if scores[i, j] > 0]
        for i, c in enumerate(ids)
    }


def build_topic_clusters(
    prompts: pl.DataFrame,
    labels: pl.DataFrame | None,
    embedder: Embedder,
    *,
    month: str,
    cfg: ClusterConfig = ClusterConfig(),
    namer: LLMTask | None = None,
    cache_root: str | None = None,
    storage_options: dict | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, BatchReport | None]:
    """(assignments, summary, naming report): TOPIC_CLUSTER_* schemas.

    ``prompts`` has dedup_key, first_prompt, n_conversations (``labels.distinct_prompts``);
    ``labels`` is the month's topic_labels (for the per-cluster shares) or None.
    """
    # image-only prompts have no text; embedding APIs reject "", and they belong together
    texts = [
        t[: cfg.max_embed_chars] if t.strip() else IMAGE_ONLY
        for t in prompts.get_column("first_prompt").fill_null("").to_list()
    ]
    x = embedder(texts) if texts else np.zeros((0, 1), np.float32)
    ids, outlier = cluster_embeddings(x, cfg)
    keywords = ctfidf_keywords(texts, ids, cfg.n_keywords) if texts else {}
    rng = random.Random(cfg.seed)
    members: dict[int, list[int]] = {}
    for i, c in enumerate(ids.tolist()):
        members.setdefault(c, []).append(i)
    samples = {
        c: [texts[i] for i in sorted(rng.sample(rows, min(len(rows), cfg.name_samples)))]
        for c, rows in sorted(members.items())
    }
    # without a namer (or where it failed): the top keywords as a readable label
    names = {c: ", ".join(keywords.get(c, [])[:3]).capitalize() or f"Cluster {c}" for c in members}
    source = dict.fromkeys(members, "c-tf-idf")
    report = None
    if namer is not None and members:
        if cache_root is None:
            raise ValueError("naming clusters by LLM needs cache_root")
        cache = ResponseCache(
            cache_root, f"labels/{CLUSTER_NAME_VERSION}", 64, storage_options or {}
        )
        reqs = [
            LLMRequest(str(c), cluster_name_messages(s), CLUSTER_NAME_VERSION)
            for c, s in samples.items()
        ]
        results, report = run_batch(namer, reqs, cache, parse_cluster_name)
        for r in results:
            if r.status == "ok":  # otherwise keep the keyword name: never a guessed one
                names[int(r.item_id)] = r.value.name.strip()
                source[int(r.item_id)] = f"llm:{namer.model}:{CLUSTER_NAME_VERSION}"
    assignments = prompts.select("dedup_key", "n_conversations").with_columns(
        pl.lit(month).alias("month"),
        pl.Series("cluster_id", ids, dtype=pl.Int32),
        pl.Series("cluster_name", [names[c] for c in ids.tolist()], dtype=pl.String),
        pl.Series("was_outlier", outlier, dtype=pl.Boolean),
    )
    summary = _summary(assignments, labels, names, source, keywords, samples, cfg, month)
    return (
        assignments.select(
            [pl.col(c).cast(t) for c, t in TOPIC_CLUSTER_ASSIGNMENTS_SCHEMA.items()]
        ),
        summary,
        report,
    )


def _summary(assignments, labels, names, source, keywords, samples, cfg, month) -> pl.DataFrame:
    per = assignments
    if labels is not None and labels.height:
        per_prompt = labels.group_by("dedup_key").agg(
            pl.col("criteria_count").first(),
            pl.col("hard").first(),
            pl.col("math").first(),
            pl.col("creative_writing").first(),
            pl.col("code").first(),
            pl.col("is_vision").first(),
            pl.col("refusal").mean().alias("_refusal"),
        )
        per = per.join(per_prompt, on="dedup_key", how="left")
    else:
        per = per.with_columns(
            *[
                pl.lit(None, dtype=pl.Float64).alias(c)
                for c in (
                    "criteria_count",
                    "hard",
                    "math",
                    "creative_writing",
                    "code",
                    "is_vision",
                    "_refusal",
                )
            ]
        )
    share = lambda c: pl.col(c).cast(pl.Float64).mean()  # noqa: E731 - nulls (unlabelled) skipped
    out = (
        per.group_by("cluster_id")
        .agg(
            pl.len().cast(pl.Int32).alias("size"),
            pl.col("n_conversations").sum().cast(pl.Int32),
            share("criteria_count").alias("mean_criteria"),
            share("hard").alias("share_hard"),
            share("math").alias("share_math"),
            share("creative_writing").alias("share_creative_writing"),
            share("code").alias("share_code"),
            share("is_vision").alias("share_vision"),
            share("_refusal").alias("share_refusal"),
        )
        .sort("cluster_id")
    )
    cids = out.get_column("cluster_id").to_list()
    out = out.with_columns(
        pl.lit(month).alias("month"),
        pl.Series("cluster_name", [names[c] for c in cids], dtype=pl.String),
        pl.Series("name_source", [source[c] for c in cids], dtype=pl.String),
        pl.Series("keywords", [keywords.get(c, []) for c in cids], dtype=pl.List(pl.String)),
        pl.Series(
            "examples", [samples[c][: cfg.n_examples] for c in cids], dtype=pl.List(pl.String)
        ),
    )
    return out.select([pl.col(c).cast(t) for c, t in TOPIC_CLUSTER_SUMMARY_SCHEMA.items()])
