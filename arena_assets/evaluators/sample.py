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
    return tag_rows([category_tag], [release_tags]).row(0, named=True)


def tag_rows(category_tags: list[str | None], release_tags: list[str | None]) -> pl.DataFrame:
    """``tag_labels`` of many battles in one frame (a month ingested from a release has a
    category_tag on every vote: one polars pass, not a frame per vote)."""
    from arena_assets.labels.tags import BOARDS, VISION_TAGS, tag_frame

    tags = [orjson.loads(t) if t else None for t in category_tags]
    is_code = [(orjson.loads(r) if r else {}).get("is_code") for r in release_tags]
    vision = [
        True if any(str(k).split("_v")[0] in VISION_TAGS for k in (t or {})) else None for t in tags
    ]
    frame = pl.DataFrame(
        [tag_frame(tags), pl.Series("is_code", is_code, dtype=pl.Boolean, strict=False)]
    )
    return frame.select(
        hard=BOARDS["hard_6"],
        math=BOARDS["math"],
        creative_writing=BOARDS["creative_writing"],
        code=BOARDS["coding"],
        is_vision=pl.Series(vision, dtype=pl.Boolean),
    )


def conversation_json(messages: list[dict]) -> str:
    """One side's conversation as the chat messages a reward model scores (every turn, its
    roles as logged; images are not sent: the reward endpoint reads text)."""
    return orjson.dumps(
        [{"role": m["role"], "content": m["content"] or ""} for m in messages]
    ).decode()


def _category() -> pl.Expr:
    """The first of coding, math, creative_writing, vision that holds, else other;
    unlabelled when none of the four is known."""
    flags = (
        ("code", "coding"),
        ("math", "math"),
        ("creative_writing", "creative_writing"),
        ("is_vision", "vision"),
    )
    known = pl.any_horizontal(pl.col(f).is_not_null() for f, _ in flags)
    chosen = pl.when(~known).then(pl.lit("unlabelled"))
    for flag, name in flags:
        chosen = chosen.when(pl.col(flag).fill_null(False)).then(pl.lit(name))
    return chosen.otherwise(pl.lit("other"))


def _markdown(prefix: str) -> pl.Expr:
    return sum(
        (
            pl.col(f"{f}_{prefix}").fill_null(0)
            for f in ("header_count", "list_count", "bold_count")
        ),
        pl.lit(0),
    )


FLAGS = ("code", "math", "creative_writing", "hard", "is_vision")  # topic_labels' columns read here
TEXT_COLUMNS = ("question", "answer_a", "answer_b", "conversation_a", "conversation_b")


def judged_battles(
    battles: pl.DataFrame, conversations: pl.DataFrame, labels: pl.DataFrame | None = None
) -> pl.DataFrame:
    """One row per kept vote whose two conversations are in ``conversations``: ids,
    models, human winner, language, category, hard, prompt cluster (``dedup_key``), the
    judge's question and both answers, length (tokens) and markdown counts per side
    (``battle_population`` then ``with_texts``)."""
    return with_texts(
        battle_population(battles, conversations.select("conv_id"), labels), conversations
    )


def battle_population(
    battles: pl.DataFrame, conv_ids: pl.DataFrame, labels: pl.DataFrame | None = None
) -> pl.DataFrame:
    """``judged_battles`` without the texts, and with ``conv_id_a`` / ``conv_id_b``: what
    the sample is drawn from. A production month has ~130,000 kept votes and the judges see
    a few hundred, so only the sample's conversations are read and made into texts."""
    kept = battles.filter(pl.col("keep"))
    for c in ("category_tag", "release_tags"):
        if c not in kept.columns:
            kept = kept.with_columns(pl.lit(None, pl.String).alias(c))
    ids = conv_ids.select("conv_id").unique()
    kept = kept.join(ids.rename({"conv_id": "conv_id_a"}), on="conv_id_a").join(
        ids.rename({"conv_id": "conv_id_b"}), on="conv_id_b"
    )
    if labels is not None and labels.height:
        per_conv = labels.unique("conv_id", keep="last").select("conv_id", *FLAGS)
        kept = kept.join(per_conv.rename({"conv_id": "conv_id_a"}), on="conv_id_a", how="left")
    else:
        kept = kept.with_columns(*[pl.lit(None, pl.Boolean).alias(f) for f in FLAGS])
    # no topic labels but a release's category_tag: the flags by LMArena's rules
    untagged = (
        pl.all_horizontal(pl.col(f).is_null() for f in FLAGS)
        & pl.col("category_tag").is_not_null()
        & (pl.col("category_tag") != "")
    )
    kept = kept.with_row_index("_row")  # battle ids need not be unique here
    from_tags = kept.filter(untagged).select("_row", "category_tag", "release_tags")
    if from_tags.height:
        flags = tag_rows(from_tags["category_tag"].to_list(), from_tags["release_tags"].to_list())
        kept = kept.update(flags.select(*FLAGS).with_columns(from_tags["_row"]), on="_row")
    return kept.select(
        "battle_id",
        "month",
        "model_a",
        "model_b",
        "winner",
        "language",
        "turn",
        pl.coalesce("dedup_key", "battle_id").alias("dedup_key"),
        _category().alias("category"),
        "hard",
        pl.col("sum_assistant_tokens_a").fill_null(0).alias("tokens_a"),
        pl.col("sum_assistant_tokens_b").fill_null(0).alias("tokens_b"),
        _markdown("a").alias("markdown_a"),
        _markdown("b").alias("markdown_b"),
        "conv_id_a",
        "conv_id_b",
    ).sort("battle_id")


def with_texts(rows: pl.DataFrame, conversations: pl.DataFrame) -> pl.DataFrame:
    """``rows`` of ``battle_population`` (a sample of them, with its own columns) with the
    judge's question and both answers and each side's conversation as chat messages, from
    ``conversations`` (``conv_id, messages``: at least those of ``rows``)."""
    wanted = (
        pl.concat([rows.get_column("conv_id_a"), rows.get_column("conv_id_b")]).unique().implode()
    )
    msgs = dict(
        conversations.filter(pl.col("conv_id").is_in(wanted))
        .select("conv_id", "messages")
        .unique("conv_id", keep="last")
        .iter_rows()
    )
    texts = []
    for conv_a, conv_b in rows.select("conv_id_a", "conv_id_b").iter_rows():
        question, answer_a = side_text(msgs[conv_a])
        _, answer_b = side_text(msgs[conv_b])
        texts.append(
            (
                question,
                answer_a,
                answer_b,
                conversation_json(msgs[conv_a]),
                conversation_json(msgs[conv_b]),
            )
        )
    texts = pl.DataFrame(texts, schema=dict.fromkeys(TEXT_COLUMNS, pl.String), orient="row")
    at = rows.columns.index("hard") + 1
    order = [*rows.columns[:at], *TEXT_COLUMNS, *rows.columns[at:]]
    return rows.hstack(texts).select(c for c in order if c not in ("conv_id_a", "conv_id_b"))


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


def stratified_sample(
    frame: pl.DataFrame,
    size: int,
    seed: int,
    *,
    month: str = "",
    strata: tuple[str, ...] = ("category", "language"),
    min_per_stratum: int = 1,
) -> pl.DataFrame:
    """``size`` rows of ``frame`` (all when smaller), with ``stratum`` and ``weight``."""
    if size < 1:
        raise ValueError(f"sample size must be at least 1, got {size}")
    frame = frame.sort("battle_id").with_columns(
        pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("?") for c in strata], separator="|"
        ).alias("stratum")
    )
    sizes = dict(frame.group_by("stratum").len().iter_rows())
    draws = allocate(sizes, size, min_per_stratum)
    parts = []
    for stratum in sorted(sizes):
        rows = frame.filter(pl.col("stratum") == stratum)
        rng = np.random.default_rng([seed, zlib.crc32(f"{month}|{stratum}".encode())])
        pick = np.sort(rng.choice(rows.height, size=draws[stratum], replace=False))
        parts.append(rows[pick].with_columns(weight=pl.lit(rows.height / max(1, draws[stratum]))))
    return pl.concat(parts).sort("battle_id") if parts else frame.with_columns(weight=pl.lit(1.0))
