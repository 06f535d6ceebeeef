"""The rows of an answer cache (``llm.cache``): their schema, one row, a chunk's frame, and
a namespace's rows as read, held column by column for the plan's sums."""

from __future__ import annotations

import time

import numpy as np
import polars as pl

CACHE_SCHEMA = {
    "key": pl.String,
    "model": pl.String,
    "prompt_version": pl.String,
    "content": pl.String,  # the raw answer (chat) or null
    "reasoning": pl.String,  # reasoning the server returned beside the answer, if any
    "embedding": pl.List(pl.Float32),  # the vector (embeddings) or null
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "created_at": pl.Float64,  # unix seconds
    # the plan's own count of the request's input (llm.tokens) beside what the endpoint
    # billed (prompt_tokens): their ratio scales the next plans' counts (llm.plan.input_scale);
    # null in chunks written before it existed and for embeddings
    "counted_prompt_tokens": pl.Int64,
}
CACHE_COLUMNS = tuple(CACHE_SCHEMA)


def chunk_frame(rows: list[dict]) -> pl.DataFrame:
    """A chunk's rows as a frame, built column by column, an embeddings call's vectors
    stacked into one float32 matrix. Why: polars reading 1,024 dicts that each hold a
    vector (a float list) was ~30 % of the client's CPU in a month's prompt_embeddings,
    more than its HTTP calls."""
    columns: dict[str, object] = {c: [r[c] for r in rows] for c in CACHE_COLUMNS}
    vectors = columns["embedding"]
    if (
        vectors
        and all(isinstance(v, np.ndarray) and v.ndim == 1 for v in vectors)
        and len({len(v) for v in vectors}) == 1
    ):
        columns["embedding"] = pl.Series(
            "embedding", np.stack(vectors).astype(np.float32, copy=False)
        ).cast(pl.List(pl.Float32))
    else:  # lists, nulls (chat answers), or vectors of several sizes
        columns["embedding"] = [v.tolist() if isinstance(v, np.ndarray) else v for v in vectors]
    return pl.DataFrame(columns, schema=CACHE_SCHEMA)


def answer_row(
    key: str,
    *,
    model: str,
    prompt_version: str,
    content: str | None = None,
    reasoning: str | None = None,
    embedding: list[float] | np.ndarray | None = None,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    counted_prompt_tokens: int | None = None,
) -> dict:
    """One cache row (CACHE_SCHEMA's columns, in order), stamped now; ``embedding`` a
    float list or a 1-D array (``get`` gives an array back once the chunk is read)."""
    return {
        "key": key,
        "model": model,
        "prompt_version": prompt_version,
        "content": content,
        "reasoning": reasoning,
        "embedding": embedding,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "created_at": time.time(),
        "counted_prompt_tokens": counted_prompt_tokens,
    }


class CachedRows:
    """A namespace's answers as read, held column by column with a key -> row index: a
    production month's label cache holds ~700,000 answers, ~1 KB each as one dict per row
    (every field, every string its own object) and ~0.3 KB so; a row's dict is made when
    ``get`` asks for it."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.index = dict(zip(frame.get_column("key").to_list(), range(frame.height)))
        self.columns = {c: _column(frame.get_column(c)) for c in CACHE_COLUMNS if c != "key"}
        self._sums: dict[tuple[str, str], tuple[int, int]] = {}
        self._inputs: dict[tuple[str, str], tuple[int, int, int]] = {}

    def get(self, key: str) -> dict | None:
        i = self.index.get(key)
        if i is None:
            return None
        return {"key": key, **{c: values[i] for c, values in self.columns.items()}}

    def completion_tokens(self, model: str, prompt_version: str, skip: dict) -> tuple[int, int]:
        """Over the rows read, less those whose key is in ``skip`` (answered again since)."""
        cols = self.columns

        def match(i: int) -> bool:
            return cols["model"][i] == model and cols["prompt_version"][i] == prompt_version

        if (model, prompt_version) not in self._sums:  # a plan asks once per slice of a batch
            found = [cols["completion_tokens"][i] or 0 for i in range(len(self.index)) if match(i)]
            self._sums[(model, prompt_version)] = (sum(found), len(found))
        total, n = self._sums[(model, prompt_version)]
        for key in skip:
            i = self.index.get(key)
            if i is not None and match(i):
                total -= cols["completion_tokens"][i] or 0
                n -= 1
        return total, n

    def input_tokens(self, model: str, prompt_version: str, skip: dict) -> tuple[int, int, int]:
        """(billed, counted, answers) over the rows read that record both, less those
        whose key is in ``skip`` (answered again since)."""
        cols = self.columns
        billed, counted = cols["prompt_tokens"], cols["counted_prompt_tokens"]

        def match(i: int) -> bool:
            return (
                cols["model"][i] == model
                and cols["prompt_version"][i] == prompt_version
                and bool(billed[i])
                and bool(counted[i])
            )

        if (model, prompt_version) not in self._inputs:
            found = [i for i in range(len(self.index)) if match(i)]
            self._inputs[(model, prompt_version)] = (
                sum(billed[i] for i in found),
                sum(counted[i] for i in found),
                len(found),
            )
        b, c, n = self._inputs[(model, prompt_version)]
        for key in skip:
            i = self.index.get(key)
            if i is not None and match(i):
                b, c, n = b - billed[i], c - counted[i], n - 1
        return b, c, n


def _column(values: pl.Series) -> list | np.ndarray:
    if values.name in ("model", "prompt_version"):
        return _shared(values.to_list())  # a handful of distinct values: one string object each
    if (
        values.name == "embedding"
        and len(values)
        and not values.null_count()
        and values.list.len().n_unique() == 1
    ):
        # an embeddings namespace: one float32 matrix, a row per answer (a production month's
        # 236,000 vectors of 128 were ~30M Python floats, ~1 GB, as lists)
        return values.list.to_array(int(values.list.len()[0])).to_numpy()
    return values.to_list()


def _shared(values: list) -> list:
    pool: dict = {}
    return [pool.setdefault(v, v) for v in values]
