"""The ``prompt_embeddings`` step: one row per distinct first prompt of a month with its
embedding vector, what the P2L model (``pipeline.routing``) reads about a prompt."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from arena_assets.labels.clusters import IMAGE_ONLY
from arena_assets.labels.label import distinct_prompts
from arena_assets.llm.keylog import recording_keys
from arena_assets.llm.plan import recording
from arena_assets.pipeline.cache_keys import (
    by_position,
    embedded,
    index_rows,
    month_conversations,
    write_index,
)
from arena_assets.pipeline.topics import prompt_conversations
from arena_assets.routing.schema import PROMPT_EMBEDDINGS_SCHEMA
from arena_assets.storage import Lake

PROMPT_EMBEDDINGS = "prompt_embeddings"


@dataclass
class EmbeddingsMonth:
    month: str
    frame: pl.DataFrame
    url: str
    embedder: str


@dataclass
class EmbeddingInputs:
    """A month's distinct first prompts and the texts sent for them (``embedding_inputs``)."""

    prompts: pl.DataFrame | None  # None: the month has no conversation
    texts: list[str]


def embedding_inputs(lake: Lake, month: str, *, max_chars: int = 1000) -> EmbeddingInputs:
    """What ``prompt_embeddings_month`` embeds. Texts are cut and image-only prompts named
    exactly as ``topic_clusters`` embeds them, so an endpoint embedder answers from the same
    cache (a rerun, or the clusters' calls, cost nothing). Read once for the asset's plan
    and its run (a production month's prompts: ~1.5 s)."""
    conv = prompt_conversations(lake, month, ["conv_id", "dedup_key", "first_prompt", "language"])
    if conv.is_empty():
        return EmbeddingInputs(None, [])
    prompts = distinct_prompts(conv)
    lang = (
        conv.sort("conv_id")
        .group_by("dedup_key", maintain_order=True)
        .agg(pl.col("language").first())
    )
    prompts = prompts.join(lang, on="dedup_key", how="left", maintain_order="left")
    texts = [
        t[:max_chars] if t.strip() else IMAGE_ONLY
        for t in prompts.get_column("first_prompt").to_list()
    ]
    return EmbeddingInputs(prompts, texts)


def prompt_embeddings_month(
    lake: Lake,
    month: str,
    embed: Callable[[list[str]], np.ndarray],
    embedder: str,
    *,
    inputs: EmbeddingInputs | None = None,
) -> EmbeddingsMonth:
    """One row per distinct first prompt of the month with its embedding (``inputs``:
    ``embedding_inputs`` of the month, read here when not given)."""
    inputs = inputs or embedding_inputs(lake, month)
    if inputs.prompts is None:
        if recording() is None:
            write_index(lake, PROMPT_EMBEDDINGS, month)
        frame = pl.DataFrame(schema=PROMPT_EMBEDDINGS_SCHEMA)
        return EmbeddingsMonth(month, frame, lake.write(PROMPT_EMBEDDINGS, month, frame), embedder)
    prompts, texts = inputs.prompts, inputs.texts
    with recording_keys() as log:
        vectors = np.asarray(embed(texts), dtype=np.float32)
    if recording() is None:  # the texts' cache keys, by prompt (pipeline/cache_keys.py)
        users = month_conversations(lake, month)
        rows = index_rows(embedded(log)[0], by_position(prompts["dedup_key"].to_list(), users))
        write_index(lake, PROMPT_EMBEDDINGS, month, rows)
    frame = prompts.select(
        pl.lit(month).alias("month"),
        "dedup_key",
        pl.lit(embedder).alias("embedder"),
        pl.lit(vectors.shape[1], pl.Int32).alias("dim"),
        # from the matrix at once (a list of 236,000 row arrays took 0.5 s)
        pl.Series("embedding", vectors).cast(pl.List(pl.Float32)),
        "language",
        pl.col("first_prompt").str.len_chars().cast(pl.Int32).alias("prompt_chars"),
        "is_vision",
        "n_conversations",
    ).cast(PROMPT_EMBEDDINGS_SCHEMA)  # type: ignore[arg-type]
    return EmbeddingsMonth(month, frame, lake.write(PROMPT_EMBEDDINGS, month, frame), embedder)
