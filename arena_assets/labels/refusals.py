"""The refusal classifier's side of topic_labels: each answer with the user turn before it
(what LMArena's classifier reads), and each conversation's refusal fields from its answers'
classes. Built for a production month: ~700,000 answers, their texts read a slice at a time."""

from __future__ import annotations

import numpy as np
import polars as pl

from arena_assets.labels import tags as T
from arena_assets.labels.prompt_sets import LabelTask
from arena_assets.labels.schema import worst_status
from arena_assets.llm import LLMRequest
from arena_assets.llm.sliced import identity_in_chunks

ROW_SCHEMA = {
    "answer_refusal_classes": pl.List(pl.String),
    "answer_refusals": pl.List(pl.Boolean),
    "refusal": pl.Boolean,
    "refusal_status": pl.String,
    "_refusal_tag": pl.String,
}


def answer_turns(conversations: pl.DataFrame) -> pl.DataFrame:
    """One row per answer: conv_id, the conversation's row ``_pos``, its answer index ``n``
    and where the answer and the user turn before it are in the messages (``_a``, ``_u``;
    null: no user turn yet). Only indices: the texts are read a slice at a time
    (``turn_texts``; a production month's were ~0.8 GB, twice over while paired). Paired in
    polars: walking every message as Python dicts was ~1.5 s of a 30,000-conversation
    month's step, twice (the plan, the run)."""
    roles = pl.col("messages").list.eval(pl.element().struct.field("role"))
    return (
        conversations.select("conv_id", roles.alias("role"))
        .with_row_index("_pos")
        .filter(pl.col("role").list.len() > 0)  # null or empty: no answer to classify
        .with_columns(_a=pl.int_ranges(pl.col("role").list.len()))
        .explode("role", "_a", empty_as_null=False)
        .with_columns(
            _u=pl.when(pl.col("role") == "user").then(pl.col("_a")).forward_fill().over("_pos")
        )
        .filter(pl.col("role") == "assistant")
        .select("conv_id", "_pos", "_a", "_u", n=pl.int_range(pl.len()).over("_pos"))
    )


def answer_identity(
    conversations: pl.DataFrame,
    turns: pl.DataFrame,
    lt: LabelTask,
    max_prompt_chars: int,
    max_answer_chars: int,
) -> pl.Series:
    """Per answer, a hash of the text the classifier's request sends (its only part that
    varies): equal requests hash alike, whatever texts made them."""

    def hashed(start: int, length: int) -> pl.Series:
        texts = turn_texts(
            conversations, turns.slice(start, length), max_prompt_chars, max_answer_chars
        )
        return texts.select(lt.user_text(pl.col("user"), pl.col("answer")).hash(seed=0)).to_series()

    return identity_in_chunks(turns.height, hashed)


def turn_texts(
    conversations: pl.DataFrame, turns: pl.DataFrame, max_prompt_chars: int, max_answer_chars: int
) -> pl.DataFrame:
    """conv_id, n, the user turn and the answer (cut) of ``turns``' rows, in any order.

    Each conversation of ``turns`` is read once and its messages laid out flat, a turn's two
    texts taken by offset: gathering a conversation's whole message list per answer copied
    it once per answer (10.7 s of a 500,000-conversation month's cached step)."""
    pos = turns.get_column("_pos")
    read = pos.unique().sort()  # the conversations these turns are in, each once
    msgs = conversations.get_column("messages").gather(read)
    # an empty or null list explodes to one null row: its offset counts it (none reach
    # here: answer_turns keeps conversations with an answer)
    width = msgs.list.len().fill_null(0).clip(lower_bound=1).cast(pl.Int64)
    content = msgs.explode(empty_as_null=True).struct.field("content").fill_null("")
    start = (width.cum_sum() - width).gather(read.search_sorted(pos))

    def text(at: str, limit: int) -> pl.Series:
        return _cut(content.gather(start + turns.get_column(at).cast(pl.Int64)), limit)

    return turns.select("conv_id", "n").with_columns(
        user=text("_u", max_prompt_chars).fill_null(""), answer=text("_a", max_answer_chars)
    )


def _cut(text: pl.Series, limit: int) -> pl.Series:
    return text.str.slice(0, limit)  # by code point, as Python's [:limit] (test_labels)


def requests_of(texts: pl.DataFrame, lt: LabelTask, version: str) -> list[LLMRequest]:
    """The classifier's request of each answer of ``turn_texts``; item id "<conv_id>\\x1f<n>"."""
    return [
        LLMRequest(f"{conv_id}\x1f{n}", lt.messages(user, answer), version)
        for conv_id, n, user, answer in texts.select("conv_id", "n", "user", "answer").iter_rows()
    ]


def refusal_rows(
    answered: tuple[list, ...], n_conversations: int, tag: str | None, unparsed: dict[str, int]
) -> pl.DataFrame:
    """ROW_SCHEMA per conversation (in row order), from ``answered``: the conversation's
    row, task, answer index, class and status of each answer classified, in any order
    (a conversation's classes are put back in task then answer order)."""
    pos, task, n, classes, statuses = answered
    if tag is not None and pos:
        unparsed[tag] = unparsed.get(tag, 0) + statuses.count("parse_failed")
    order = np.lexsort(
        (
            np.asarray(n, dtype=np.int64),
            np.asarray(task, dtype=np.int64),
            np.asarray(pos, dtype=np.int64),
        )
    ).tolist()
    # where each conversation's answers start and end in that order
    bounds = np.searchsorted(
        np.asarray(pos, dtype=np.int64)[order], np.arange(n_conversations + 1)
    ).tolist()
    classes, statuses = [classes[i] for i in order], [statuses[i] for i in order]
    # a month's ~500,000 conversations share far fewer distinct (classes, statuses) (three
    # classes, short lists): each row is built once and gathered (a dict per conversation
    # into polars was ~15 s)
    seen: dict[tuple, int] = {(): 0}
    distinct = [refusal_row([], [], tag)]
    which = np.zeros(n_conversations, dtype=np.int64)
    for conv in range(n_conversations) if tag is not None else ():
        at, end = bounds[conv], bounds[conv + 1]
        if end > at:
            key = (*classes[at:end], "\x1f", *statuses[at:end])
            if (row := seen.get(key)) is None:
                row = seen[key] = len(distinct)
                distinct.append(refusal_row(classes[at:end], statuses[at:end], tag))
            which[conv] = row
    return pl.DataFrame(distinct, schema=ROW_SCHEMA)[which]


def refusal_row(classes: list[str | None], statuses: list[str], tag: str | None) -> dict:
    """A conversation's answers classified: yes / no / maybe, null when unparsed or failed."""
    import orjson

    if not classes or tag is None:
        return {
            "answer_refusal_classes": [],
            "answer_refusals": [],
            "refusal": None,
            "refusal_status": "not_applicable",
            "_refusal_tag": None,
        }
    said = [c == "yes" if c is not None else None for c in classes]
    refusal = True if any(said) else (False if all(s is not None for s in said) else None)
    # the anchor's tag: "yes" anywhere is a refusal, maybe / unparsed are not; a failed call: unknown
    tag_value = None if "failed" in statuses else orjson.dumps(T.refusal_value(classes)).decode()
    return {
        "answer_refusal_classes": classes,
        "answer_refusals": said,
        "refusal": refusal,
        "refusal_status": worst_status(statuses),
        "_refusal_tag": tag_value,
    }
