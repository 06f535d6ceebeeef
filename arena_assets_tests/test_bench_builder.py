"""BenchBuilder selection, decontamination, vision split, two-pass relabelling."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from arena_assets.bench.builder import BenchOptions, build_bench, build_benches
from arena_assets.bench.decontam import Contamination, normalise_text, text_hash
from arena_assets.bench.schema import BENCH_PROMPTS, CRITERIA


def _prompts(n: int = 1200, clusters: int = 60, seed: int = 0) -> pl.DataFrame:
    """Cluster c's prompts meet each criterion with probability 0.25 + 0.7·c/clusters."""
    rng = np.random.default_rng(seed)
    vocab = [f"{a}{b}" for a in ("lor", "ips", "dol", "sit", "ame", "con", "sec", "adi", "eli",
                                 "sed", "tem", "inc", "lab", "mag", "ali")
             for b in ("um", "or", "it", "ex", "ta", "no", "ra", "ve", "si", "qu")]
    rows = []
    for i in range(n):
        c = i % clusters
        p = 0.25 + 0.7 * c / clusters
        rows.append({
            "prompt_id": f"p{i:05d}", "prompt": f"Task {i} on topic {c}: " + " ".join(rng.choice(vocab, 24)),
            "language": "en" if i % 3 else "de", "category": ("code", "math", "writing")[c % 3],
            "cluster_id": c, "has_image": i % 8 == 0,
            **{k: bool(rng.random() < p) for k in CRITERIA},
        })
    return pl.DataFrame(rows)


def test_selection_rules_and_accounting() -> None:
    frame = _prompts().filter(~pl.col("has_image"))
    opts = BenchOptions(size=40, min_cluster_mean=4.0)
    bench = build_bench(frame, opts, month="2026-03")
    p, s = bench.prompts, bench.stats
    assert p.height == 40 and dict(p.schema) == BENCH_PROMPTS
    assert p["quality"].min() >= 6 and p["cluster_mean_quality"].min() >= 4.0
    assert p.group_by("cluster_id").len()["len"].max() <= 2
    assert s["prompts_in"] == p.height + sum(s["dropped"].values()) == frame.height
    assert s["dropped"]["low_quality"] > 0 and s["dropped"]["over_bench_size"] > 0
    assert sum(s["bench_quality_histogram"].values()) == 40
    assert sum(s["language_mix"].values()) == sum(s["category_mix"].values()) == 40
    # quality recomputed independently from the criteria
    q = p.select(pl.sum_horizontal(pl.col(c).cast(pl.Int64) for c in CRITERIA))
    assert q.to_series().to_list() == p["quality"].to_list()
    # the best clusters come first
    assert p["cluster_mean_quality"].to_list() == sorted(p["cluster_mean_quality"], reverse=True)


def test_seeded_and_versioned() -> None:
    frame = _prompts().filter(~pl.col("has_image"))
    a = build_bench(frame, BenchOptions(size=30, seed=1), month="2026-03")
    b = build_bench(frame.sample(fraction=1.0, shuffle=True, seed=9), BenchOptions(size=30, seed=1),
                    month="2026-03")
    c = build_bench(frame, BenchOptions(size=30, seed=2), month="2026-03")
    assert a.prompts.equals(b.prompts) and a.version == b.version
    assert a.version.startswith("2026-03.text.")
    assert set(a.prompts["prompt_id"]) != set(c.prompts["prompt_id"]) and a.version != c.version


def test_decontamination_exact_and_near() -> None:
    frame = _prompts().filter(~pl.col("has_image"))
    first = build_bench(frame, BenchOptions(size=30), month="2026-03")
    earlier = first.prompts["prompt"].to_list()
    # next month re-uses the same prompts: one retyped exactly, one lightly edited
    retyped = "  " + earlier[0].upper() + " !! "
    edited = earlier[1] + " Thanks!"
    second_frame = frame.with_columns(
        prompt=pl.when(pl.col("prompt") == earlier[0]).then(pl.lit(retyped))
        .when(pl.col("prompt") == earlier[1]).then(pl.lit(edited)).otherwise(pl.col("prompt")))
    second = build_bench(second_frame, BenchOptions(size=30), month="2026-04", earlier=earlier)
    assert not set(second.prompts["text_hash"]) & set(first.prompts["text_hash"])
    dropped = second.stats["dropped"]
    assert dropped["exact_duplicate_of_earlier_bench"] == 29
    assert dropped["near_duplicate_of_earlier_bench"] == 1
    assert second.prompts.height == 30  # replaced from other clusters


def test_contamination_index_hand_cases() -> None:
    idx = Contamination(["Write a haiku about the sea in winter, please."], threshold=0.7)
    assert idx.check("write a HAIKU about the sea in winter please") == "exact"
    assert idx.check("Write a haiku about the sea in winter, please!!! Thanks.") == "near"
    assert idx.check("Explain quicksort in Rust with generics") is None
    assert normalise_text("Ｈｅｌｌｏ,  World!") == "hello world"
    assert text_hash("Hello, world") == text_hash("hello world")
    with pytest.raises(ValueError):
        Contamination([], threshold=0)


def test_vision_bench_and_within_month_duplicates() -> None:
    frame = _prompts()
    dup = frame.filter(pl.col("prompt_id") == "p00001").with_columns(prompt_id=pl.lit("dup"))
    benches = build_benches(pl.concat([frame, dup]), BenchOptions(size=20, vision_size=10,
                                                                   min_cluster_mean=0),
                            month="2026-03")
    assert set(benches) == {"text", "vision"}
    vision = benches["vision"].prompts
    assert vision.height <= 10 and (vision["bench_kind"] == "vision").all()
    assert set(vision["prompt_id"]) <= set(frame.filter("has_image")["prompt_id"])
    assert benches["text"].stats["dropped"]["duplicate_within_month"] == 1


def test_two_pass_relabel_hook() -> None:
    frame = _prompts().filter(~pl.col("has_image"))
    seen = []

    def strong(survivors: pl.DataFrame) -> pl.DataFrame:
        seen.append(survivors.height)
        # the strong labeler rejects every prompt of an even cluster
        odd = survivors.join(frame.select("prompt_id", "cluster_id"), on="prompt_id")
        return odd.with_columns(
            [pl.when(pl.col("cluster_id") % 2 == 0).then(False).otherwise(pl.col(c)).alias(c)
             for c in CRITERIA])

    bench = build_bench(frame, BenchOptions(size=30), month="2026-03", relabel=strong)
    assert seen and seen[0] > 30
    assert (bench.prompts["cluster_id"] % 2 == 1).all()
    assert bench.stats["dropped"]["below_quality_after_relabel"] > 0


def test_two_pass_drops_survivors_the_strong_labeler_could_not_label() -> None:
    """A strong pass that fails (null criteria) or skips a prompt never leaves the cheap
    labels standing: the prompt is dropped as below_quality_after_relabel."""
    frame = _prompts().filter(~pl.col("has_image"))

    def down(survivors: pl.DataFrame) -> pl.DataFrame:  # every call failed but the first
        first = survivors.head(1)
        failed = survivors.slice(1).select("prompt_id", *[pl.lit(None, pl.Boolean).alias(c)
                                                          for c in CRITERIA])
        return pl.concat([first.select("prompt_id", *CRITERIA), failed.head(failed.height // 2)])

    bench = build_bench(frame, BenchOptions(size=30), month="2026-03", relabel=down)
    assert bench.prompts.height <= 1
    assert bench.stats["dropped"]["below_quality_after_relabel"] > 0


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="lack columns"):
        build_bench(pl.DataFrame({"prompt_id": ["a"]}), month="2026-01")
    frame = _prompts(10).filter(~pl.col("has_image"))
    with pytest.raises(ValueError, match="unique"):
        build_bench(pl.concat([frame, frame]), month="2026-01")
    nulls = frame.with_columns(specificity=pl.lit(None, dtype=pl.Boolean))
    assert build_bench(nulls, month="2026-01").stats["dropped"]["unlabelled"] == frame.height
