"""Where one user is in the lake, found from the tables' schemas, and their removal.

A user reaches a table in one of four ways, each recognised by column names in the
partition's Parquet schema (so a table added later is covered without touching this
module):

1. a **user column** (``USER_COLUMNS``: ``user_hash``, ``voter_hash``): raw_logs,
   raw_rejects, conversations, battles. Rows of the user's hash go.
2. a **conversation column** (``CONVERSATION_COLUMNS``: ``conv_id``, ``conv_id_a``,
   ``conv_id_b``): topic_labels and any table keyed by conversation. Rows naming one of the
   user's conversations go (the ids are collected from the tables of 1 first).
3. a **prompt key** (``PROMPT_KEY_COLUMNS``: ``dedup_key``, ``prompt_id``, ``question_id``
   all hold the first prompt's dedup key): topic_clusters, bench_prompts, model_answers,
   judgments, answer_grades. Rows of a prompt that, in that month, only this user typed go;
   a prompt others typed too stays (it is theirs as well), and its counts are rebuilt by
   the recompute.
4. **text** with none of the above (``topic_cluster_summary.examples``): a string equal to
   a first prompt only this user typed that month is removed from lists, and a row whose
   string column equals one goes.

Tables holding none of these (battle_cells, the leaderboards) are aggregates: they are
rebuilt, not edited. Every edited partition is rewritten through ``Lake.write`` (temporary
file, then rename), allowed to become empty (forgetting the only user of a month is not a
vanished input).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from arena_assets.storage import Lake

USER_COLUMNS = ("user_hash", "voter_hash")
CONVERSATION_COLUMNS = ("conv_id", "conv_id_a", "conv_id_b")
PROMPT_KEY_COLUMNS = ("dedup_key", "prompt_id", "question_id")
PROMPT_TEXT_COLUMN = "first_prompt"


@dataclass
class Schema:
    """How a partition is reached by a user (the column names it has, per kind)."""

    users: list[str]
    conversations: list[str]
    prompt_keys: list[str]
    texts: list[str]  # string columns
    text_lists: list[str]  # list<string> columns

    @property
    def kind(self) -> str:
        if self.users:
            return "user"
        if self.conversations:
            return "conversation"
        if self.prompt_keys:
            return "prompt"
        return "text" if self.texts or self.text_lists else "none"


def partition_schema(lake: Lake, table: str, month: str) -> Schema:
    schema = lake.schema(table, month)
    names = schema.names

    def is_list_of_strings(t: pa.DataType) -> bool:
        return (pa.types.is_list(t) or pa.types.is_large_list(t)) and (
            pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)
        )

    return Schema(
        users=[c for c in USER_COLUMNS if c in names],
        conversations=[c for c in CONVERSATION_COLUMNS if c in names],
        prompt_keys=[c for c in PROMPT_KEY_COLUMNS if c in names],
        texts=[
            f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
        ],
        text_lists=[f.name for f in schema if is_list_of_strings(f.type)],
    )


def lake_schemas(lake: Lake) -> dict[str, dict[str, Schema]]:
    """table -> month -> schema, for every partition of the lake."""
    return {t: {m: partition_schema(lake, t, m) for m in lake.months(t)} for t in lake.assets()}


@dataclass
class Footprint:
    """The user's conversations, prompt keys and first prompts, per month; ``exclusive_*``:
    the keys and texts no other user's conversation of that month has."""

    user_hash: str
    conversations: dict[str, set[str]] = field(default_factory=dict)
    keys: dict[str, set[str]] = field(default_factory=dict)
    texts: dict[str, set[str]] = field(default_factory=dict)
    exclusive_keys: dict[str, set[str]] = field(default_factory=dict)
    exclusive_texts: dict[str, set[str]] = field(default_factory=dict)
    matched: set[str] = field(default_factory=set)  # months with a row of the user, any table

    @property
    def months(self) -> list[str]:
        """Months with any row of the user (Copilot Arena's battles hold no conversation)."""
        return sorted(self.matched | {m for m, ids in self.conversations.items() if ids})


def _user_match(cols: Iterable[str], user_hash: str) -> pl.Expr:
    return pl.any_horizontal([pl.col(c) == user_hash for c in cols]).fill_null(False)


def _in(cols: Iterable[str], values: set[str]) -> pl.Expr:
    wanted = sorted(values)
    return pl.any_horizontal([pl.col(c).is_in(wanted) for c in cols]).fill_null(False)


def find_footprint(lake: Lake, schemas: dict[str, dict[str, Schema]], user_hash: str) -> Footprint:
    """Collect the user's ids, keys and prompts from the tables with a user column."""
    fp = Footprint(user_hash)
    others_keys: dict[str, set[str]] = {}
    others_texts: dict[str, set[str]] = {}
    for table, months in schemas.items():
        for month, sch in months.items():
            if not sch.users:
                continue
            text = [PROMPT_TEXT_COLUMN] if PROMPT_TEXT_COLUMN in sch.texts else []
            keys = [c for c in sch.prompt_keys if c == "dedup_key"]
            frame = lake.read(table, month, columns=[*sch.users, *sch.conversations, *keys, *text])
            mine = _user_match(sch.users, user_hash)
            own, rest = frame.filter(mine), frame.filter(~mine)
            if own.height:
                fp.matched.add(month)
            for c in sch.conversations:
                fp.conversations.setdefault(month, set()).update(own[c].drop_nulls().to_list())
            for c in keys:
                fp.keys.setdefault(month, set()).update(own[c].drop_nulls().to_list())
                others_keys.setdefault(month, set()).update(rest[c].drop_nulls().to_list())
            for c in text:
                fp.texts.setdefault(month, set()).update(own[c].drop_nulls().to_list())
                others_texts.setdefault(month, set()).update(rest[c].drop_nulls().to_list())
    for month, keys in fp.keys.items():
        fp.exclusive_keys[month] = keys - others_keys.get(month, set())
    for month, texts in fp.texts.items():
        fp.exclusive_texts[month] = {t for t in texts - others_texts.get(month, set()) if t}
    return fp


def _rows_to_remove(sch: Schema, fp: Footprint, month: str) -> pl.Expr | None:
    if sch.users:
        match = _user_match(sch.users, fp.user_hash)
        ids = fp.conversations.get(month)
        return match | _in(sch.conversations, ids) if ids and sch.conversations else match
    if sch.conversations:
        ids = fp.conversations.get(month)
        return _in(sch.conversations, ids) if ids else None
    if sch.prompt_keys:
        keys = fp.exclusive_keys.get(month)
        return _in(sch.prompt_keys, keys) if keys else None
    texts = fp.exclusive_texts.get(month)
    return _in(sch.texts, texts) if texts and sch.texts else None


@dataclass
class Removal:
    rows: int = 0  # rows removed
    strings: int = 0  # list elements removed (text kind)


def remove_footprint(
    lake: Lake, table: str, month: str, sch: Schema, fp: Footprint, *, dry_run: bool = False
) -> Removal:
    """Count (and unless ``dry_run`` remove) the user's rows / strings in one partition."""
    out = Removal()
    rows = _rows_to_remove(sch, fp, month)
    texts = sorted(fp.exclusive_texts.get(month, ())) if sch.kind == "text" else []
    lists = sch.text_lists if texts else []
    if rows is None and not lists:
        return out
    frame = lake.read(table, month)
    if rows is not None:
        out.rows = int(frame.select(rows.sum()).item() or 0)
        frame = frame.filter(~rows)
    for c in lists:
        before = frame[c].list.len().fill_null(0).sum()
        frame = frame.with_columns(
            pl.col(c).list.eval(pl.element().filter(~pl.element().is_in(texts)))
        )
        out.strings += int(before - frame[c].list.len().fill_null(0).sum())
    if (out.rows or out.strings) and not dry_run:
        lake.write(table, month, frame, empty_ok=True)
    return out
