"""BenchBuilder: a month's labelled prompts -> a small bench of hard, diverse prompts.

The recipe of Arena-Hard-Auto (Li et al. 2024): a prompt's quality is the number of the
seven criteria it meets; a topic cluster's score is the mean quality of its prompts; keep
prompts of quality >= ``min_quality`` from clusters whose mean reaches
``min_cluster_mean``, at most ``per_cluster`` per cluster (a seeded draw), best clusters
first, up to ``size`` prompts. Image prompts make a separate vision bench. Before drawing,
prompts that repeat an earlier bench (exact or near duplicate) are removed, so a month's
bench never re-uses a prompt an earlier month published.

Every input row ends either in the bench or with one drop reason (``schema.DROP_REASONS``):
counts in = bench + dropped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from arena_assets.bench.decontam import Contamination, text_hash
from arena_assets.bench.schema import BENCH_PROMPTS, CRITERIA, DROP_REASONS, check_labelled

# relabel hook of the two-pass mode: gets the survivors (prompt_id, prompt, language,
# category, criteria...) and returns prompt_id plus the strong labeler's criteria
Relabel = Callable[[pl.DataFrame], pl.DataFrame]


@dataclass(frozen=True)
class BenchOptions:
    size: int = 500
    vision_size: int = 500
    min_quality: int = 6
    min_cluster_mean: float = 3.0
    per_cluster: int = 2
    seed: int = 0
    near_duplicate_threshold: float = 0.8
    num_perm: int = 128

    def __post_init__(self) -> None:
        if self.size < 1 or self.vision_size < 0 or self.per_cluster < 1:
            raise ValueError("size and per_cluster must be >= 1, vision_size >= 0")
        if not 0 <= self.min_quality <= len(CRITERIA):
            raise ValueError(f"min_quality must be in 0..{len(CRITERIA)}")


@dataclass
class Bench:
    prompts: pl.DataFrame  # BENCH_PROMPTS columns
    stats: dict
    version: str


def _quality() -> pl.Expr:
    return pl.sum_horizontal(pl.col(c).cast(pl.Int64) for c in CRITERIA).alias("quality")


def bench_version(month: str, kind: str, prompt_ids: list[str], options: BenchOptions) -> str:
    """``<month>.<kind>.<10 hex>``: the hash of the chosen prompts and the options, so the
    same inputs give the same version and any change gives a new one."""
    payload = json.dumps([sorted(prompt_ids), asdict(options)], sort_keys=True).encode()
    return f"{month}.{kind}.{hashlib.sha256(payload).hexdigest()[:10]}"


def _seeded_key(ids: pl.Series, seed: int, salt: str) -> np.ndarray:
    """A random key per id that depends only on (seed, salt, id), not on row order."""
    out = np.empty(len(ids), dtype=np.float64)
    for i, pid in enumerate(ids.to_list()):
        digest = hashlib.blake2b(f"{seed}|{salt}|{pid}".encode(), digest_size=8).digest()
        out[i] = int.from_bytes(digest, "big") / 2**64
    return out


def build_bench(
    labelled: pl.DataFrame,
    options: BenchOptions = BenchOptions(),
    *,
    month: str,
    kind: str = "text",
    earlier: Iterable[str] = (),
    relabel: Relabel | None = None,
) -> Bench:
    """One bench from labelled prompts of one kind (see the module docstring)."""
    size = options.size if kind == "text" else options.vision_size
    frame = check_labelled(labelled).sort("prompt_id")
    n_in = frame.height
    if frame["prompt_id"].is_duplicated().any():
        raise ValueError("prompt_id must be unique (one row per distinct first prompt)")
    frame = frame.with_columns(reason=pl.lit(None, dtype=pl.String))

    def mark(cond: pl.Expr, reason: str) -> None:
        nonlocal frame
        frame = frame.with_columns(
            reason=pl.when(pl.col("reason").is_null() & cond).then(pl.lit(reason))
            .otherwise(pl.col("reason")))

    alive = pl.col("reason").is_null()
    mark(pl.any_horizontal(pl.col(c).is_null() for c in CRITERIA), "unlabelled")
    frame = frame.with_columns(_quality(), text_hash=pl.col("prompt").map_elements(
        text_hash, return_dtype=pl.String))
    mark(pl.col("text_hash").is_duplicated() & (pl.int_range(pl.len()).over("text_hash") > 0),
         "duplicate_within_month")
    # cluster scores from every labelled prompt of the cluster (as BenchBuilder does)
    means = (frame.filter(pl.col("reason").is_null() | (pl.col("reason") != "unlabelled"))
             .filter(pl.col("quality").is_not_null())
             .group_by("cluster_id").agg(cluster_mean_quality=pl.col("quality").mean()))
    frame = frame.join(means, on="cluster_id", how="left")
    mark(pl.col("quality") < options.min_quality, "low_quality")
    mark(pl.col("cluster_mean_quality") < options.min_cluster_mean, "cluster_below_threshold")
    # checked after the cheap rules: MinHash costs ~1 ms a prompt, only candidates need it
    index = Contamination(earlier, options.near_duplicate_threshold, options.num_perm)
    verdicts = [index.check(t) if r is None else None
                for t, r in frame.select("prompt", "reason").iter_rows()]
    frame = frame.with_columns(_contam=pl.Series(verdicts, dtype=pl.String))
    mark(pl.col("_contam") == "exact", "exact_duplicate_of_earlier_bench")
    mark(pl.col("_contam") == "near", "near_duplicate_of_earlier_bench")
    if relabel is not None:
        frame = _second_pass(frame, relabel, options)
    # seeded draw: per cluster a random order, clusters best mean first (random tie-break)
    frame = frame.with_columns(
        _pkey=pl.Series(_seeded_key(frame["prompt_id"], options.seed, "prompt")),
        _ckey=pl.Series(_seeded_key(frame["cluster_id"].cast(pl.String), options.seed, "cluster")),
    )
    live = frame.filter(alive).with_columns(
        _rank=pl.col("_pkey").rank("ordinal").over("cluster_id"))
    capped = live.filter(pl.col("_rank") > options.per_cluster)["prompt_id"]
    mark(pl.col("prompt_id").is_in(capped.to_list()), "over_cluster_cap")
    ordered = (frame.filter(alive)
               .sort(["cluster_mean_quality", "_ckey", "_pkey"], descending=[True, False, False]))
    overflow = ordered["prompt_id"][size:]
    mark(pl.col("prompt_id").is_in(overflow.to_list()), "over_bench_size")
    chosen = frame.filter(alive)
    version = bench_version(month, kind, chosen["prompt_id"].to_list(), options)
    prompts = (chosen.sort(["cluster_mean_quality", "_ckey", "_pkey"],
                           descending=[True, False, False])
               .with_columns(bench_version=pl.lit(version), bench_kind=pl.lit(kind))
               .select([pl.col(c).cast(t) for c, t in BENCH_PROMPTS.items()]))
    dropped = {r: int((frame["reason"] == r).sum()) for r in DROP_REASONS}
    assert n_in == prompts.height + sum(dropped.values())  # every row accounted for
    stats = {
        "bench_version": version, "kind": kind, "month": month, "prompts_in": n_in,
        "prompts": prompts.height, "dropped": dropped,
        "clusters_used": prompts["cluster_id"].n_unique(),
        "clusters_eligible": int(means.filter(
            pl.col("cluster_mean_quality") >= options.min_cluster_mean).height),
        "quality_histogram": _counts(frame.filter(pl.col("quality").is_not_null()), "quality"),
        "bench_quality_histogram": _counts(prompts, "quality"),
        "category_mix": _counts(prompts, "category"),
        "language_mix": _counts(prompts, "language"),
        "options": asdict(options),
    }
    return Bench(prompts, stats, version)


def _counts(frame: pl.DataFrame, col: str) -> dict:
    if frame.height == 0:
        return {}
    return {str(k): int(v) for k, v in frame.group_by(col).len().sort(col).iter_rows()}


def _second_pass(frame: pl.DataFrame, relabel: Relabel, options: BenchOptions) -> pl.DataFrame:
    """The strong labeler re-labels the survivors; its criteria replace the cheap ones."""
    survivors = frame.filter(pl.col("reason").is_null())
    if survivors.height == 0:
        return frame
    strong = relabel(survivors.select("prompt_id", "prompt", "language", "category", *CRITERIA))
    missing = [c for c in ("prompt_id", *CRITERIA) if c not in strong.columns]
    if missing:
        raise ValueError(f"relabel function returned no {missing}")
    strong = strong.select("prompt_id", *[pl.col(c).cast(pl.Boolean).alias(f"_s_{c}")
                                          for c in CRITERIA])
    out = frame.join(strong, on="prompt_id", how="left")
    # every survivor takes the strong labels, null where that call failed, was unparsed or
    # returned no row: such a prompt is dropped below, never kept on the cheap labels
    took = pl.col("reason").is_null()
    out = out.with_columns(
        [pl.when(took).then(pl.col(f"_s_{c}")).otherwise(pl.col(c)).alias(c) for c in CRITERIA]
    ).drop([f"_s_{c}" for c in CRITERIA])
    out = out.with_columns(_quality())
    failed = (pl.col("reason").is_null()
              & (pl.any_horizontal(pl.col(c).is_null() for c in CRITERIA)
                 | (pl.col("quality") < options.min_quality)))
    return out.with_columns(
        reason=pl.when(failed).then(pl.lit("below_quality_after_relabel"))
        .otherwise(pl.col("reason")))


def build_benches(
    labelled: pl.DataFrame,
    options: BenchOptions = BenchOptions(),
    *,
    month: str,
    earlier: Iterable[str] = (),
    relabel: Relabel | None = None,
) -> dict[str, Bench]:
    """The text bench and, when there are image prompts, the vision bench."""
    frame = check_labelled(labelled)
    earlier = list(earlier)
    out = {"text": build_bench(frame.filter(~pl.col("has_image")), options, month=month,
                               kind="text", earlier=earlier, relabel=relabel)}
    images = frame.filter(pl.col("has_image"))
    if images.height and options.vision_size:
        out["vision"] = build_bench(images, options, month=month, kind="vision",
                                    earlier=earlier, relabel=relabel)
    return out
