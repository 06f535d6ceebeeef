"""The topic steps: the month's conversations -> ``topic_labels``, then ``topic_clusters``
(one row per distinct first prompt) and ``topic_cluster_summary`` (one row per cluster).

Each step computes everything first (every LLM call, cached) and only then replaces the
month's partition file(s): an ``LLMEndpointError`` or a crash leaves the previous
partition intact. The requests' cache keys are indexed by the conversations they came
from (``pipeline/cache_keys.py``), so a forgotten user's answers can be deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from arena_assets.labels.clusters import ClusterConfig, Embedder, build_topic_clusters
from arena_assets.labels.label import (
    LabelConfig,
    LabelReport,
    distinct_prompts,
    label_conversations,
    out_of_range,
    parse_failure_rate,
)
from arena_assets.labels.schema import (
    TOPIC_CLUSTER_ASSIGNMENTS_SCHEMA,
    TOPIC_CLUSTER_SUMMARY_SCHEMA,
    TOPIC_LABELS_SCHEMA,
)
from arena_assets.llm import BatchReport, LLMTask
from arena_assets.llm.batch import ProgressFn
from arena_assets.llm.keylog import recording_keys
from arena_assets.llm.plan import recording
from arena_assets.pipeline.cache_keys import (
    by_cluster,
    by_conversation,
    by_label_key,
    by_position,
    embedded,
    index_rows,
    month_conversations,
    write_index,
)
from arena_assets.storage import Lake

TOPIC_LABELS = "topic_labels"
TOPIC_CLUSTERS = "topic_clusters"
TOPIC_CLUSTER_SUMMARY = "topic_cluster_summary"
_CONV_COLUMNS = ["conv_id", "dedup_key", "first_prompt", "messages"]


def prompt_conversations(lake: Lake, month: str, columns: list[str]) -> pl.DataFrame:
    """``columns`` (``conv_id`` among them) of a month's conversations, and their
    ``messages`` as ``labels.label.distinct_prompts`` reads them (does the first prompt carry
    images), read only where the conversation has images (``n_images`` > 0; null elsewhere,
    which reads as none). Why: a production month's messages are GBs and about one
    conversation in ten has an image (500,000 conversations: 3.1 s / 2.05 GB -> 2.2 s /
    1.65 GB, the same prompts). A partition written without ``n_images``: every message."""

    if "conv_id" not in columns:
        raise ValueError("prompt_conversations: conv_id must be among the columns")
    lake.require("conversations", month)  # the lake's own error for a month not there yet
    counted = "n_images" in lake.schema("conversations", month).names
    conv = lake.read("conversations", month, columns=[*columns, *(["n_images"] if counted else [])])
    imaged = [("n_images", ">", 0)] if counted else None
    messages = lake.read("conversations", month, columns=["conv_id", "messages"], filters=imaged)
    return conv.drop("n_images", strict=False).join(
        messages, on="conv_id", how="left", maintain_order="left"
    )


@dataclass
class TopicLabelsMonth:
    """What the labelling step wrote and the figures its checks and metadata need."""

    month: str
    labels: pl.DataFrame
    report: LabelReport  # calls, cache hits, tokens, cost, statuses per label group
    parse_failure_rate: dict[str, float]  # per group (a WARN check)
    out_of_range: dict[str, int]  # rows breaking an invariant, per rule (blocking: all 0)
    url: str


@dataclass
class TopicClustersMonth:
    month: str
    assignments: pl.DataFrame
    summary: pl.DataFrame
    naming: BatchReport | None  # None when named by c-TF-IDF keywords
    urls: tuple[str, str]


def topic_labels_month(
    lake: Lake,
    month: str,
    task: LLMTask,
    *,
    cache_root: str,
    cfg: LabelConfig = LabelConfig(),
    storage_options: dict | None = None,
    progress: ProgressFn | None = None,
) -> TopicLabelsMonth:
    """conversations of ``month`` -> the lake's ``topic_labels`` partition. Conversations of
    battles read from a release that carries LMArena's own ``category_tag`` are not sent
    to the labeller: the boards read that tag (``ranking.boards.attach_topic_labels``)."""
    conv = lake.read("conversations", month, columns=_CONV_COLUMNS)
    conv = conv.filter(~pl.col("conv_id").is_in(release_tagged_conversations(lake, month)))
    if conv.is_empty():  # a month without traffic: empty tables, no call
        labels = pl.DataFrame(schema=TOPIC_LABELS_SCHEMA)
        url = lake.write(TOPIC_LABELS, month, labels)
        if recording() is None:
            write_index(lake, TOPIC_LABELS, month)
        return TopicLabelsMonth(month, labels, LabelReport(), {}, {}, url)
    with recording_keys() as log:
        labels, report = label_conversations(
            conv,
            task,
            month=month,
            cache_root=cache_root,
            cfg=cfg,
            storage_options=storage_options,
            progress=progress,
        )
    url = lake.write(TOPIC_LABELS, month, labels)
    if recording() is None:  # a plan asks nothing
        users = month_conversations(lake, month)
        # prompt labels are asked per label input, an answer's per "<conv_id>\x1f<n>"
        owners = (by_label_key(labels, users), by_conversation(users))
        write_index(lake, TOPIC_LABELS, month, index_rows(log.frame(), *owners))
    return TopicLabelsMonth(
        month, labels, report, parse_failure_rate(labels), out_of_range(labels), url
    )


def release_tagged_conversations(lake: Lake, month: str) -> list[str]:
    """Conversation ids of the month's votes whose release carried a ``category_tag``
    (``raw_logs.category_tag``, ``ingest/releases.py``; none in lakes from before it)."""

    if not lake.exists("raw_logs", month):
        return []
    if "category_tag" not in lake.schema("raw_logs", month).names:
        return []
    tagged = lake.read(
        "raw_logs",
        month,
        columns=["conv_id_a", "conv_id_b", "category_tag"],
        filters=[("category_tag", "!=", "")],
    )
    return pl.concat([tagged["conv_id_a"], tagged["conv_id_b"]]).drop_nulls().unique().to_list()


def topic_clusters_month(
    lake: Lake,
    month: str,
    embedder: Embedder,
    *,
    cfg: ClusterConfig = ClusterConfig(),
    namer: LLMTask | None = None,
    cache_root: str | None = None,
    storage_options: dict | None = None,
) -> TopicClustersMonth:
    """conversations (+ topic_labels when present) -> ``topic_clusters`` and its summary."""
    conv = prompt_conversations(lake, month, ["conv_id", "dedup_key", "first_prompt"])
    labels = lake.read(TOPIC_LABELS, month) if lake.exists(TOPIC_LABELS, month) else None
    if conv.is_empty():  # a month without traffic: empty tables, no call
        assign = pl.DataFrame(schema=TOPIC_CLUSTER_ASSIGNMENTS_SCHEMA)
        summary = pl.DataFrame(schema=TOPIC_CLUSTER_SUMMARY_SCHEMA)
        urls = (
            lake.write(TOPIC_CLUSTERS, month, assign),
            lake.write(TOPIC_CLUSTER_SUMMARY, month, summary),
        )
        if recording() is None:
            write_index(lake, TOPIC_CLUSTERS, month)
        return TopicClustersMonth(month, assign, summary, None, urls)
    prompts = distinct_prompts(conv)
    with recording_keys() as log:
        assign, summary, naming = build_topic_clusters(
            prompts,
            labels,
            embedder,
            month=month,
            cfg=cfg,
            namer=namer,
            cache_root=cache_root,
            storage_options=storage_options,
        )
    urls = (
        lake.write(TOPIC_CLUSTERS, month, assign),
        lake.write(TOPIC_CLUSTER_SUMMARY, month, summary),
    )
    if recording() is None:  # a plan asks nothing
        users = month_conversations(lake, month)
        vectors, names = embedded(log)  # the texts embedded are the prompts, in order
        write_index(
            lake,
            TOPIC_CLUSTERS,
            month,
            index_rows(vectors, by_position(prompts["dedup_key"].to_list(), users)),
            index_rows(names, by_cluster(assign, users)),
        )
    return TopicClustersMonth(month, assign, summary, naming, urls)
