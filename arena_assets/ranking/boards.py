"""Monthly arena boards from cumulative battles: overall, style-controlled, per category.

Pure logic over the ranking library; the leaderboards stage's month step
(``arena_assets.pipeline.leaderboards``) reads the battles and writes the frame this
returns (one row per board and model). Which models a board ranks is the library's call
(``identify.rankable``): every model left off a board is listed with its reason in
``info["left_out"]``.
"""

from __future__ import annotations

import zlib
from dataclasses import replace

import orjson
import polars as pl

from arena_assets.labels.tags import (
    BOARDS,
    TAG_DTYPE,
    TAG_NAMES,
    VISION_TAGS,
    refused,
    tag_frame,
    tag_from_flat,
    with_board_columns,
)
from arena_assets.ranking.battle_cells import (
    aggregate_cells,
    battle_cells,
    rankable_cells,
    removed_by_reason,
    style_columns,
)
from arena_assets.ranking.leaderboard import TooFewModels, fit_bt, leaderboard_from_aggregated
from arena_assets.ranking.newton import NoMaximumLikelihood
from arena_assets.ranking.options import FitOptions, RankingInputError
from arena_assets.ranking.schema import BOARD_SCHEMA
from arena_assets.ranking.style import fit_style_controlled

# Category boards, named as LMArena publishes them (arena-catalog's leaderboard-text/-vision
# categories), with LMArena's membership rules over a battle's `category_tag`
# (`labels.tags.BOARDS`): the battle's prompt tags are side A's conversation's (both sides
# share the prompt), its refusal is either side's; battle files that carry `category_tag`
# (LMArena's releases) go through the same rules (`ranking.io`).
CATEGORY_BOARDS: dict[str, pl.Expr] = BOARDS
# the battle's own columns; every other board needs topic labels
BOARDS_WITHOUT_LABELS = ("multiturn",)
LABEL_COLUMNS = ("category_tag", "code", "user_tokens", "is_vision")


def labels_with_tags(labels: pl.DataFrame) -> pl.DataFrame:
    """``topic_labels`` rows with ``category_tag`` (partitions written before the tag was
    stored get it from their flat columns) and ``user_tokens``."""
    if "category_tag" not in labels.columns:
        labels = labels.with_columns(category_tag=tag_from_flat())
    if "user_tokens" not in labels.columns:  # earlier partitions: ~4 characters a token
        labels = labels.with_columns(user_tokens=(pl.col("prompt_chars") // 4).cast(pl.Int32))
    return labels


def attach_topic_labels(battles: pl.DataFrame, labels: pl.DataFrame | None) -> pl.DataFrame:
    """``battles`` with the columns the category boards read (``category_tag``, ``is_code``,
    ``user_tokens``, ``is_vision``; null where a conversation has no labels) and
    ``labelled``: whether side A was found in ``labels`` or the battle came from a release
    that carries LMArena's own ``category_tag`` (``ingest/releases.py`` keeps it as JSON in
    the battles table): those battles use the release's tag and fields as published, no
    labeller involved."""
    if battles.schema.get("category_tag") != pl.String:
        return _attach_labels(battles, labels)
    extra = (
        [orjson.loads(t) if t else {} for t in battles["release_tags"]]
        if "release_tags" in battles.columns
        else [{}] * battles.height
    )
    tags = [
        release_refusal(orjson.loads(t), e) if t else None
        for t, e in zip(battles["category_tag"], extra, strict=True)
    ]
    meta = [
        e.get("conv_metadata") if isinstance(e.get("conv_metadata"), dict) else {} for e in extra
    ]
    released = battles.drop("category_tag", "release_tags", strict=False).with_columns(
        tag_frame(tags).alias("_release_tag"),
        pl.Series(
            "_release_code", [e.get("is_code") for e in extra], dtype=pl.Boolean, strict=False
        ),
        pl.Series(
            "_release_tokens",
            [m.get("sum_user_tokens") for m in meta],
            dtype=pl.Int64,
            strict=False,
        ),
        pl.Series(
            "_release_vision",
            [any(k.split("_v")[0] in VISION_TAGS for k in (t or {})) or None for t in tags],
            dtype=pl.Boolean,
        ),
    )
    out = _attach_labels(released, labels)
    tagged = pl.col("_release_tag").is_not_null()
    return out.with_columns(
        pl.when(tagged)
        .then(pl.col("_release_tag"))
        .otherwise(pl.col("category_tag"))
        .alias("category_tag"),
        pl.when(tagged).then(pl.col("_release_code")).otherwise(pl.col("is_code")).alias("is_code"),
        pl.coalesce(pl.col("user_tokens").cast(pl.Int64), "_release_tokens").alias("user_tokens"),
        pl.coalesce("is_vision", "_release_vision").alias("is_vision"),
        (pl.col("labelled") | tagged).alias("labelled"),
    ).drop("_release_tag", "_release_code", "_release_tokens", "_release_vision")


def release_refusal(tag: dict, extra: dict) -> dict:
    """A release's tag with a refusal: its own (refusal_v0.1 / v0.2) where it has one,
    else the release's battle-level ``is_refusal`` column (the 100k and FastChat files
    carry it; the 140k's tags have none), as ``refusal_v0.1``; else unchanged (unknown)."""
    if any(k in tag for k in ("refusal_v0.1", "refusal_v0.2")) or not isinstance(
        extra.get("is_refusal"), bool
    ):
        return tag
    return tag | {"refusal_v0.1": {"refusal": extra["is_refusal"]}}


def _attach_labels(battles: pl.DataFrame, labels: pl.DataFrame | None) -> pl.DataFrame:
    if labels is None or labels.is_empty():
        return with_board_columns(
            battles.drop(
                [
                    c
                    for c in ("category_tag", "is_code", "user_tokens", "is_vision")
                    if c in battles.columns
                ]
            )
        ).with_columns(labelled=pl.lit(False))
    per_conv = (
        labels_with_tags(labels)
        .unique("conv_id", keep="last")
        .select(
            "conv_id",
            "category_tag",
            pl.col("code").alias("is_code"),
            "user_tokens",
            "is_vision",
            refusal=refused(),
            found=pl.lit(True),
        )
    )
    side_a = per_conv.rename({c: f"{c}__a" for c in per_conv.columns})
    side_b = per_conv.select("conv_id", "refusal").rename(
        {"conv_id": "conv_id__b", "refusal": "refusal__b"}
    )
    joined = battles.join(side_a, left_on="conv_id_a", right_on="conv_id__a", how="left").join(
        side_b, left_on="conv_id_b", right_on="conv_id__b", how="left"
    )
    # a refusal on either side counts; unknown only when neither side's answers said yes
    either = (
        pl.when(pl.col("refusal__a") | pl.col("refusal__b"))
        .then(True)
        .when(pl.col("refusal__a").is_not_null() & pl.col("refusal__b").is_not_null())
        .then(False)
        .otherwise(None)
    )
    tag = pl.col("category_tag__a")
    fields = [
        tag.struct.field(n).alias(n) for n in TAG_NAMES if n not in ("refusal_v0.1", "refusal_v0.2")
    ]
    return joined.with_columns(
        pl.struct(
            *fields,
            pl.struct(refusal=either, score=pl.lit(None, pl.String)).alias("refusal_v0.1"),
            pl.lit(None, TAG_DTYPE.to_schema()["refusal_v0.2"]).alias("refusal_v0.2"),
        ).alias("category_tag"),
        *[pl.col(f"{c}__a").alias(c) for c in ("is_code", "user_tokens", "is_vision")],
        pl.col("found__a").fill_null(False).alias("labelled"),
    ).drop([c for c in joined.columns if c.endswith(("__a", "__b"))])


# battle columns the category boards read besides the labels (rows: a category is not a
# cell key, so these boards fit on the kept rows of the months so far)
CATEGORY_ROW_COLUMNS = (
    "model_a",
    "model_b",
    "winner",
    "keep",
    "conv_id_a",
    "conv_id_b",
    "turn",
    # a release's own labels, where its battles carry them (read when present)
    "category_tag",
    "release_tags",
    # the battle filter's down-weights (read when present; the fit honours them)
    "weight",
)


def month_seed(seed: int, month: str) -> int:
    """A stable per-month seed, so a month's snapshot is reproducible on its own."""
    return (seed * 1_000_003 + zlib.crc32(month.encode())) % (2**31)


def _board(table: pl.DataFrame, month: str, board: str) -> pl.DataFrame:
    if "rank_change" not in table.columns:
        table = table.with_columns(rank_change=pl.lit(None, pl.Int64))
    return table.with_columns(month=pl.lit(month), board=pl.lit(board)).select(
        [pl.col(c).cast(t) for c, t in BOARD_SCHEMA.items()]
    )


def board_options(
    *,
    bootstrap_rounds: int = 200,
    level: float = 0.95,
    anchor: tuple[str, float] | None = None,
    min_battles: int = 300,
    seed: int = 0,
) -> FitOptions:
    """The fit options of the monthly boards (bootstrap intervals when rounds > 0)."""
    return FitOptions(
        anchor=anchor,
        ci="bootstrap" if bootstrap_rounds > 0 else "sandwich",
        level=level,
        bootstrap_rounds=bootstrap_rounds,
        seed=seed,
        min_battles=min_battles,
    )


def arena_boards(
    battles: pl.DataFrame,
    *,
    month: str,
    options: FitOptions | None = None,
    min_category_battles: int = 1000,
    labels: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, dict]:
    """Boards as of ``month`` from ``battles`` (all months <= month, with ``keep``): the
    battles are counted into cells (``battle_cells``) and passed to ``boards_from_cells``;
    ``labels`` (``topic_labels`` rows, None = none yet) feed the category boards."""
    options = options or board_options()
    style_rows = battles.select([c for c in style_columns(options) if c in battles.columns])
    rows = battles.select([c for c in CATEGORY_ROW_COLUMNS if c in battles.columns])
    return boards_from_cells(
        battle_cells(battles, month),
        style_rows,
        month=month,
        options=options,
        min_category_battles=min_category_battles,
        category_rows=rows,
        labels=labels,
    )


def boards_from_cells(
    cells: pl.DataFrame,
    style_rows: pl.DataFrame,
    *,
    month: str,
    options: FitOptions | None = None,
    min_category_battles: int = 1000,
    category_rows: pl.DataFrame | None = None,
    labels: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, dict]:
    """Boards as of ``month`` from the counted ``cells`` of every month <= month
    (``battle_cells``) and, for style control only, the battle rows' ``style_columns``.
    ``category_rows`` (the rows' ``CATEGORY_ROW_COLUMNS``) with ``labels`` (``topic_labels``
    rows of those months) give the boards of ``CATEGORY_BOARDS``: only battles whose
    conversations are labelled count there (``multiturn`` needs no label).

    ``options.seed`` is mixed with the month (``month_seed``). ``info`` holds the battles
    used per board (or why a board was skipped), the style coefficients, and
    ``left_out``: board -> {model: reason} for every model a board could not rank.
    """
    options = options or board_options()
    options = replace(options, seed=month_seed(options.seed, month))
    kept = rankable_cells(cells)
    info: dict = {
        "battles_used": 0,
        "removed_by_reason": removed_by_reason(cells),
        "boards": {},
        "style_coefficients": pl.DataFrame(),
        "left_out": {},
    }
    frames = [pl.DataFrame(schema=BOARD_SCHEMA)]
    # an early or small month may leave fewer than two models to rank: that board is
    # skipped (and said so in `boards`), the others are still published
    try:
        overall = leaderboard_from_aggregated(aggregate_cells(kept, options.tie_mode), options)
    except TooFewModels as exc:
        info["boards"]["overall"] = f"skipped: {exc}"
        return pl.concat(frames), info
    frames.append(_board(overall.table, month, "overall"))
    info["battles_used"] = info["boards"]["overall"] = overall.meta["n_battles"]
    info["left_out"]["overall"] = overall.left_out
    styled_input = style_rows.filter(pl.col("keep") & pl.col("winner").is_not_null())
    try:
        styled = fit_style_controlled(styled_input, options)
    except (NoMaximumLikelihood, RankingInputError) as exc:
        # a small month where a style feature is constant or collinear with the ratings:
        # the style board is skipped and says why, the other boards are still published
        info["boards"]["style_control"] = f"skipped: {exc}"
    else:
        frames.append(_board(styled.table, month, "style_control"))
        info["boards"]["style_control"] = styled.meta["n_battles"]
        info["left_out"]["style_control"] = styled.left_out
        info["style_coefficients"] = styled.coefficients

    # per-category boards: languages (from the cells), then the topic categories
    by_language = (
        kept.group_by("language").agg(pl.col("n").sum()).filter(pl.col("n") >= min_category_battles)
    )
    for language in sorted(by_language["language"].drop_nulls().to_list()):
        _add_board(
            frames,
            info,
            f"language:{language}",
            month,
            lambda: leaderboard_from_aggregated(
                aggregate_cells(kept.filter(pl.col("language") == language), options.tie_mode),  # noqa: B023 - fitted within this iteration
                options,
            ),
        )
    if category_rows is not None:
        frames += _category_boards(
            category_rows, labels, month, options, min_category_battles, info
        )
    return pl.concat(frames), info


def labelled_battles(rows: pl.DataFrame, labels: pl.DataFrame | None) -> pl.DataFrame:
    """The kept battle rows with a winner (``CATEGORY_ROW_COLUMNS``) joined to their topic
    labels: what every category board selects from (``category_subset``)."""
    for column in ("conv_id_a", "conv_id_b"):  # adapters' battles may lack conversation ids
        if column not in rows.columns:
            rows = rows.with_columns(pl.lit(None, pl.String).alias(column))
    if "turn" not in rows.columns:
        rows = rows.with_columns(pl.lit(None, pl.Int64).alias("turn"))
    return attach_topic_labels(rows.filter(pl.col("keep") & pl.col("winner").is_not_null()), labels)


def category_subset(kept: pl.DataFrame, name: str) -> pl.DataFrame:
    """The battles of category board ``name`` among ``labelled_battles``."""
    needs = pl.lit(True) if name in BOARDS_WITHOUT_LABELS else pl.col("labelled")
    return kept.filter(needs & CATEGORY_BOARDS[name].fill_null(False))


def _category_boards(
    rows: pl.DataFrame,
    labels: pl.DataFrame | None,
    month: str,
    options: FitOptions,
    min_category_battles: int,
    info: dict,
) -> list[pl.DataFrame]:
    """The ``CATEGORY_BOARDS`` of the kept battle rows joined to their topic labels."""
    kept = labelled_battles(rows, labels)
    info["labelled_battles"] = int(kept["labelled"].sum())
    frames = []
    for name in CATEGORY_BOARDS:
        subset = category_subset(kept, name)
        if subset.height < min_category_battles:
            info["boards"][name] = f"skipped: {subset.height} battles < {min_category_battles}"
            continue
        _add_board(frames, info, name, month, lambda: fit_bt(subset, options))  # noqa: B023 - fitted within this iteration
    return frames


def _add_board(frames: list[pl.DataFrame], info: dict, name: str, month: str, fit) -> None:
    """Fit one board with ``fit()`` and add it to ``frames`` and ``info``, or say in
    ``info`` why it was skipped."""
    try:
        board = fit()
    except RankingInputError as exc:  # too few models, or the anchor is not among them
        info["boards"][name] = f"skipped: {exc}"
        return
    frames.append(_board(board.table, month, name))
    info["boards"][name] = board.meta["n_battles"]
    info["left_out"][name] = board.left_out
