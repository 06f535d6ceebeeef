"""router_training_data: the month's kept battles as router / P2L training rows.

Per battle: a prompt id that no near-duplicate crosses (``neardup.py``: the near-duplicate
group of the first prompt, named after the group's earliest dedup key), the redacted
turns of both sides, language, prompt labels, model_a/b, the 4-way winner, style features
and each model's RouteLLM tier. Splits are by time: the month's first ``train`` share of
battles is train, then val, then test; a near-duplicate group goes wholly to the split of
its earliest battle. Groups are found within the month.

Two file layouts beside the table (``<lake>/router_training_data/_files/``), one file per
split, so the anchors' own training code reads them:

- FastChat ``clean_battle`` JSON lines (``<month>-<split>.jsonl``): question_id, model_a,
  model_b, winner, judge, conversation_a/b [{role, content}], turn, anony, language,
  tstamp (seconds), conv_metadata (sum_assistant_a/b_tokens; header_count_a/b and
  bold_count_a/b as totals, list_count_a/b {ordered, unordered}), plus what P2L's
  ``train.py`` reads: ``prompt`` (the user turns) and ``labels`` = [winner, loser, tie]
  (indices into the file's sorted model list, P2L's ``get_model_list``; tie 0 = none,
  1 = tie, 2 = both bad; a tie lists model_a first), then ``prompt_id``,
  ``prompt_labels`` (the topic labels) and ``tier_a/b``;
- the 55k CSV (``<month>-<split>.csv``): id, model_a, model_b, prompt, response_a,
  response_b (JSON lists of strings, one per turn), winner_model_a, winner_model_b,
  winner_tie (a "both bad" tie is a tie), as RouteLLM's ``preprocess_battles`` reads.
"""

from __future__ import annotations

import io

import numpy as np
import polars as pl

from arena_assets.routing.neardup import near_duplicate_groups
from arena_assets.routing.schema import ROUTER_TRAINING_SCHEMA, STYLE_COLUMNS, TRAINING_LABELS

SPLITS = ("train", "val", "test")
BATTLE_INPUT = [
    "battle_id",
    "tstamp",
    "model_a",
    "model_b",
    "winner",
    "language",
    "turn",
    "conv_id_a",
    "conv_id_b",
    "dedup_key",
    "keep",
    "voter_hash",
    *[f"{c}_{s}" for s in "ab" for c in STYLE_COLUMNS],
]


def _turns(role: str) -> pl.Expr:
    return pl.element().filter(pl.element().struct.field("role") == role).struct.field("content")


def build_training_rows(
    month: str,
    battles: pl.DataFrame,
    conversations: pl.DataFrame,
    labels: pl.DataFrame | None,
    tiers: dict[str, int],
    *,
    shares: tuple[float, float] = (0.8, 0.1),
) -> tuple[pl.DataFrame, dict]:
    """(rows in ROUTER_TRAINING_SCHEMA, counts); battles without both conversations are
    counted, not written."""
    kept = battles.filter(pl.col("keep"))
    conv = conversations.select("conv_id", "messages").unique("conv_id", keep="last")
    rows = (
        kept.join(
            conv.rename({"conv_id": "conv_id_a", "messages": "conversation_a"}),
            on="conv_id_a",
            how="inner",
        )
        .join(
            conv.rename({"conv_id": "conv_id_b", "messages": "conversation_b"}),
            on="conv_id_b",
            how="inner",
        )
        .sort("tstamp", "battle_id")
    )
    counts = {
        "battles": battles.height,
        "kept": kept.height,
        "missing_conversation": kept.height - rows.height,
    }
    prompt = pl.col("conversation_a").list.eval(_turns("user"))
    rows = rows.with_columns(prompt.alias("prompt"))
    first = rows.get_column("prompt").list.first().fill_null("").to_list()
    group = near_duplicate_groups(first) if rows.height else np.zeros(0, np.int64)
    rows = rows.with_columns(pl.Series("_group", group))
    # group id: the earliest battle's dedup key of the group (stable under reruns)
    rows = rows.with_columns(
        pl.col("dedup_key")
        .fill_null(pl.col("battle_id"))
        .first()
        .over("_group", order_by=["tstamp", "battle_id"])
        .alias("prompt_id")
    )
    n = rows.height
    edges = np.floor(np.cumsum(shares) * n).astype(int)
    by_time = np.array(["train"] * n, dtype=object)
    by_time[edges[0] : edges[1]] = "val"
    by_time[edges[1] :] = "test"
    rows = rows.with_columns(pl.Series("_split_t", by_time.tolist(), dtype=pl.String))
    rows = rows.with_columns(
        pl.col("_split_t").first().over("_group", order_by=["tstamp", "battle_id"]).alias("split")
    )
    counts["moved_with_group"] = int((rows["split"] != rows["_split_t"]).sum())
    counts["near_duplicate_groups_with_several_prompts"] = int(
        rows.group_by("_group")
        .agg(pl.col("dedup_key").n_unique().alias("k"))
        .filter(pl.col("k") > 1)
        .height
    )
    if labels is not None and labels.height:
        rows = rows.join(
            labels.select("dedup_key", *[c for c in TRAINING_LABELS if c in labels.columns]),
            on="dedup_key",
            how="left",
            maintain_order="left",
        )
    for c in TRAINING_LABELS:
        if c not in rows.columns:
            rows = rows.with_columns(pl.lit(None).alias(c))
    rows = rows.with_columns(
        pl.lit(month).alias("month"),
        pl.col("model_a")
        .replace_strict(tiers, default=None, return_dtype=pl.Int32)
        .alias("tier_a"),
        pl.col("model_b")
        .replace_strict(tiers, default=None, return_dtype=pl.Int32)
        .alias("tier_b"),
    )
    out = rows.select([pl.col(c).cast(t) for c, t in ROUTER_TRAINING_SCHEMA.items()])
    counts["by_split"] = {s: int((out["split"] == s).sum()) for s in SPLITS}
    return out, counts


def _json_list(col: str) -> pl.Expr:
    """A List[String] column as its JSON text (vectorised: a one-field struct's JSON, cut)."""
    wrapped = pl.struct(pl.col(col).alias("x")).struct.json_encode()
    return wrapped.str.slice(5, wrapped.str.len_chars() - 6)


def to_55k_csv(rows: pl.DataFrame) -> bytes:
    frame = (
        rows.select(
            pl.col("battle_id").alias("id"),
            "model_a",
            "model_b",
            _json_list("prompt").alias("prompt"),
            _json_list("_resp_a").alias("response_a"),
            _json_list("_resp_b").alias("response_b"),
            (pl.col("winner") == "model_a").cast(pl.Int8).alias("winner_model_a"),
            (pl.col("winner") == "model_b").cast(pl.Int8).alias("winner_model_b"),
            pl.col("winner").is_in(["tie", "tie (bothbad)"]).cast(pl.Int8).alias("winner_tie"),
        )
        if rows.height
        else pl.DataFrame(
            schema=dict.fromkeys(
                (
                    "id",
                    "model_a",
                    "model_b",
                    "prompt",
                    "response_a",
                    "response_b",
                    "winner_model_a",
                    "winner_model_b",
                    "winner_tie",
                ),
                pl.String,
            )
        )
    )
    buf = io.BytesIO()
    frame.write_csv(buf)
    return buf.getvalue()


def p2l_labels(rows: pl.DataFrame) -> pl.Expr:
    """P2L's label triple per battle: (winner, loser, tie indicator), the models as indices
    into the sorted models of these rows (what ``get_model_list`` rebuilds from the file)."""
    models = sorted(set(rows["model_a"].to_list()) | set(rows["model_b"].to_list()))
    index = {m: i for i, m in enumerate(models)}
    a = pl.col("model_a").replace_strict(index, return_dtype=pl.Int32)
    b = pl.col("model_b").replace_strict(index, return_dtype=pl.Int32)
    w = pl.col("winner")
    tie = pl.when(w == "tie").then(1).when(w == "tie (bothbad)").then(2).otherwise(0).cast(pl.Int32)
    return pl.concat_list(
        pl.when(w == "model_b").then(b).otherwise(a),
        pl.when(w == "model_b").then(a).otherwise(b),
        tie,
    )


def to_clean_battle_jsonl(rows: pl.DataFrame) -> bytes:
    turn = pl.element().struct.field

    def conv(col: str) -> pl.Expr:
        return pl.col(col).list.eval(pl.struct(turn("role"), turn("content")))

    meta = pl.struct(
        pl.col("sum_assistant_tokens_a").alias("sum_assistant_a_tokens"),
        pl.col("sum_assistant_tokens_b").alias("sum_assistant_b_tokens"),
        pl.col("header_count_a"),
        pl.col("header_count_b"),
        pl.struct(
            pl.col("ordered_list_count_a").alias("ordered"),
            pl.col("unordered_list_count_a").alias("unordered"),
        ).alias("list_count_a"),
        pl.struct(
            pl.col("ordered_list_count_b").alias("ordered"),
            pl.col("unordered_list_count_b").alias("unordered"),
        ).alias("list_count_b"),
        pl.col("bold_count_a"),
        pl.col("bold_count_b"),
    )
    frame = rows.select(
        pl.col("battle_id").alias("question_id"),
        "model_a",
        "model_b",
        "winner",
        pl.lit("arena_user").alias("judge"),
        conv("conversation_a").alias("conversation_a"),
        conv("conversation_b").alias("conversation_b"),
        "turn",
        pl.lit(True).alias("anony"),
        "language",
        (pl.col("tstamp").dt.epoch("us") / 1e6).alias("tstamp"),
        meta.alias("conv_metadata"),
        "prompt",
        "prompt_id",
        "split",
        p2l_labels(rows).alias("labels"),
        pl.struct(*TRAINING_LABELS).alias("prompt_labels"),
        "tier_a",
        "tier_b",
    )
    buf = io.BytesIO()
    frame.write_ndjson(buf)
    return buf.getvalue()


def layouts(rows: pl.DataFrame) -> dict[str, bytes]:
    """``{"<split>.jsonl": …, "<split>.csv": …}`` for each split."""
    rows = rows.with_columns(
        pl.col("conversation_a").list.eval(_turns("assistant")).alias("_resp_a"),
        pl.col("conversation_b").list.eval(_turns("assistant")).alias("_resp_b"),
    )
    out = {}
    for split in SPLITS:
        part = rows.filter(pl.col("split") == split)
        out[f"{split}.jsonl"] = to_clean_battle_jsonl(part.drop("_resp_a", "_resp_b"))
        out[f"{split}.csv"] = to_55k_csv(part)
    return out
