"""Topic labels and clusters (pure logic; the Dagster assets wrap these functions)."""

from arena_assets.labels.clusters import ClusterConfig, OfflineEmbedder, build_topic_clusters
from arena_assets.labels.code import is_code
from arena_assets.labels.label import (
    LabelConfig, LabelReport, distinct_prompts, label_conversations, out_of_range, parse_failure_rate,
)

__all__ = ["ClusterConfig", "LabelConfig", "LabelReport", "OfflineEmbedder", "build_topic_clusters",
           "distinct_prompts", "is_code", "label_conversations", "out_of_range", "parse_failure_rate"]
