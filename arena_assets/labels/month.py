"""Month steps over the lake for the topic stage, shared by the assets, CLI and benchmarks.

Each step reads the month's inputs, computes everything (all LLM calls, cached), and only
then replaces the month's partition file(s): an endpoint error (``LLMEndpointError``) or a
crash leaves the previous partition intact.
"""

from __future__ import annotations

import polars as pl

from arena_assets.labels.clusters import ClusterConfig, Embedder, build_topic_clusters
from arena_assets.labels.label import LabelConfig, LabelReport, distinct_prompts, label_conversations
from arena_assets.llm import BatchReport, LLMTask
from arena_assets.llm.batch import ProgressFn
from arena_assets.storage import Lake

TOPIC_LABELS = "topic_labels"
TOPIC_CLUSTERS = "topic_clusters"
TOPIC_CLUSTER_SUMMARY = "topic_cluster_summary"


def topic_labels_month(lake: Lake, month: str, task: LLMTask, *, cache_root: str,
                       cfg: LabelConfig = LabelConfig(), storage_options: dict | None = None,
                       progress: ProgressFn | None = None) -> tuple[pl.DataFrame, LabelReport]:
    """conversations of ``month`` -> the lake's ``topic_labels`` partition."""
    conv = lake.read("conversations", month, columns=["conv_id", "dedup_key", "first_prompt", "messages"])
    labels, report = label_conversations(conv, task, month=month, cache_root=cache_root, cfg=cfg,
                                         storage_options=storage_options, progress=progress)
    lake.write(TOPIC_LABELS, month, labels)
    return labels, report


def topic_clusters_month(lake: Lake, month: str, embedder: Embedder, *,
                         cfg: ClusterConfig = ClusterConfig(), namer: LLMTask | None = None,
                         cache_root: str | None = None, storage_options: dict | None = None,
                         ) -> tuple[pl.DataFrame, pl.DataFrame, BatchReport | None]:
    """conversations (+ topic_labels when present) -> ``topic_clusters`` and its summary."""
    conv = lake.read("conversations", month, columns=["conv_id", "dedup_key", "first_prompt", "messages"])
    labels = lake.read(TOPIC_LABELS, month) if lake.exists(TOPIC_LABELS, month) else None
    assign, summary, naming = build_topic_clusters(
        distinct_prompts(conv), labels, embedder, month=month, cfg=cfg, namer=namer,
        cache_root=cache_root, storage_options=storage_options)
    lake.write(TOPIC_CLUSTERS, month, assign)
    lake.write(TOPIC_CLUSTER_SUMMARY, month, summary)
    return assign, summary, naming
