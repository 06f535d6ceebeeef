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

ROW_SCHEMA = {"answer_refusal_classes": pl.List(pl.String), "answer_refusals": pl.List(pl.Boolean),
              "refusal": pl.Boolean, "refusal_status": pl.String, "_refusal_tag": pl.String}
FRAME_ROWS = 50_000  # conversations per frame of refusal rows: not 500,000 dicts at once


def answer_turns(conversations: pl.DataFrame, max_prompt_chars: int, max_answer_chars: int) -> pl.DataFrame:
    """One row per answer: conv_id, the conversation's row ``_pos``, its answer index ``n``,
    where the answer and the user turn before it are in the messages (``_a``, ``_u``; null:
    no user turn yet) and a hash of both texts cut (``_hash``: identical requests hash
    alike). The texts themselves are read a slice at a time (``turn_texts``): a production
    month's were ~0.8 GB. Paired in polars: walking every message as Python dicts was ~1.5 s
    of a 30,000-conversation month's step, twice (the plan, the run)."""
    role, content = pl.col("messages").struct.field("role"), pl.col("messages").struct.field("content")
    return (conversations.select("conv_id", "messages").with_row_index("_pos")
            .filter(pl.col("messages").list.len() > 0)  # null or empty: no answer to classify
            .with_columns(_a=pl.int_ranges(pl.col("messages").list.len()))
            .explode("messages", "_a", empty_as_null=False).filter(pl.col("messages").is_not_null())
            .select("conv_id", "_pos", "_a", role.alias("role"), content.fill_null("").alias("content"))
            .with_columns(_u=pl.when(pl.col("role") == "user").then(pl.col("_a")).forward_fill().over("conv_id"),
                          user=pl.when(pl.col("role") == "user").then(pl.col("content"))
                          .forward_fill().over("conv_id").fill_null(""))
            .filter(pl.col("role") == "assistant")
            .select("conv_id", "_pos", "_a", "_u", n=pl.int_range(pl.len()).over("conv_id"),
                    _hash=pl.struct(_cut(pl.col("user"), max_prompt_chars),
                                    _cut(pl.col("content"), max_answer_chars)).hash(seed=0)))


def turn_texts(conversations: pl.DataFrame, turns: pl.DataFrame, max_prompt_chars: int,
               max_answer_chars: int) -> pl.DataFrame:
    """conv_id, n, the user turn and the answer (cut) of ``turns``' rows."""
    def content(at: str) -> pl.Expr:
        return pl.col("_m").list.get(pl.col(at), null_on_oob=True).struct.field("content").fill_null("")
    msgs = conversations.get_column("messages").gather(turns.get_column("_pos"))
    return turns.with_columns(_m=msgs).select(
        "conv_id", "n", user=_cut(content("_u"), max_prompt_chars), answer=_cut(content("_a"), max_answer_chars))


def _cut(text: pl.Expr, limit: int) -> pl.Expr:
    return text.str.slice(0, limit)  # by code point, as Python's [:limit] (test_labels)


def requests_of(texts: pl.DataFrame, lt: LabelTask, version: str) -> list[LLMRequest]:
    """The classifier's request of each answer of ``turn_texts``; item id "<conv_id>\\x1f<n>"."""
    return [LLMRequest(f"{conv_id}\x1f{n}", lt.messages(user, answer), version)
            for conv_id, n, user, answer in texts.select("conv_id", "n", "user", "answer").iter_rows()]


def refusal_rows(answered: tuple[list, ...], n_conversations: int, tag: str | None,
                 unparsed: dict[str, int]) -> pl.DataFrame:
    """ROW_SCHEMA per conversation (in row order), from ``answered``: the conversation's
    row, task, answer index, class and status of each answer classified, in any order
    (a conversation's classes are put back in task then answer order)."""
    pos, task, n, classes, statuses = answered
    order = (np.lexsort((np.asarray(n, dtype=np.int64), np.asarray(task, dtype=np.int64),
                         np.asarray(pos, dtype=np.int64))) if pos else np.zeros(0, dtype=np.int64))
    rows, frames, at, empty = [], [], 0, refusal_row([], [], tag, unparsed)
    for conv in range(n_conversations):
        end = at
        while end < len(order) and pos[order[end]] == conv:
            end += 1
        idx = order[at:end]
        rows.append(refusal_row([classes[i] for i in idx], [statuses[i] for i in idx], tag, unparsed)
                    if len(idx) and tag is not None else empty)
        at = end
        if len(rows) == FRAME_ROWS:
            frames.append(pl.DataFrame(rows, schema=ROW_SCHEMA))
            rows = []
    frames.append(pl.DataFrame(rows, schema=ROW_SCHEMA))
    return pl.concat(frames)


def refusal_row(classes: list[str | None], statuses: list[str], tag: str | None,
                unparsed: dict[str, int]) -> dict:
    """A conversation's answers classified: yes / no / maybe, null when unparsed or failed."""
    import orjson

    if not classes or tag is None:
        return {"answer_refusal_classes": [], "answer_refusals": [], "refusal": None,
                "refusal_status": "not_applicable", "_refusal_tag": None}
    unparsed[tag] = unparsed.get(tag, 0) + statuses.count("parse_failed")
    said = [c == "yes" if c is not None else None for c in classes]
    refusal = True if any(said) else (False if all(s is not None for s in said) else None)
    # the anchor's tag: "yes" anywhere is a refusal, maybe / unparsed are not; a failed call: unknown
    tag_value = None if "failed" in statuses else orjson.dumps(T.refusal_value(classes)).decode()
    return {"answer_refusal_classes": classes, "answer_refusals": said, "refusal": refusal,
            "refusal_status": worst_status(statuses), "_refusal_tag": tag_value}
