"""topic_labels: LLM labels per distinct first prompt, spread back to every conversation.

Each distinct first prompt (the conversations' ``dedup_key``) is asked once for the 7
criteria + math + creative writing + instruction-following score, and once more for the
vision categories when it came with images; each assistant answer is asked once whether it
refuses (identical prompt/answer pairs share one call). Prompts and answers longer than the
configured limits are cut before labelling. The code label is a heuristic (no LLM).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from arena_assets.labels.code import CODE_LABELER, CODE_VERSION, is_code
from arena_assets.labels.prompts import (
    CRITERIA, CRITERIA_VERSION, HARD_MIN_CRITERIA, REFUSAL_VERSION, VISION_CATEGORIES,
    VISION_VERSION, criteria_messages, parse_criteria, parse_refusal, parse_vision,
    refusal_messages, vision_messages,
)
from arena_assets.labels.schema import LABEL_STATUSES, TOPIC_LABELS_SCHEMA
from arena_assets.llm import BatchReport, LLMRequest, LLMResult, LLMTask, ResponseCache, run_batch
from arena_assets.llm.batch import ProgressFn


@dataclass(frozen=True)
class LabelConfig:
    max_prompt_chars: int = 4000  # prompts are cut to this many characters before labelling
    max_answer_chars: int = 2000  # answers likewise, for the refusal label
    max_answers: int = 8  # refusal is asked for at most this many answers per conversation
    label_refusals: bool = True
    label_vision: bool = True
    cache_chunk_size: int = 64


@dataclass
class LabelReport:
    conversations: int = 0
    distinct_prompts: int = 0
    calls_avoided_by_dedup: int = 0  # criteria requests not sent because prompts repeat
    batches: dict[str, BatchReport] = field(default_factory=dict)

    def as_metadata(self) -> dict:
        calls = sum(b.calls for b in self.batches.values())
        return {"conversations": self.conversations, "distinct_prompts": self.distinct_prompts,
                "calls_avoided_by_dedup": self.calls_avoided_by_dedup, "llm_calls": calls,
                "prompt_tokens": sum(b.prompt_tokens for b in self.batches.values()),
                "completion_tokens": sum(b.completion_tokens for b in self.batches.values()),
                "estimated_cost": round(sum(b.cost for b in self.batches.values()), 6),
                **{f"{k}_statuses": b.statuses for k, b in self.batches.items()}}


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


def distinct_prompts(conversations: pl.DataFrame) -> pl.DataFrame:
    """dedup_key, first_prompt (its first occurrence), is_vision, n_conversations."""
    first_images = (pl.col("messages").list.eval(
        pl.element().filter(pl.element().struct.field("role") == "user")
        .struct.field("images").list.len()).list.first().fill_null(0))
    return (conversations.sort("conv_id")
            .with_columns(first_images.alias("_first_images"))
            .group_by("dedup_key", maintain_order=True)
            .agg(pl.col("first_prompt").fill_null("").first(),
                 (pl.col("_first_images") > 0).any().alias("is_vision"),
                 pl.len().cast(pl.Int32).alias("n_conversations")))


def _answer_requests(conversations: pl.DataFrame, cfg: LabelConfig) -> list[LLMRequest]:
    reqs = []
    for conv_id, messages in conversations.select("conv_id", "messages").iter_rows():
        last_user, n = "", 0
        for m in messages or []:
            if m["role"] == "user":
                last_user = m["content"] or ""
            elif m["role"] == "assistant" and n < cfg.max_answers:
                reqs.append(LLMRequest(f"{conv_id}\x1f{n}", refusal_messages(
                    cut(last_user, cfg.max_prompt_chars), cut(m["content"] or "", cfg.max_answer_chars)),
                    REFUSAL_VERSION))
                n += 1
    return reqs


def label_conversations(conversations: pl.DataFrame, task: LLMTask, *, month: str,
                        cache_root: str, cfg: LabelConfig = LabelConfig(),
                        storage_options: dict | None = None,
                        progress: ProgressFn | None = None) -> tuple[pl.DataFrame, LabelReport]:
    """Rows of TOPIC_LABELS_SCHEMA, one per conversation (see module docstring).

    ``conversations`` needs conv_id, dedup_key, first_prompt and messages (the conversations
    table). Raises ``LLMEndpointError`` before any call when the endpoint cannot serve.
    """
    def cache(version: str) -> ResponseCache:
        return ResponseCache(cache_root, f"labels/{version}", cfg.cache_chunk_size,
                             storage_options or {})

    report = LabelReport(conversations=conversations.height)
    prompts = distinct_prompts(conversations)
    report.distinct_prompts = prompts.height
    report.calls_avoided_by_dedup = conversations.height - prompts.height
    texts = prompts.get_column("first_prompt").to_list()
    keys = prompts.get_column("dedup_key").to_list()

    # a prompt with no text (images only) has nothing to grade: not_applicable, no call
    has_text = [bool(t.strip()) for t in texts]
    crit_reqs = [LLMRequest(k, criteria_messages(cut(t, cfg.max_prompt_chars)), CRITERIA_VERSION)
                 for k, t, ok in zip(keys, texts, has_text) if ok]
    asked, report.batches["criteria"] = run_batch(task, crit_reqs, cache(CRITERIA_VERSION),
                                                  parse_criteria, progress=progress)
    by_key = {r.item_id: r for r in asked}
    crit = [by_key.get(k) or LLMResult(k, "not_applicable") for k in keys]
    per_prompt = pl.DataFrame({
        "dedup_key": keys,
        "prompt_chars": [len(t) for t in texts],
        "prompt_cut": [len(t) > cfg.max_prompt_chars for t in texts],
        **{c: [r.value.__getattribute__(c) if r.status == "ok" else None for r in crit]
           for c in (*CRITERIA, "math", "creative_writing", "if_score")},
        "criteria_status": [r.status for r in crit],
        "code": [is_code(t) for t in texts],
    }, schema_overrides={"if_score": pl.Int8, **{c: pl.Boolean for c in (*CRITERIA, "math", "creative_writing")}})

    vision_rows = {}
    if cfg.label_vision:
        vis_idx = [i for i, v in enumerate(prompts.get_column("is_vision").to_list()) if v and has_text[i]]
        vis_reqs = [LLMRequest(keys[i], vision_messages(cut(texts[i], cfg.max_prompt_chars)), VISION_VERSION)
                    for i in vis_idx]
        vis, report.batches["vision"] = run_batch(task, vis_reqs, cache(VISION_VERSION),
                                                  parse_vision, progress=progress)
        vision_rows = {r.item_id: r for r in vis}
    per_prompt = per_prompt.with_columns(
        *[pl.Series(f"vision_{c}", [getattr(vision_rows[k].value, c)
                                     if k in vision_rows and vision_rows[k].status == "ok" else None
                                     for k in keys], dtype=pl.Boolean) for c in VISION_CATEGORIES],
        pl.Series("vision_status", [vision_rows[k].status if k in vision_rows else "not_applicable"
                                    for k in keys], dtype=pl.String))

    answers: dict[str, list] = {}
    if cfg.label_refusals:
        ref, report.batches["refusal"] = run_batch(task, _answer_requests(conversations, cfg),
                                                   cache(REFUSAL_VERSION), parse_refusal,
                                                   progress=progress)
        for r in ref:
            answers.setdefault(r.item_id.split("\x1f")[0], []).append(r)
    conv_ids = conversations.get_column("conv_id").to_list()
    refusal_lists = [[r.value.refusal if r.status == "ok" else None for r in answers.get(c, [])]
                     for c in conv_ids]
    refusal_status = [_worst([r.status for r in answers.get(c, [])]) for c in conv_ids]

    criteria_count = pl.sum_horizontal([pl.col(c).cast(pl.Int8) for c in CRITERIA])
    any_null = pl.any_horizontal([pl.col(c).is_null() for c in CRITERIA])
    out = (conversations.select("conv_id", "dedup_key")
           .join(per_prompt, on="dedup_key", how="left", maintain_order="left")
           .join(prompts.select("dedup_key", "is_vision"), on="dedup_key", how="left",
                 maintain_order="left")
           .with_columns(
               pl.lit(month).alias("month"),
               pl.when(any_null).then(None).otherwise(criteria_count).alias("criteria_count"),
               pl.lit(task.model).alias("criteria_model"),
               pl.lit(CRITERIA_VERSION).alias("criteria_prompt_version"),
               pl.lit(CODE_LABELER).alias("code_model"), pl.lit(CODE_VERSION).alias("code_prompt_version"),
               pl.lit("ok").alias("code_status"),
               pl.Series("answer_refusals", refusal_lists, dtype=pl.List(pl.Boolean)),
               pl.Series("refusal_status", refusal_status, dtype=pl.String),
               pl.lit(task.model).alias("refusal_model"),
               pl.lit(REFUSAL_VERSION).alias("refusal_prompt_version"),
               pl.when(pl.col("vision_status") == "not_applicable").then(None)
               .otherwise(pl.lit(task.model)).alias("vision_model"),
               pl.when(pl.col("vision_status") == "not_applicable").then(None)
               .otherwise(pl.lit(VISION_VERSION)).alias("vision_prompt_version"))
           .with_columns(
               (pl.col("criteria_count") >= HARD_MIN_CRITERIA).alias("hard"),
               pl.when(pl.col("refusal_status") == "ok")
               .then(pl.col("answer_refusals").list.any()).otherwise(None).alias("refusal")))
    return out.select([pl.col(c).cast(t) for c, t in TOPIC_LABELS_SCHEMA.items()]), report


def _worst(statuses: list[str]) -> str:
    if not statuses:
        return "not_applicable"
    for s in ("failed", "parse_failed"):
        if s in statuses:
            return s
    return "ok"


def parse_failure_rate(labels: pl.DataFrame) -> dict[str, float]:
    """Share of answered labels that failed to parse, per label group (for a WARN check).

    Computed over distinct prompts for the prompt labels (a popular prompt counts once).
    """
    out = {}
    for group, per in (("criteria", "dedup_key"), ("vision", "dedup_key"), ("refusal", "conv_id")):
        st = labels.unique(per).get_column(f"{group}_status")
        answered = st.is_in(["ok", "parse_failed"]).sum()
        out[group] = float((st == "parse_failed").sum() / answered) if answered else 0.0
    return out


def out_of_range(labels: pl.DataFrame) -> dict[str, int]:
    """Rows breaking a label invariant, per rule (a blocking check wants all zeros)."""
    count = pl.sum_horizontal([pl.col(c).cast(pl.Int8) for c in CRITERIA])
    rules = {
        "if_score_outside_0_5": ~pl.col("if_score").is_between(0, 5),
        "criteria_count_mismatch": pl.col("criteria_count") != count,
        "hard_mismatch": pl.col("hard") != (pl.col("criteria_count") >= HARD_MIN_CRITERIA),
        "label_without_ok_status": (pl.col("criteria_status") != "ok") & pl.col("criteria_count").is_not_null(),
        "unknown_status": ~pl.all_horizontal([pl.col(f"{g}_status").is_in(LABEL_STATUSES)
                                              for g in ("criteria", "code", "refusal", "vision")]),
        "vision_on_text_prompt": ~pl.col("is_vision") & pl.col("vision_status").ne("not_applicable"),
    }
    row = labels.select([e.fill_null(False).sum().alias(k) for k, e in rules.items()]).row(0, named=True)
    return {k: int(v) for k, v in row.items()}
