"""Table contracts of the topic stage: ``topic_labels`` and the two ``topic_clusters`` tables."""

from __future__ import annotations

import polars as pl

from arena_assets.labels.prompts import CRITERIA, VISION_CATEGORIES

# every LLM label group carries who labelled it, with which prompt, and whether it parsed
LABEL_STATUSES = ("ok", "parse_failed", "failed", "not_applicable")


def _provenance(prefix: str) -> dict:
    return {f"{prefix}_model": pl.String, f"{prefix}_prompt_version": pl.String,
            f"{prefix}_status": pl.String}  # a LABEL_STATUSES value


# topic_labels: one row per conversation; the LLM labels were asked once per dedup_key.
# Label values are null unless their status is "ok" (never guessed); "not_applicable" when
# there was nothing to ask (no text in the first prompt, no image, no answer).
TOPIC_LABELS_SCHEMA = {
    "month": pl.String,
    "conv_id": pl.String,
    "dedup_key": pl.String,
    "is_vision": pl.Boolean,  # the first user message carries images
    "prompt_chars": pl.Int32,  # length of the first prompt before cutting
    "prompt_cut": pl.Boolean,  # cut to max_prompt_chars before labelling
    **{c: pl.Boolean for c in CRITERIA},
    "criteria_count": pl.Int8,  # how many of the 7 criteria hold
    "hard": pl.Boolean,  # criteria_count >= 6
    "math": pl.Boolean,
    "creative_writing": pl.Boolean,
    "if_score": pl.Int8,  # instruction-following constraints, 0-5
    **_provenance("criteria"),
    "code": pl.Boolean,  # heuristic on the first prompt (arena_assets.labels.code)
    **_provenance("code"),
    "answer_refusals": pl.List(pl.Boolean),  # one per assistant answer, null where not ok
    "refusal": pl.Boolean,  # some answer refused; null if any answer's status is not ok
    **_provenance("refusal"),
    **{f"vision_{c}": pl.Boolean for c in VISION_CATEGORIES},  # null for text prompts
    **_provenance("vision"),
}

# topic_clusters: one row per distinct first prompt (dedup_key)
TOPIC_CLUSTER_ASSIGNMENTS_SCHEMA = {
    "month": pl.String,
    "dedup_key": pl.String,
    "cluster_id": pl.Int32,
    "cluster_name": pl.String,
    "was_outlier": pl.Boolean,  # the clusterer left it out; reassigned to the nearest cluster
    "n_conversations": pl.Int32,
}

# topic_clusters summary: one row per cluster
TOPIC_CLUSTER_SUMMARY_SCHEMA = {
    "month": pl.String,
    "cluster_id": pl.Int32,
    "cluster_name": pl.String,
    "name_source": pl.String,  # "llm:<model>:<prompt version>" or "c-tf-idf"
    "size": pl.Int32,  # distinct prompts
    "n_conversations": pl.Int32,
    "keywords": pl.List(pl.String),  # top c-TF-IDF terms
    "examples": pl.List(pl.String),  # sample prompts (seeded)
    "mean_criteria": pl.Float64,  # mean criteria_count over labelled prompts
    "share_hard": pl.Float64,
    "share_math": pl.Float64,
    "share_creative_writing": pl.Float64,
    "share_code": pl.Float64,
    "share_vision": pl.Float64,
    "share_refusal": pl.Float64,
}
