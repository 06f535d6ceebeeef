"""Whose prompts a step's LLM requests came from: the owners of its item ids, and the key
index it writes beside the lake (``privacy/cache_keys.py``), so that forgetting a user
deletes the cached answers computed from their prompts.

A step runs its calls inside ``llm.keylog.recording_keys`` and hands the log here with the
owners of its items: item -> (conv_id, user_hash), an item that many conversations share
(a prompt typed by several users) once per conversation. The owners come from the month's
own tables, by what the step's item ids name:

- a conversation (``conv_id``; a label of an answer, "<conv_id>\\x1f<n>");
- a label input (``label_key`` of ``topic_labels``);
- a prompt (``dedup_key`` = ``prompt_id`` = ``question_id``): every conversation of the
  month that starts with it;
- a battle (``battle_id``): both its conversations, under the voter's hash;
- a position in the list of texts embedded (the embeddings' item ids), or a cluster.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import polars as pl

from arena_assets.llm.embed import EMBEDDINGS_NAMESPACE
from arena_assets.llm.keylog import KeyLog, recording_keys
from arena_assets.llm.plan import recording
from arena_assets.privacy.cache_keys import (
    KEY_INDEX_SCHEMA,
    OWNER_SCHEMA,
    key_index,
    write_key_index,
)
from arena_assets.storage import Lake


def _columns(lake: Lake, asset: str, month: str, names: list[str]) -> pl.DataFrame:
    """``names`` of a partition as strings, a column it lacks as nulls (a hand-made or
    imported partition: its rows then name no user); empty when the partition is absent."""
    import pyarrow.parquet as pq

    schema = dict.fromkeys(names, pl.String)
    if not lake.exists(asset, month):
        return pl.DataFrame(schema=schema)
    with lake.fs.open(lake.partition_path(asset, month), "rb") as fh:
        present = set(pq.read_schema(fh).names)
    frame = lake.read(asset, month, columns=[c for c in names if c in present])
    return frame.with_columns(
        pl.lit(None, pl.String).alias(c) for c in names if c not in present
    ).select([pl.col(c).cast(pl.String) for c in names])


def month_conversations(lake: Lake, month: str) -> pl.DataFrame:
    """conv_id, user_hash, dedup_key of the month's conversations."""
    return _columns(lake, "conversations", month, ["conv_id", "user_hash", "dedup_key"])


def by_conversation(conv: pl.DataFrame) -> pl.DataFrame:
    return conv.select(item="conv_id", conv_id="conv_id", user_hash="user_hash")


def by_prompt(conv: pl.DataFrame) -> pl.DataFrame:
    """Items named by a prompt's dedup key: every conversation that starts with it."""
    return conv.select(item="dedup_key", conv_id="conv_id", user_hash="user_hash")


def by_label_key(labels: pl.DataFrame, conv: pl.DataFrame) -> pl.DataFrame:
    """Items named by ``topic_labels.label_key``: the conversations labelled from it."""
    return (
        labels.select("conv_id", item="label_key")
        .join(conv.select("conv_id", "user_hash"), on="conv_id", how="inner")
        .select("item", "conv_id", "user_hash")
    )


def by_position(dedup_keys: list[str], conv: pl.DataFrame) -> pl.DataFrame:
    """Items named by their position in a list of prompts (the texts embedded)."""
    positions = pl.DataFrame(
        {"item": [str(i) for i in range(len(dedup_keys))], "dedup_key": dedup_keys},
        schema={"item": pl.String, "dedup_key": pl.String},
    )
    return positions.join(by_prompt(conv).rename({"item": "dedup_key"}), on="dedup_key").select(
        "item", "conv_id", "user_hash"
    )


def by_cluster(assignments: pl.DataFrame, conv: pl.DataFrame) -> pl.DataFrame:
    """Items named by a cluster id: every conversation of every prompt in the cluster (a
    cluster's name is asked from a sample of them; every member counts as an owner, so a
    name stays cached while another user's prompt is in its cluster)."""
    return (
        assignments.select(pl.col("cluster_id").cast(pl.String).alias("item"), "dedup_key")
        .join(by_prompt(conv).rename({"item": "dedup_key"}), on="dedup_key")
        .select("item", "conv_id", "user_hash")
    )


def by_battle(battles: pl.DataFrame) -> pl.DataFrame:
    """Items named by a battle id: its two conversations, the voter's."""
    return pl.concat(
        [
            battles.select(item="battle_id", conv_id=side, user_hash="voter_hash")
            for side in ("conv_id_a", "conv_id_b")
        ]
    )


def index_rows(log: pl.DataFrame, *owners: pl.DataFrame) -> pl.DataFrame:
    """Index rows of ``log`` (``KeyLog.frame``, or a part of it) from its items' owners."""
    found = [o.cast(OWNER_SCHEMA) for o in owners]  # type: ignore[arg-type]
    return key_index(log, pl.concat(found) if found else pl.DataFrame(schema=OWNER_SCHEMA))


def embedded(log: KeyLog) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the embeddings' requests, the others) of a log: the embeddings' item ids are
    positions, which other item ids (cluster ids) may equal."""
    frame = log.frame()
    is_embedding = pl.col("namespace") == EMBEDDINGS_NAMESPACE
    return frame.filter(is_embedding), frame.filter(~is_embedding)


def write_index(lake: Lake, stage: str, month: str, *rows: pl.DataFrame) -> int:
    """Write the stage's month of the key index; returns its rows."""
    table = pl.concat(rows).unique() if rows else pl.DataFrame(schema=KEY_INDEX_SCHEMA)
    write_key_index(lake, stage, month, table)
    return table.height


def prompt_owners(lake: Lake, month: str) -> list[pl.DataFrame]:
    """Owners of items named by a prompt (the bench's prompt ids, the risk labeller's)."""
    return [by_prompt(month_conversations(lake, month))]


def battle_owners(lake: Lake, month: str) -> list[pl.DataFrame]:
    """Owners of items named by a battle (the agreement's judges)."""
    columns = ["battle_id", "voter_hash", "conv_id_a", "conv_id_b"]
    return [by_battle(_columns(lake, "battles", month, columns))]


Step = TypeVar("Step", bound=Callable)


def indexed(stage: str, owners: Callable[[Lake, str], list[pl.DataFrame]]) -> Callable:
    """A month step ``step(lake, month, ...)`` whose LLM requests are recorded and written
    to the stage's key index once it returned (not in a plan: it asks nothing)."""

    def wrap(step: Step) -> Step:
        @functools.wraps(step)
        def run(lake: Lake, month: str, *args, **kwargs):
            with recording_keys() as log:
                result = step(lake, month, *args, **kwargs)
            if recording() is None:
                write_index(lake, stage, month, index_rows(log.frame(), *owners(lake, month)))
            return result

        return run  # type: ignore[return-value]

    return wrap
