"""Synthetic battles from a known Bradley-Terry model (tests, benchmarks)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl
from scipy.special import expit

from arena_assets.ranking.options import STYLE_FEATURES
from arena_assets.ranking.style import style_differences


def _named_ratings(
    ratings: Mapping[str, float] | Sequence[float] | np.ndarray,
) -> tuple[list[str], np.ndarray]:
    if isinstance(ratings, Mapping):
        return list(ratings), np.asarray(list(ratings.values()), dtype=np.float64)
    values = np.asarray(ratings, dtype=np.float64)
    width = len(str(len(values) - 1))
    return [f"model-{i:0{width}d}" for i in range(len(values))], values


def sample_bt_battles(
    ratings: Mapping[str, float] | Sequence[float] | np.ndarray,
    n: int,
    seed: int,
    *,
    scale: float = 400.0,
    base: float = 10.0,
    tie_rate: float = 0.0,
    style_coef: Mapping[str, float] | None = None,
    model_style: Mapping[str, Mapping[str, float]] | None = None,
    popularity: Sequence[float] | np.ndarray | None = None,
) -> pl.DataFrame:
    """``n`` battles between uniformly drawn distinct pairs (or drawn by ``popularity``,
    one weight per model, as arena traffic is), outcomes from BT.

    ``tie_rate`` turns that share of battles (chosen independently of the models) into
    ties. With ``style_coef`` (feature -> logit coefficient per standard deviation of the
    normalized difference) the battles carry ``{feature}_a/_b`` columns drawn around each
    model's mean in ``model_style`` (Poisson; default mean 100 tokens / 3 markdown
    elements) and the planted style term is added to the logit.
    """
    names, values = _named_ratings(ratings)
    k = len(names)
    rng = np.random.default_rng(seed)
    if popularity is None:
        a = rng.integers(0, k, n)
        b = (a + rng.integers(1, k, n)) % k  # uniform over the other k-1 models
    else:  # both sides drawn by popularity, redrawing b until it differs from a
        weights = np.asarray(popularity, dtype=np.float64)
        weights = weights / weights.sum()
        a = rng.choice(k, n, p=weights)
        b = rng.choice(k, n, p=weights)
        while (same := np.flatnonzero(a == b)).size:
            b[same] = rng.choice(k, same.size, p=weights)
    logit = (values[a] - values[b]) * math.log(base) / scale
    columns: dict[str, np.ndarray] = {}
    if style_coef:
        model_style = model_style or {}
        x_raw = []
        for feat in STYLE_FEATURES:
            default = 100.0 if feat == "sum_assistant_tokens" else 3.0
            means = np.array([model_style.get(m, {}).get(feat, default) for m in names])
            columns[f"{feat}_a"] = rng.poisson(means[a])
            columns[f"{feat}_b"] = rng.poisson(means[b])
            x_raw.append(style_differences(columns[f"{feat}_a"], columns[f"{feat}_b"]))
        x = np.column_stack(x_raw)
        sd = x.std(axis=0)
        x = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        coef = np.array([style_coef.get(f, 0.0) for f in STYLE_FEATURES])
        logit = logit + x @ coef
    a_wins = rng.random(n) < expit(logit)
    tie = rng.random(n) < tie_rate
    winner = np.where(tie, "tie", np.where(a_wins, "model_a", "model_b"))
    names_arr = np.array(names, dtype=object)
    return pl.DataFrame(
        {"model_a": names_arr[a], "model_b": names_arr[b], "winner": winner, **columns}
    )


def true_ratings(
    ratings: Mapping[str, float] | Sequence[float] | np.ndarray, init_rating: float = 1000.0
) -> dict[str, float]:
    """The planted ratings shifted to mean ``init_rating`` (what a mean-normalized fit estimates)."""
    names, values = _named_ratings(ratings)
    return dict(zip(names, (values - values.mean() + init_rating).tolist()))


# what a real arena month's pair graph looks like (from one month of LMArena-like traffic
# with 100 models): 4,801 of the 4,950 pairs met, 737 of them fewer than 5 times
ARENA_SHAPE = {"absent_share": 149 / 4950, "thin_share": 737 / 4950, "popularity_ratio": 28.0}
SHAPES = ("uniform", "arena", "rare")


def sample_shaped_battles(
    n: int,
    k: int,
    seed: int,
    shape: str = "arena",
    *,
    tie_rate: float = 0.2,
    rare_models: int = 5,
) -> pl.DataFrame:
    """``n`` Bradley-Terry battles among ``k`` models whose pair graph has ``shape``.

    ``uniform``: every pair equally likely (a plain random benchmark). ``arena``: a real month's
    graph — popularity log-uniform over a 28x range (battles per model ~900-25,000 at
    ~360k battles; the range scales with ``n``), 3 % of pairs never met (models released
    or retired during the month) and 15 % met only 1-4 times (pairs of rarely shown
    models), the rest drawn by the product of the two popularities. ``rare``: ``arena``
    plus ``rare_models`` models of 15-45 battles each, rated 350 above or below the mean. Ties (``tie_rate``) are half
    ``tie`` and half ``tie (bothbad)``. Ratings ~ N(1000, 120), names ``model-NNN``.
    """
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    rng = np.random.default_rng((seed, 17))
    ratings = rng.normal(1000.0, 120.0, k)
    left, right = np.triu_indices(k, 1)
    pairs = len(left)
    if shape == "uniform":
        counts = rng.multinomial(n, np.full(pairs, 1.0 / pairs))
    else:
        pop = np.exp(rng.uniform(-math.log(ARENA_SHAPE["popularity_ratio"]), 0.0, k))
        weight = pop[left] * pop[right]
        # the rarest pairs are the ones between rarely shown models
        order = rng.choice(pairs, pairs, replace=False, p=(1 / weight) / (1 / weight).sum())
        absent = order[: round(ARENA_SHAPE["absent_share"] * pairs)]
        thin = order[len(absent) : len(absent) + round(ARENA_SHAPE["thin_share"] * pairs)]
        counts = np.zeros(pairs, dtype=np.int64)
        counts[thin] = rng.integers(1, 5, len(thin))
        common = np.ones(pairs, dtype=bool)
        common[absent] = common[thin] = False
        counts[common] = rng.multinomial(n - counts.sum(), weight[common] / weight[common].sum())
        if shape == "rare":  # a few models shown almost never (15-45 battles), far from the
            # pack (a broken or a very strong new model), so some resamples cannot rate them
            rare = rng.choice(k, rare_models, replace=False)
            ratings[rare] = 1000.0 + np.where(np.arange(rare_models) % 2, 350.0, -350.0)
            for m in rare:
                mine = np.flatnonzero((left == m) | (right == m))
                counts[mine] = 0
                counts[rng.choice(mine, rng.integers(15, 46), replace=True)] += 1
    a = np.repeat(left, counts)
    b = np.repeat(right, counts)
    swap = rng.random(len(a)) < 0.5  # which side each model sat on
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    a_wins = rng.random(len(a)) < expit((ratings[a] - ratings[b]) * math.log(10) / 400)
    u = rng.random(len(a))
    winner = np.where(
        u < tie_rate / 2,
        "tie",
        np.where(u < tie_rate, "tie (bothbad)", np.where(a_wins, "model_a", "model_b")),
    )
    names = np.array([f"model-{i:03d}" for i in range(k)], dtype=object)
    order = rng.permutation(len(a))
    return pl.DataFrame(
        {"model_a": names[a][order], "model_b": names[b][order], "winner": winner[order]}
    )


def graph_shape(battles: pl.DataFrame) -> dict:
    """The figures that describe a battle graph's shape: battles per model (min, max),
    pairs met, pairs met fewer than 5 times, tie shares."""
    pair = (
        battles.select(
            lo=pl.min_horizontal("model_a", "model_b"), hi=pl.max_horizontal("model_a", "model_b")
        )
        .group_by("lo", "hi")
        .len()
    )
    per_model = pl.concat([battles["model_a"], battles["model_b"]]).value_counts()["count"]
    k = per_model.len()
    return {
        "models": k,
        "pairs_possible": k * (k - 1) // 2,
        "pairs_met": pair.height,
        "pairs_under_5": int((pair["len"] < 5).sum()),
        "battles_per_model": (int(per_model.min()), int(per_model.max())),
        "tie_share": float((battles["winner"] == "tie").mean()),
        "bothbad_share": float((battles["winner"] == "tie (bothbad)").mean()),
    }


# a month shaped like real traffic for the boards and the site (tests, benchmarks): the
# language mix, removal reasons and category label rates of an arena month, roughly
SYNTHETIC_LANGUAGES = (
    ("en", 0.55),
    ("zh", 0.12),
    ("ru", 0.08),
    ("es", 0.07),
    ("de", 0.06),
    ("fr", 0.06),
    ("ja", 0.06),
)
SYNTHETIC_LABEL_RATES = {"code": 0.18, "math": 0.08, "creative_writing": 0.10, "is_vision": 0.08}
HARD_RATE = 0.25  # prompts meeting at least 6 of the 7 hard-prompt criteria
VISION_LABEL_NAMES = (
    "captioning",
    "ocr",
    "entity_recognition",
    "humor",
    "homework",
    "diagram",
    "creative_writing",
)
VOTES_PER_VOTER = 20  # mean votes per voter hash


def synthetic_month(battles: int, models: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(battles, topic_labels) of one month, in the columns the pipeline's steps read:
    ``battles`` BT battles among ``models`` models (popularity skewed, 15 % ties, style
    features), 10 % removed with a reason, languages, conversation ids, turns, battle ids
    and voter hashes as ``battles`` rows carry them (the rating alarm reads the last two),
    and a ``topic_labels`` row for both conversations of every battle: the flat labels at
    real-traffic rates (the 7 hard-prompt criteria included), ``category_tag`` built from
    them as the labeller stores it, ``code``, ``is_vision`` and ``user_tokens``.

    ``test_synthetic_month_runs_through_the_boards_and_the_site`` (test_site_inputs.py) runs
    it through the boards' month steps, so a change of what those steps read fails there."""
    from arena_assets.labels.tags import CRITERIA, HARD_MIN_CRITERIA, tag_from_flat

    rng = np.random.default_rng(seed)
    frame = sample_bt_battles(
        rng.normal(1000, 120, models),
        battles,
        seed,
        tie_rate=0.15,
        style_coef={"sum_assistant_tokens": 0.3, "header_count": 0.05},
        popularity=np.exp(rng.normal(0, 0.6, models)),
    )
    codes, shares = zip(*SYNTHETIC_LANGUAGES)
    reasons = [None, "identity_leak", "anomalous_voter", "daily_cap", "top_prompt_dedup"]
    removed = rng.choice(len(reasons), battles, p=[0.9, 0.02, 0.03, 0.03, 0.02])
    conv = np.arange(battles).astype(str)
    # the columns below draw from their own stream, so the ones above do not depend on them
    extra = np.random.default_rng((seed, 18))
    voters = max(1, battles // VOTES_PER_VOTER)
    frame = frame.with_columns(
        keep=pl.Series(removed == 0),
        removed_reason=pl.Series([reasons[r] for r in removed.tolist()], dtype=pl.String),
        language=pl.Series(np.array(codes)[rng.choice(len(codes), battles, p=shares)]),
        conv_id_a=pl.Series(np.char.add("c", np.char.add(conv, "a"))),
        conv_id_b=pl.Series(np.char.add("c", np.char.add(conv, "b"))),
        turn=pl.Series(1 + (rng.random(battles) < 0.15).astype(np.int64)),
        battle_id=pl.Series(np.char.add(f"s{seed}-", conv)),
        voter_hash=pl.Series(np.char.add("v", extra.integers(0, voters, battles).astype(str))),
    )
    labels = {
        "if_score": rng.integers(0, 6, battles).astype(np.int32),
        "prompt_chars": np.where(rng.random(battles) < 0.08, 3000, 300).astype(np.int32),
    }
    for name, rate in SYNTHETIC_LABEL_RATES.items():
        labels[name] = rng.random(battles) < rate
    for name in VISION_LABEL_NAMES:  # null for a text prompt, as the labeller leaves them
        labels[f"vision_{name}"] = pl.Series(rng.random(battles) < 0.3).set(
            pl.Series(~labels["is_vision"]), None
        )
    # a hard prompt meets every criterion; another meets each at 30 %, fewer than 6 in all
    hard = extra.random(battles) < HARD_RATE
    met = extra.random((battles, len(CRITERIA))) < 0.3
    met[~hard, HARD_MIN_CRITERIA - 1 :] = False
    met[hard] = True
    for i, name in enumerate(CRITERIA):
        labels[name] = met[:, i]
    # both sides share the prompt's labels; each answer has its own refusal
    side = pl.DataFrame(labels)
    rows = pl.concat(
        [
            side.with_columns(
                conv_id=frame["conv_id_a"], refusal=pl.Series(rng.random(battles) < 0.03)
            ),
            side.with_columns(
                conv_id=frame["conv_id_b"], refusal=pl.Series(rng.random(battles) < 0.03)
            ),
        ]
    )
    return frame, rows.with_columns(
        category_tag=tag_from_flat(),
        hard=pl.Series(np.tile(hard, 2)),
        user_tokens=(pl.col("prompt_chars") // 4).cast(pl.Int32),
    )
