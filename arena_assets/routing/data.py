"""Frames -> what the P2L library fits on: one row per prompt (features) and coded battles.

Pure polars/numpy over the lake's tables (``prompt_embeddings``, ``topic_labels``,
``battles``); the month steps in ``pipeline/routing.py`` read them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

# the boards' own reading of topic_labels (category_tag, also for partitions written before it)
from arena_assets.ranking.boards import labels_with_tags
from arena_assets.ranking.cells import BOTHBAD, TIE, TIES_KEPT, WINNER_CODES, aggregate_codes
from arena_assets.ranking.identify import rankable
from arena_assets.routing.features import LABEL_FEATURES, FeatureSpace
from arena_assets.routing.p2l import Coded, P2LInputError

BATTLE_COLUMNS = [
    "battle_id",
    "month",
    "tstamp",
    "model_a",
    "model_b",
    "winner",
    "dedup_key",
    "keep",
]
_PROMPT_LABELS = list(LABEL_FEATURES)
# topic_labels columns the category boards' rules need besides the features
BOARD_LABELS = ("hard", "category_tag", "user_tokens", "prompt_chars", "refusal")


def labels_per_prompt(topic_labels: pl.DataFrame | None) -> pl.DataFrame:
    """One row per dedup_key with the prompt-level labels (asked once per dedup key, so
    every conversation of a key carries the same values; the first is taken)."""
    cols = [c for c in _PROMPT_LABELS if topic_labels is not None and c in topic_labels.columns]
    if topic_labels is None or topic_labels.is_empty():
        return pl.DataFrame(schema={"dedup_key": pl.String})
    extra = [c for c in ("hard",) if c in topic_labels.columns]
    # what the category boards' rules read (labels.tags.BOARDS): LMArena's category_tag,
    # is_code and user_tokens (of the key's first conversation, as a battle takes side A's)
    board = []
    if "category_tag" in topic_labels.columns or "refusal" in topic_labels.columns:
        topic_labels = labels_with_tags(topic_labels)
        board = [pl.col("category_tag").first(), pl.col("user_tokens").first()]
        if "code" in topic_labels.columns:
            board.append(pl.col("code").first().alias("is_code"))
    return (
        topic_labels.sort("conv_id")
        .group_by("dedup_key", maintain_order=True)
        .agg(*[pl.col(c).first() for c in [*cols, *extra]], *board)
    )


def prompt_frame(
    embeddings: pl.DataFrame, labels: pl.DataFrame | None
) -> tuple[pl.DataFrame, np.ndarray]:
    """(prompts, embedding matrix) in the same row order; ``embeddings`` is a
    prompt_embeddings frame (one row per dedup_key), ``labels`` ``labels_per_prompt``'s."""
    frame = embeddings.unique("dedup_key", keep="first", maintain_order=True)
    if labels is not None and labels.height:
        frame = frame.join(labels, on="dedup_key", how="left", maintain_order="left")
    emb = embedding_matrix(frame.get_column("embedding"))
    return frame.drop("embedding"), emb


def embedding_matrix(column: pl.Series) -> np.ndarray:
    """A List[Float32] column of equal-length vectors as a (rows × dim) float32 matrix,
    without going through Python lists (a month can hold ~1M prompts)."""
    if column.len() == 0:
        return np.zeros((0, 1), np.float32)
    dim = int(column.list.len().max())
    return column.list.to_array(dim).to_numpy().astype(np.float32, copy=False)


def outcome_codes(winner: pl.Series) -> np.ndarray:
    codes = winner.replace_strict(WINNER_CODES, default=None, return_dtype=pl.Int8)
    if codes.null_count():
        bad = winner.filter(codes.is_null()).unique().head(5).to_list()
        raise P2LInputError(f"{codes.null_count()} battle(s) with an unknown winner {bad}")
    return codes.to_numpy().astype(np.int64)


@dataclass
class Encoded:
    coded: Coded
    battle_ids: list[str]
    left_out: dict[str, str]  # model -> reason (ranking.identify), not fitted
    dropped: dict[str, int]  # battles not used, by reason


def encode(
    battles: pl.DataFrame,
    prompts: pl.DataFrame,
    X: np.ndarray,
    *,
    loss: str,
    tie_mode: str,
    min_battles: int = 0,
    models: list[str] | None = None,
) -> Encoded:
    """Coded battles over the rows of ``prompts`` (dedup_key order = rows of X).

    Kept battles only; ``bt`` applies the boards' tie mode (dropped ties counted), ``grk``
    keeps the four outcomes. The models are those the battles can rank (``rankable``, the
    boards' rule, with ``min_battles``), unless ``models`` fixes the list (evaluation).
    """
    dropped: dict[str, int] = {}
    b = battles.filter(pl.col("keep")) if "keep" in battles.columns else battles
    dropped["not_kept"] = battles.height - b.height
    pos = pl.DataFrame(
        {
            "dedup_key": prompts.get_column("dedup_key"),
            "_row": np.arange(prompts.height, dtype=np.int64),
        }
    )
    b = b.join(pos, on="dedup_key", how="left", maintain_order="left")
    dropped["no_prompt_features"] = int(b["_row"].null_count())
    b = b.filter(pl.col("_row").is_not_null())
    o = outcome_codes(b.get_column("winner"))
    keep = b.get_column("model_a") != b.get_column("model_b")
    if loss == "bt":
        keep = keep & pl.Series((o < TIE) | np.isin(o, TIES_KEPT[tie_mode]))
    dropped["tie_mode_or_self"] = int((~keep).sum())
    b, o = b.filter(keep), o[keep.to_numpy()]
    names = sorted(set(b["model_a"].to_list()) | set(b["model_b"].to_list()))
    left_out: dict[str, str] = {}
    if models is None:
        idx = {m: i for i, m in enumerate(names)}
        a_i = np.array([idx[m] for m in b["model_a"].to_list()], dtype=np.int64)
        b_i = np.array([idx[m] for m in b["model_b"].to_list()], dtype=np.int64)
        half = np.where(o == BOTHBAD, TIE, o)  # who can be ranked: the boards' rule
        sub, left_out = rankable(aggregate_codes(names, a_i, b_i, half), min_battles)
        models = list(sub.models)
    idx = {m: i for i, m in enumerate(models)}
    a = b["model_a"].replace_strict(idx, default=-1, return_dtype=pl.Int64).to_numpy()
    bb = b["model_b"].replace_strict(idx, default=-1, return_dtype=pl.Int64).to_numpy()
    ok = (a >= 0) & (bb >= 0)
    dropped["model_not_rankable"] = int((~ok).sum())
    ts = b.get_column("tstamp")
    seconds = (
        ts.dt.epoch("us").to_numpy() / 1e6
        if ts.dtype.is_temporal()
        else ts.cast(pl.Float64).to_numpy()
    )
    coded = Coded(models, a[ok], bb[ok], o[ok], b["_row"].to_numpy()[ok], seconds[ok], X)
    return Encoded(coded, b.filter(pl.Series(ok))["battle_id"].to_list(), left_out, dropped)


def features_for(prompts: pl.DataFrame, emb: np.ndarray, space: FeatureSpace) -> np.ndarray:
    return space.transform(prompts, emb)
