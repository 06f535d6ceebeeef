"""Scores from judgments: single-answer means, win rates against the baseline, judge
ensembles, Bradley-Terry on the judge's battles, and the judge-bias report.

Single answer (FastChat MT-Bench ``show_result``): rows with score -1 are dropped and the
model's score is the mean over every remaining row, both turns pooled (per-turn means
are reported beside it).

Pairwise (Arena-Hard-Auto ``show_result``): each game gives the candidate 1 / 0.5 / 0,
repeated ``weight`` times for a strong verdict; the win rate is the mean of those
weighted scores; its interval comes from resampling each model's games with replacement
(seeded), percentile bounds at the stated level.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from arena_assets.judging.verdicts import candidate_score, is_strong
from arena_assets.ranking import STYLE_FEATURES, fit_bt, fit_style_controlled

DEFAULT_WEIGHT = 3


def single_summary(grades: pl.DataFrame) -> pl.DataFrame:
    """Per model: ``score`` (turns pooled), ``score_turn_<k>``, valid and invalid counts."""
    valid = grades.filter(pl.col("score") != -1)
    pooled = valid.group_by("model").agg(
        score=pl.col("score").mean(), n_valid=pl.len().cast(pl.Int64))
    invalid = grades.group_by("model").agg(n_invalid=(pl.col("score") == -1).sum().cast(pl.Int64))
    per_turn = valid.group_by("model", "turn").agg(pl.col("score").mean()).pivot(
        on="turn", index="model", values="score", sort_columns=True)
    per_turn = per_turn.rename({c: f"score_turn_{c}" for c in per_turn.columns if c != "model"})
    return (
        invalid.join(pooled, on="model", how="left").join(per_turn, on="model", how="left")
        .select("model", "score", pl.exclude("model", "score")).sort("score", descending=True)
    )


def scored_games(judgments: pl.DataFrame, weight: int = DEFAULT_WEIGHT) -> pl.DataFrame:
    """The judgment frame plus ``score`` (candidate side, null when unparsed) and
    ``copies`` (``weight`` for a strong verdict, 1 otherwise, 0 unparsed)."""
    if weight < 1:
        raise ValueError("weight must be >= 1")
    scores, copies = [], []
    for verdict, model, model_a in judgments.select("verdict", "model", "model_a").iter_rows():
        s = candidate_score(verdict, candidate_is_a=(model_a == model))
        scores.append(s)
        copies.append(0 if s is None else (weight if is_strong(verdict) else 1))
    return judgments.with_columns(
        score=pl.Series(scores, dtype=pl.Float64), copies=pl.Series(copies, dtype=pl.Int64))


def _win_rate(scores: np.ndarray, copies: np.ndarray) -> float:
    total = copies.sum()
    return float((scores * copies).sum() / total) if total else float("nan")


def pairwise_summary(
    judgments: pl.DataFrame,
    *,
    weight: int = DEFAULT_WEIGHT,
    rounds: int = 100,
    level: float = 0.95,
    seed: int = 0,
    include_baseline: bool = False,
    keep_bootstrap: bool = False,
) -> pl.DataFrame:
    """Per candidate: win rate against the baseline with a bootstrap interval, game
    counts (won / tied / lost / unparsed). ``include_baseline`` adds the baseline at 0.5
    with a zero-width interval (as Arena-Hard-Auto lists it); ``keep_bootstrap`` keeps the
    replicates in ``results`` (the layout of the published bootstrap files)."""
    games = scored_games(judgments, weight)
    rng = np.random.default_rng(seed)
    q = ((1 - level) / 2, (1 + level) / 2)
    rows = []
    for (model,), part in games.sort("question_id", "game").group_by("model", maintain_order=True):
        ok = part.filter(pl.col("score").is_not_null())
        s, c = ok["score"].to_numpy(), ok["copies"].to_numpy()
        point = _win_rate(s, c)
        lower = upper = float("nan")
        boot = np.array([])
        if rounds > 0 and len(s):
            idx = rng.integers(0, len(s), size=(rounds, len(s)))
            boot = (s[idx] * c[idx]).sum(axis=1) / np.maximum(c[idx].sum(axis=1), 1)
            lower, upper = (float(v) for v in np.quantile(boot, q))
        rows.append({
            "model": model, "baseline": part["baseline"][0], "win_rate": point,
            "lower": lower, "upper": upper, "level": level,
            "games": part.height, "won": int((ok["score"] == 1).sum()),
            "tied": int((ok["score"] == 0.5).sum()), "lost": int((ok["score"] == 0).sum()),
            "unparsed": part.height - ok.height,
            "results": boot.tolist(),
        })
    if include_baseline and rows:
        base = rows[0]["baseline"]
        rows.append({"model": base, "baseline": base, "win_rate": 0.5, "lower": 0.5,
                     "upper": 0.5, "level": level, "games": 0, "won": 0, "tied": 0, "lost": 0,
                     "unparsed": 0, "results": [0.5] * (rounds if rounds > 0 else 0)})
    table = pl.DataFrame(rows, schema_overrides={"results": pl.List(pl.Float64)})
    if not keep_bootstrap:
        table = table.drop("results")
    return table.sort("win_rate", descending=True)


def ensemble_summary(judgments: pl.DataFrame, **kwargs) -> pl.DataFrame:
    """Several judges: each judge's win rates, then their mean per model (``win_rate``);
    the interval is the mean of the judges' bounds (a simple, conservative combination)."""
    per_judge = [
        pairwise_summary(part, **kwargs).with_columns(judge=pl.lit(judge))
        for (judge,), part in judgments.group_by("judge", maintain_order=True)
    ]
    allj = pl.concat(per_judge)
    return (
        allj.group_by("model").agg(
            pl.col("baseline").first(), pl.col("win_rate").mean(), pl.col("lower").mean(),
            pl.col("upper").mean(), pl.col("level").first(), pl.col("games").sum(),
            pl.col("unparsed").sum(), judges=pl.col("judge").sort().str.join(","),
        ).sort("win_rate", descending=True)
    )


def judge_battles(judgments: pl.DataFrame, weight: int = DEFAULT_WEIGHT) -> pl.DataFrame:
    """Games as battles (``model_a, model_b, winner``) for the ranking library; a strong
    verdict is repeated ``weight`` times, unparsed games are left out."""
    games = scored_games(judgments, weight).filter(pl.col("copies") > 0)
    winner = (
        pl.when(pl.col("verdict") == "A=B").then(pl.lit("tie"))
        .when(pl.col("verdict").str.starts_with("A")).then(pl.lit("model_a"))
        .otherwise(pl.lit("model_b"))
    )
    return (
        games.select("question_id", "game", "model_a", "model_b", "copies", winner=winner)
        # copies >= 1 here, so no list is empty
        .with_columns(pl.int_ranges(0, pl.col("copies")).alias("_r"))
        .explode("_r", empty_as_null=False)
        .drop("_r", "copies")
    )


def bt_leaderboard(
    judgments: pl.DataFrame, *, weight: int = DEFAULT_WEIGHT, rounds: int = 100,
    level: float = 0.95, seed: int = 0, anchor: tuple[str, float] | None = None,
):
    """Bradley-Terry ratings of the judge's battles through the ranking library."""
    return fit_bt(judge_battles(judgments, weight), ci="bootstrap" if rounds else "sandwich",
                  bootstrap_rounds=rounds, level=level, seed=seed, anchor=anchor)


def styled_judge_battles(
    judgments: pl.DataFrame, features: pl.DataFrame, weight: int = DEFAULT_WEIGHT
) -> pl.DataFrame:
    """Judge battles with ``{feature}_a`` / ``{feature}_b`` style columns joined from
    ``features`` (``question_id, model`` + STYLE_FEATURES, e.g. ``answer_features``)."""
    battles = judge_battles(judgments, weight)
    feats = features.select("question_id", "model", *STYLE_FEATURES)
    for side in ("a", "b"):
        battles = battles.join(
            feats.rename({"model": f"model_{side}", **{f: f"{f}_{side}" for f in STYLE_FEATURES}}),
            on=["question_id", f"model_{side}"], how="left")
    return battles


def style_controlled_leaderboard(
    judgments: pl.DataFrame, features: pl.DataFrame, *, weight: int = DEFAULT_WEIGHT,
    rounds: int = 0, level: float = 0.95, seed: int = 0,
):
    """Bradley-Terry net of length and markdown on the judge's battles (ranking library)."""
    return fit_style_controlled(
        styled_judge_battles(judgments, features, weight),
        ci="bootstrap" if rounds else "sandwich", bootstrap_rounds=rounds, level=level, seed=seed)


def bias_report(judgments: pl.DataFrame, lengths: pl.DataFrame | None = None) -> dict:
    """Position consistency, length correlation and parse failures of a judge.

    * ``flip_rate``: share of (question, model, judge) pairs, both games parsed, whose
      outcome for the candidate differs between the two position orders;
    * ``a_win_share``: among decisive parsed games, the share won by position A (0.5 when
      the judge has no position preference);
    * ``length_correlation``: Pearson correlation of the candidate's game score with
      ``tokens(candidate) - tokens(baseline)`` when ``lengths`` (``question_id, model,
      tokens``) is given;
    * ``parse_failure_rate``: unparsed games / games.
    """
    games = scored_games(judgments, 1)
    n = games.height
    parsed = games.filter(pl.col("score").is_not_null())
    decisive = parsed.filter(pl.col("verdict") != "A=B")
    a_share = (
        float(decisive["verdict"].str.starts_with("A").mean()) if decisive.height else float("nan"))
    both = (
        parsed.group_by("question_id", "model", "judge")
        .agg(n=pl.len(), lo=pl.col("score").min(), hi=pl.col("score").max())
        .filter(pl.col("n") == 2)
    )
    flips = int((both["lo"] != both["hi"]).sum()) if both.height else 0
    report = {
        "games": n,
        "parse_failures": n - parsed.height,
        "parse_failure_rate": (n - parsed.height) / n if n else float("nan"),
        "pairs_with_both_games": both.height,
        "flips": flips,
        "flip_rate": flips / both.height if both.height else float("nan"),
        "a_win_share": a_share,
        "length_correlation": None,
    }
    if lengths is not None and parsed.height:
        tok = lengths.select("question_id", "model", "tokens")
        joined = (
            parsed.join(tok, on=["question_id", "model"], how="inner")
            .join(tok.rename({"model": "baseline", "tokens": "base_tokens"}),
                  on=["question_id", "baseline"], how="inner")
            .with_columns(diff=(pl.col("tokens") - pl.col("base_tokens")).cast(pl.Float64))
        )
        if joined.height > 2 and joined["diff"].std() and joined["score"].std():
            report["length_correlation"] = float(np.corrcoef(joined["diff"], joined["score"])[0, 1])
            report["length_pairs"] = joined.height
    return report
