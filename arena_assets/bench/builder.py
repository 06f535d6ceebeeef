"""BenchBuilder: a month's labelled prompts -> a small bench of hard, diverse prompts.

The recipe of Arena-Hard-Auto (Li et al. 2024; BenchBuilder's README and ``filter.py``): a
prompt's quality is the number of the seven criteria it meets; a topic cluster's score is
the mean quality of its prompts. Pass 1, on the month's (cheap) labels: keep prompts of
quality >= ``min_quality`` (5) from clusters whose mean reaches ``min_cluster_mean`` (3).
Pass 2, when a strong labeler is given (``relabel``): it re-labels the survivors, and
those of quality >= ``strong_min_quality`` (6) in clusters whose mean over the survivors'
new labels reaches ``strong_min_cluster_mean`` (6) stay. Then at most ``per_cluster`` (2)
per cluster (a seeded draw), best clusters first, up to ``size`` prompts; when fewer
qualify, ``stats["shortfall"]`` says why. Image prompts make a separate vision bench.
Before drawing, prompts that repeat an earlier bench (exact or near duplicate) are
removed, so a month's bench never re-uses a prompt an earlier month published.

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

# relabel hook of the two-pass mode: gets the survivors (prompt_id, prompt, label_text when
# the input has it, language, category, criteria...) and returns prompt_id plus the strong
# labeler's criteria
Relabel = Callable[[pl.DataFrame], pl.DataFrame]


@dataclass(frozen=True)
class BenchOptions:
    size: int = 500
    vision_size: int = 500
    min_quality: int = 5
    min_cluster_mean: float = 3.0
    strong_min_quality: int = 6
    strong_min_cluster_mean: float = 6.0
    per_cluster: int = 2
    seed: int = 0
    near_duplicate_threshold: float = 0.8
    num_perm: int = 128

    def __post_init__(self) -> None:
        if self.size < 1 or self.vision_size < 0 or self.per_cluster < 1:
            raise ValueError("size and per_cluster must be >= 1, vision_size >= 0")
        for name in ("min_quality", "strong_min_quality"):
            if not 0 <= getattr(self, name) <= len(CRITERIA):
                raise ValueError(f"{name} must be in 0..{len(CRITERIA)}")

    def describe(self, two_passes: bool) -> str:
        """The selection rule in words (the asset's metadata)."""
        rule = (
            f"pass 1: quality >= {self.min_quality} of {len(CRITERIA)} criteria in clusters of mean "
            f">= {self.min_cluster_mean:g}"
        )
        if two_passes:
            rule += (
                f"; pass 2 (strong labeler): quality >= {self.strong_min_quality} in clusters "
                f"re-scored >= {self.strong_min_cluster_mean:g}"
            )
        return rule + f"; then {self.per_cluster} per cluster, up to {self.size} prompts"


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
            reason=pl.when(pl.col("reason").is_null() & cond)
            .then(pl.lit(reason))
            .otherwise(pl.col("reason"))
        )

    alive = pl.col("reason").is_null()
    mark(pl.any_horizontal(pl.col(c).is_null() for c in CRITERIA), "unlabelled")
    frame = frame.with_columns(
        _quality(), text_hash=pl.col("prompt").map_elements(text_hash, return_dtype=pl.String)
    )
    mark(
        pl.col("text_hash").is_duplicated() & (pl.int_range(pl.len()).over("text_hash") > 0),
        "duplicate_within_month",
    )
    # cluster scores from every labelled prompt of the cluster (as BenchBuilder does)
    means = (
        frame.filter(pl.col("reason").is_null() | (pl.col("reason") != "unlabelled"))
        .filter(pl.col("quality").is_not_null())
        .group_by("cluster_id")
        .agg(cluster_mean_quality=pl.col("quality").mean())
    )
    frame = frame.join(means, on="cluster_id", how="left")
    mark(pl.col("quality") < options.min_quality, "low_quality")
    mark(pl.col("cluster_mean_quality") < options.min_cluster_mean, "cluster_below_threshold")
    # checked after the cheap rules: MinHash costs ~1 ms a prompt, only candidates need it
    index = Contamination(earlier, options.near_duplicate_threshold, options.num_perm)
    verdicts = [
        index.check(t) if r is None else None
        for t, r in frame.select("prompt", "reason").iter_rows()
    ]
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
        _rank=pl.col("_pkey").rank("ordinal").over("cluster_id")
    )
    capped = live.filter(pl.col("_rank") > options.per_cluster)["prompt_id"]
    mark(pl.col("prompt_id").is_in(capped.to_list()), "over_cluster_cap")
    ordered = frame.filter(alive).sort(
        ["cluster_mean_quality", "_ckey", "_pkey"], descending=[True, False, False]
    )
    overflow = ordered["prompt_id"][size:]
    mark(pl.col("prompt_id").is_in(overflow.to_list()), "over_bench_size")
    chosen = frame.filter(alive)
    version = bench_version(month, kind, chosen["prompt_id"].to_list(), options)
    prompts = (
        chosen.sort(["cluster_mean_quality", "_ckey", "_pkey"], descending=[True, False, False])
        .with_columns(bench_version=pl.lit(version), bench_kind=pl.lit(kind))
        .select([pl.col(c).cast(t) for c, t in BENCH_PROMPTS.items()])
    )
    dropped = {r: int((frame["reason"] == r).sum()) for r in DROP_REASONS}
    assert n_in == prompts.height + sum(dropped.values())  # every row accounted for
    stats = {
        "bench_version": version,
        "kind": kind,
        "month": month,
        "prompts_in": n_in,
        "prompts": prompts.height,
        "dropped": dropped,
        "clusters_used": prompts["cluster_id"].n_unique(),
        "clusters_total": int(frame["cluster_id"].n_unique()),
        "clusters_eligible": int(
            means.filter(pl.col("cluster_mean_quality") >= options.min_cluster_mean).height
        ),
        "quality_histogram": _counts(frame.filter(pl.col("quality").is_not_null()), "quality"),
        "bench_quality_histogram": _counts(prompts, "quality"),
        "category_mix": _counts(prompts, "category"),
        "language_mix": _counts(prompts, "language"),
        "options": asdict(options),
        "two_passes": relabel is not None,
    }
    stats["shortfall"] = shortfall(stats, options, size, relabel is not None)
    return Bench(prompts, stats, version)


def _counts(frame: pl.DataFrame, col: str) -> dict:
    if frame.height == 0:
        return {}
    return {str(k): int(v) for k, v in frame.group_by(col).len().sort(col).iter_rows()}


def _second_pass(frame: pl.DataFrame, relabel: Relabel, options: BenchOptions) -> pl.DataFrame:
    """The strong labeler re-labels the survivors; its criteria replace the cheap ones. A
    survivor stays when its new quality reaches ``strong_min_quality`` and the mean new
    quality of its cluster's survivors reaches ``strong_min_cluster_mean``."""
    survivors = frame.filter(pl.col("reason").is_null())
    if survivors.height == 0:
        return frame
    text = ["label_text"] if "label_text" in survivors.columns else []  # what the cheap labels read
    strong = relabel(
        survivors.select("prompt_id", "prompt", *text, "language", "category", *CRITERIA)
    )
    missing = [c for c in ("prompt_id", *CRITERIA) if c not in strong.columns]
    if missing:
        raise ValueError(f"relabel function returned no {missing}")
    strong = strong.select(
        "prompt_id", *[pl.col(c).cast(pl.Boolean).alias(f"_s_{c}") for c in CRITERIA]
    )
    out = frame.join(strong, on="prompt_id", how="left")
    # every survivor takes the strong labels, null where that call failed, was unparsed or
    # returned no row: such a prompt is dropped below, never kept on the cheap labels
    took = pl.col("reason").is_null()
    out = out.with_columns(
        [pl.when(took).then(pl.col(f"_s_{c}")).otherwise(pl.col(c)).alias(c) for c in CRITERIA]
    ).drop([f"_s_{c}" for c in CRITERIA])
    out = out.with_columns(_quality())
    failed = pl.col("reason").is_null() & (
        pl.any_horizontal(pl.col(c).is_null() for c in CRITERIA)
        | (pl.col("quality") < options.strong_min_quality)
    )
    out = out.with_columns(
        reason=pl.when(failed)
        .then(pl.lit("below_quality_after_relabel"))
        .otherwise(pl.col("reason"))
    )
    # the cluster's score again, now over its survivors' strong labels (nulls count as 0)
    rescored = (
        out.filter(took | (pl.col("reason") == "below_quality_after_relabel"))
        .filter(pl.col("prompt_id").is_in(survivors["prompt_id"].to_list()))
        .group_by("cluster_id")
        .agg(_strong_mean=pl.col("quality").fill_null(0).mean())
    )
    out = out.join(rescored, on="cluster_id", how="left").with_columns(
        cluster_mean_quality=pl.when(pl.col("_strong_mean").is_not_null())
        .then(pl.col("_strong_mean"))
        .otherwise(pl.col("cluster_mean_quality"))
    )
    low = pl.col("reason").is_null() & (pl.col("_strong_mean") < options.strong_min_cluster_mean)
    return out.with_columns(
        reason=pl.when(low)
        .then(pl.lit("cluster_below_threshold_after_relabel"))
        .otherwise(pl.col("reason"))
    ).drop("_strong_mean")


def shortfall(stats: dict, options: BenchOptions, size: int, two_passes: bool) -> str | None:
    """Why a bench holds fewer than ``size`` prompts, in words (None when it is full)."""
    if stats["prompts"] >= size:
        return None
    d = stats["dropped"]
    parts = [f"{stats['prompts']} of {size} prompts"]
    qualify = stats["prompts"] + d["over_cluster_cap"] + d["over_bench_size"]
    parts.append(
        f"{qualify} of {stats['prompts_in']} prompts passed every rule "
        f"({d['low_quality']} below quality {options.min_quality}, {d['cluster_below_threshold']} "
        f"in clusters of mean below {options.min_cluster_mean:g}"
        + (
            f", {d['below_quality_after_relabel']} below {options.strong_min_quality} and "
            f"{d['cluster_below_threshold_after_relabel']} in clusters re-scored below "
            f"{options.strong_min_cluster_mean:g} by the strong labeler"
            if two_passes
            else ""
        )
        + f", {d['unlabelled']} unlabelled, {d['duplicate_within_month']} duplicates, "
        f"{d['exact_duplicate_of_earlier_bench'] + d['near_duplicate_of_earlier_bench']} "
        "in an earlier bench)"
    )
    parts.append(
        f"they come from {stats['clusters_used']} clusters (of {stats['clusters_total']} in the "
        f"month), at most {options.per_cluster} each"
    )
    return "; ".join(parts)


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
    out = {
        "text": build_bench(
            frame.filter(~pl.col("has_image")),
            options,
            month=month,
            kind="text",
            earlier=earlier,
            relabel=relabel,
        )
    }
    images = frame.filter(pl.col("has_image"))
    if images.height and options.vision_size:
        out["vision"] = build_bench(
            images, options, month=month, kind="vision", earlier=earlier, relabel=relabel
        )
    return out
