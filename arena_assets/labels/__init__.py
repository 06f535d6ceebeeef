"""Topic labels and clusters (pure logic; the Dagster assets wrap these functions).

Names are imported on first use so that ``arena-assets --help`` (which imports
``arena_assets.cli.labels``) loads no polars, numpy or scikit-learn.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "ClusterConfig": "clusters",
    "OfflineEmbedder": "clusters",
    "build_topic_clusters": "clusters",
    "is_code": "code",
    "LabelConfig": "label",
    "LabelReport": "label",
    "distinct_prompts": "label",
    "label_conversations": "label",
    "out_of_range": "label",
    "parse_failure_rate": "label",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'arena_assets.labels' has no attribute {name!r}")
    return getattr(importlib.import_module(f"arena_assets.labels.{_WHERE[name]}"), name)
