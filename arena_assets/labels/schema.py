"""Table contracts of the topic stage: ``topic_labels`` and the two ``topic_clusters`` tables."""

from __future__ import annotations

import polars as pl

from arena_assets.labels.prompts import CRITERIA, VISION_CATEGORIES
from arena_assets.labels.tags import TAG_DTYPE

# every LLM label group carries who labelled it, with which prompt, and whether it parsed
LABEL_STATUSES = ("ok", "parse_failed", "failed", "not_applicable")


def worst_status(statuses: list[str]) -> str:
    """A group's status from its labels': failed, else parse_failed, else ok."""
    if not statuses:
        return "not_applicable"
    for s in ("failed", "parse_failed"):
        if s in statuses:
            return s
    return "ok" if "ok" in statuses else "not_applicable"


def _provenance(prefix: str) -> dict:
    return {
        f"{prefix}_model": pl.String,
        f"{prefix}_prompt_version": pl.String,
        f"{prefix}_status": pl.String,
    }  # a LABEL_STATUSES value


# topic_labels: one row per conversation; the LLM labels were asked once per label_key (the
# conversation's user turns joined, cut, with its first images). Flat label values are null
# unless their status is "ok" (never guessed); "not_applicable" when there was nothing to
# ask (no text, no image, no answer). `category_tag` holds what LMArena's labeller stores.
TOPIC_LABELS_SCHEMA = {
    "month": pl.String,
    "conv_id": pl.String,
    "dedup_key": pl.String,  # of the first prompt (clusters and bench join on it)
    "label_key": pl.String,  # of the labeller's input: user turns joined and cut, first images
    "is_vision": pl.Boolean,  # the first user message carries images
    "prompt_chars": pl.Int32,  # length of the joined user turns before cutting
    "user_tokens": pl.Int32,  # approximate cl100k tokens of all user turns (long_user board)
    "prompt_cut": pl.Boolean,  # cut to max_prompt_chars before labelling
    **dict.fromkeys(CRITERIA, pl.Boolean),
    "criteria_count": pl.Int8,  # how many of the 7 criteria hold
    "hard": pl.Boolean,  # criteria_count >= 6
    "math": pl.Boolean,
    "creative_writing": pl.Boolean,
    "if_score": pl.Int8,  # how well the prompt tests instruction following, 0-5 (LMArena's rubric)
    **_provenance("criteria"),
    "code": pl.Boolean,  # heuristic on the first prompt (arena_assets.labels.code)
    **_provenance("code"),
    "answer_refusal_classes": pl.List(pl.String),  # per answer: yes / no / maybe, null unparsed
    "answer_refusals": pl.List(pl.Boolean),  # per answer: class == "yes", null where unparsed
    "refusal": pl.Boolean,  # some answer said yes; null when none did and one is unknown
    **_provenance("refusal"),
    **{f"vision_{c}": pl.Boolean for c in VISION_CATEGORIES},  # null for text prompts
    **_provenance("vision"),
    "vision_error": pl.String,  # why vision_status is failed (e.g. the image is not under ARENA_IMAGE_ROOT)
    "category_tag": TAG_DTYPE,  # LMArena's structure (labels.tags); the boards read it
    "prompt_set": pl.String,  # name of the label prompt set (ARENA_LABEL_PROMPTS)
    "prompt_set_hash": pl.String,  # hash of its content
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
