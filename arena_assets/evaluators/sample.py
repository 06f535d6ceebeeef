"""The battles a judge is asked about: a month's kept votes, stratified by category and
language, with what the judge and the baselines need (the two transcripts for a pairwise
judge, each side's conversation as chat messages for a reward model, their lengths and
markdown counts).

Category of a battle, first that holds: ``coding``, ``math``, ``creative_writing``,
``vision``, else ``other`` (from the first prompt's ``topic_labels``; where a release
carried LMArena's ``category_tag`` and the conversation has no topic labels, from the tag
by LMArena's rules: see :func:`tag_labels`); ``hard`` = at least 6 of the 7 hard-prompt
criteria. Battles with neither are ``unlabelled``.

Sampling: proportional allocation of ``size`` over the (category, language) strata by
largest remainder, every non-empty stratum at least ``min_per_stratum`` (when the size
allows), then a seeded draw inside each stratum over battles sorted by id: the same month,
size and seed give the same sample whatever the input order. Each row carries its
stratum's ``weight`` (battles in the stratum / battles drawn), so a user can re-weight.
"""

from __future__ import annotations

import zlib

import numpy as np
import orjson
import polars as pl

from arena_assets.evaluators.transcripts import side_text

CATEGORY_ORDER = ("coding", "math", "creative_writing", "vision", "other")


def tag_labels(category_tag: str | None, release_tags: str | None) -> dict:
    """code / math / creative_writing / hard / is_vision of a battle from a release's
    category_tag as published, by LMArena's membership rules (``labels.tags.BOARDS``:
    hard_6, math, creative_writing, the vision tags; is_code from the release's column)."""
    from arena_assets.labels.tags import BOARDS, VISION_TAGS, tag_frame

    tag = orjson.loads(category_tag) if category_tag else None
    extra = orjson.loads(release_tags) if release_tags else {}
    row = pl.DataFrame([tag_frame([tag])]).with_columns(is_code=pl.lit(extra.get("is_code"), pl.Boolean))
    flags = row.select(hard=BOARDS["hard_6"], math=BOARDS["math"],
                       creative_writing=BOARDS["creative_writing"], code=BOARDS["coding"]).row(0, named=True)
    vision = any(str(k).split("_v")[0] in VISION_TAGS for k in (tag or {}))
    return flags | {"is_vision": True if vision else None}


def conversation_json(messages: list[dict]) -> str:
    """One side's conversation as the chat messages a reward model scores (every turn, its
    roles as logged; images are not sent: the reward endpoint reads text)."""
    return orjson.dumps([{"role": m["role"], "content": m["content"] or ""} for m in messages]).decode()


def _category(code, math, creative, vision) -> str:
    if code is None and math is None and creative is None and vision is None:
        return "unlabelled"
    for flag, name in ((code, "coding"), (math, "math"), (creative, "creative_writing"), (vision, "vision")):
        if flag:
            return name
    return "other"


def _markdown(prefix: str) -> pl.Expr:
    return sum((pl.col(f"{f}_{prefix}").fill_null(0) for f in ("header_count", "list_count", "bold_count")),
               pl.lit(0))


def judged_battles(battles: pl.DataFrame, conversations: pl.DataFrame,
                   labels: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per kept vote whose two conversations are in ``conversations``: ids,
    models, human winner, language, category, hard, prompt cluster (``dedup_key``), the
    judge's question and both answers, length (tokens) and markdown counts per side."""
    kept = battles.filter(pl.col("keep"))
    for c in ("category_tag", "release_tags"):
        if c not in kept.columns:
            kept = kept.with_columns(pl.lit(None, pl.String).alias(c))
    msgs = conversations.select("conv_id", "messages").unique("conv_id", keep="last")
    kept = (kept.join(msgs.rename({"conv_id": "conv_id_a", "messages": "messages_a"}), on="conv_id_a")
            .join(msgs.rename({"conv_id": "conv_id_b", "messages": "messages_b"}), on="conv_id_b"))
    flags = ("code", "math", "creative_writing", "hard", "is_vision")
    if labels is not None and labels.height:
        per_conv = labels.unique("conv_id", keep="last").select("conv_id", *flags)
        kept = kept.join(per_conv.rename({"conv_id": "conv_id_a"}), on="conv_id_a", how="left")
    else:
        kept = kept.with_columns(*[pl.lit(None, pl.Boolean).alias(f) for f in flags])
    rows = []
    for r in kept.iter_rows(named=True):
        if all(r[f] is None for f in flags) and r["category_tag"]:
            r.update({k: v for k, v in tag_labels(r["category_tag"], r["release_tags"]).items()})
        question, answer_a = side_text(r["messages_a"])
        _, answer_b = side_text(r["messages_b"])
        rows.append({"battle_id": r["battle_id"], "category": _category(
            r["code"], r["math"], r["creative_writing"], r["is_vision"]), "hard": r["hard"],
            "question": question, "answer_a": answer_a, "answer_b": answer_b,
            "conversation_a": conversation_json(r["messages_a"]),
            "conversation_b": conversation_json(r["messages_b"])})
    texts = pl.DataFrame(rows, schema={"battle_id": pl.String, "category": pl.String, "hard": pl.Boolean,
                                       "question": pl.String, "answer_a": pl.String, "answer_b": pl.String,
                                       "conversation_a": pl.String, "conversation_b": pl.String})
    return kept.drop(*flags).join(texts, on="battle_id").select(
        "battle_id", "month", "model_a", "model_b", "winner", "language", "turn",
        pl.coalesce("dedup_key", "battle_id").alias("dedup_key"), "category", "hard",
        "question", "answer_a", "answer_b", "conversation_a", "conversation_b",
        pl.col("sum_assistant_tokens_a").fill_null(0).alias("tokens_a"),
        pl.col("sum_assistant_tokens_b").fill_null(0).alias("tokens_b"),
        _markdown("a").alias("markdown_a"), _markdown("b").alias("markdown_b"),
    ).sort("battle_id")


def allocate(sizes: dict[str, int], total: int, minimum: int = 1) -> dict[str, int]:
    """Draws per stratum: ``total`` split in proportion to ``sizes`` by largest remainder
    (Hamilton's method, ties by name), then every stratum raised to ``minimum`` (capped by
    its size) with draws taken from the largest allocations, while the total allows."""
    population = sum(sizes.values())
    if total >= population:
        return dict(sizes)
    quota = {k: total * n / population for k, n in sizes.items()}
    out = {k: int(q) for k, q in quota.items()}
    for k in sorted(sizes, key=lambda k: (-(quota[k] - out[k]), k))[: total - sum(out.values())]:
        out[k] += 1
    if minimum * len(sizes) <= total:
        for k in sorted(sizes):
            while out[k] < min(minimum, sizes[k]):
                donor = max((d for d in out if out[d] > minimum), key=lambda d: (out[d], d))
                out[donor] -= 1
                out[k] += 1
    return out


def stratified_sample(frame: pl.DataFrame, size: int, seed: int, *, month: str = "",
                      strata: tuple[str, ...] = ("category", "language"),
                      min_per_stratum: int = 1) -> pl.DataFrame:
    """``size`` rows of ``frame`` (all when smaller), with ``stratum`` and ``weight``."""
    if size < 1:
        raise ValueError(f"sample size must be at least 1, got {size}")
    frame = frame.sort("battle_id").with_columns(
        pl.concat_str([pl.col(c).cast(pl.String).fill_null("?") for c in strata], separator="|").alias("stratum"))
    sizes = dict(frame.group_by("stratum").len().iter_rows())
    draws = allocate(sizes, size, min_per_stratum)
    parts = []
    for stratum in sorted(sizes):
        rows = frame.filter(pl.col("stratum") == stratum)
        rng = np.random.default_rng([seed, zlib.crc32(f"{month}|{stratum}".encode())])
        pick = np.sort(rng.choice(rows.height, size=draws[stratum], replace=False))
        parts.append(rows[pick].with_columns(weight=pl.lit(rows.height / max(1, draws[stratum]))))
    return pl.concat(parts).sort("battle_id") if parts else frame.with_columns(weight=pl.lit(1.0))
