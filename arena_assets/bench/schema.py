"""Columns of the BenchBuilder input (labelled prompts) and output (bench prompts)."""

from __future__ import annotations

import polars as pl

# the seven hard-prompt criteria of the Arena-Hard / BenchBuilder labeler
CRITERIA = (
    "specificity",
    "domain_knowledge",
    "complexity",
    "problem_solving",
    "creativity",
    "technical_accuracy",
    "real_world",
)

# required input columns; ``has_image`` is optional (False when absent)
LABELLED_PROMPTS = {
    "prompt_id": pl.String,  # the dedup key of the first prompt
    "prompt": pl.String,
    "language": pl.String,
    "category": pl.String,
    "cluster_id": pl.Int64,
    **dict.fromkeys(CRITERIA, pl.Boolean),
}

BENCH_PROMPTS = {
    "bench_version": pl.String,
    "bench_kind": pl.String,  # "text" or "vision"
    "prompt_id": pl.String,
    "prompt": pl.String,
    "language": pl.String,
    "category": pl.String,
    "cluster_id": pl.Int64,
    "cluster_mean_quality": pl.Float64,
    "quality": pl.Int64,
    "text_hash": pl.String,  # sha256 of the normalised text, for later decontamination
    **dict.fromkeys(CRITERIA, pl.Boolean),
}

# reasons a prompt did not make the bench, in the order the rules apply
DROP_REASONS = (
    "unlabelled",  # a criterion is null (label parse failure)
    "duplicate_within_month",  # same normalised text as an earlier row of this month
    "low_quality",  # fewer criteria than min_quality (pass 1)
    "cluster_below_threshold",  # its cluster's mean quality is under the threshold
    "exact_duplicate_of_earlier_bench",
    "near_duplicate_of_earlier_bench",
    "below_quality_after_relabel",  # the strong labeler's second pass disagreed
    "cluster_below_threshold_after_relabel",  # its cluster's re-scored mean is too low
    "over_cluster_cap",  # its cluster already gave per_cluster prompts
    "over_bench_size",  # the bench was full
)


def check_labelled(frame: pl.DataFrame) -> pl.DataFrame:
    """The input with required columns cast to their types; a clear error if one is missing."""
    missing = [c for c in LABELLED_PROMPTS if c not in frame.columns]
    if missing:
        raise ValueError(f"labelled prompts lack columns {missing}")
    out = frame.with_columns(pl.col(c).cast(t) for c, t in LABELLED_PROMPTS.items())
    if "has_image" not in out.columns:
        out = out.with_columns(has_image=pl.lit(False))
    return out.with_columns(pl.col("has_image").fill_null(False).cast(pl.Boolean))
