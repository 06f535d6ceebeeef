"""Scores from judgments: single-answer means, win rates against the baseline, judge
ensembles, Bradley-Terry on the judge's battles, and the judge-bias report.

Single answer (FastChat MT-Bench ``show_result``): rows with score -1 are dropped and the
model's score is the mean over every remaining row, both turns pooled (per-turn means
are reported beside it).

Pairwise (Arena-Hard-Auto ``show_result``): each game gives the candidate 1 / 0.5 / 0,
repeated ``weight`` times for a strong verdict; score and interval as the protocol version
computes them (``judging.arena_hard``, the table in ``judging.protocol``).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from arena_assets.judging.arena_hard import ANCHOR_SEED, expanded_rows, win_rates
from arena_assets.judging.protocol import V01, BenchProtocol, get_protocol
from arena_assets.judging.verdicts import candidate_score, is_strong
from arena_assets.ranking import STYLE_FEATURES, fit_bt, fit_style_controlled

DEFAULT_WEIGHT = 3


def single_summary(grades: pl.DataFrame) -> pl.DataFrame:
    """Per model: ``score`` (turns pooled), ``score_turn_<k>``, valid and invalid counts."""
    valid = grades.filter(pl.col("score") != -1)
    pooled = valid.group_by("model").agg(
        score=pl.col("score").mean(), n_valid=pl.len().cast(pl.Int64)
    )
    invalid = grades.group_by("model").agg(n_invalid=(pl.col("score") == -1).sum().cast(pl.Int64))
    per_turn = (
        valid.group_by("model", "turn")
        .agg(pl.col("score").mean())
        .pivot(on="turn", index="model", values="score", sort_columns=True)
    )
    per_turn = per_turn.rename({c: f"score_turn_{c}" for c in per_turn.columns if c != "model"})
    return (
        invalid.join(pooled, on="model", how="left")
        .join(per_turn, on="model", how="left")
        .select("model", "score", pl.exclude("model", "score"))
        .sort("score", descending=True)
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
        score=pl.Series(scores, dtype=pl.Float64), copies=pl.Series(copies, dtype=pl.Int64)
    )


def pairwise_summary(
    judgments: pl.DataFrame,
    *,
    protocol: str | BenchProtocol = V01,
    weight: int | None = None,
    rounds: int | None = None,
    seed: int = ANCHOR_SEED,
    include_baseline: bool = False,
    keep_bootstrap: bool = False,
) -> pl.DataFrame:
    """Per (category, candidate): Arena-Hard-Auto's score against the baseline with its
    bootstrap interval, for ``protocol`` (``judging.arena_hard.win_rates``), and the game
    counts (won / tied / lost / unparsed, and the games the protocol's rule dropped).
    Several judges are pooled (their rows together, as the anchor's v2 loads several
    judges' folders). ``include_baseline`` adds each baseline at 0.5 with a zero-width
    interval (as the anchor lists it); ``keep_bootstrap`` keeps the replicates in
    ``results`` (the layout of the published bootstrap files)."""
    proto = get_protocol(protocol)
    rows, _ = expanded_rows(judgments, proto, weight)
    rates = win_rates(rows, proto, rounds=rounds, seed=seed)
    games = scored_games(judgments, proto.weight if weight is None else weight)
    if "category" not in games.columns:
        games = games.with_columns(category=pl.lit(None, pl.String))
    played = rows.group_by("category", "model").agg(
        _kept=pl.struct("judge", "question_id", "game").n_unique()
    )
    counts = games.group_by("category", "model", maintain_order=True).agg(
        pl.col("baseline").first(),
        games=pl.len().cast(pl.Int64),
        won=(pl.col("score") == 1).sum().cast(pl.Int64),
        tied=(pl.col("score") == 0.5).sum().cast(pl.Int64),
        lost=(pl.col("score") == 0).sum().cast(pl.Int64),
        unparsed=pl.col("score").is_null().sum().cast(pl.Int64),
        judges=pl.col("judge").unique().sort().str.join(","),
    )
    # every model with a game keeps its row: one whose games were all unparsed or dropped
    # has no rows to score (win_rate null) but its counts stay (games in = rows out)
    table = (
        counts.join(rates.drop("baseline"), on=["category", "model"], how="left", nulls_equal=True)
        .join(played, on=["category", "model"], how="left", nulls_equal=True)
        .with_columns(
            dropped_games=pl.col("games") - pl.col("_kept").fill_null(0),
            level=pl.lit(proto.level),
            protocol=pl.lit(proto.name),
        )
        .select(
            "category",
            "model",
            "baseline",
            "win_rate",
            "lower",
            "upper",
            "level",
            "results",
            "games",
            "won",
            "tied",
            "lost",
            "unparsed",
            "judges",
            "dropped_games",
            "protocol",
        )
    )
    if include_baseline and table.height:
        bases = table.select("category", "baseline").unique(maintain_order=True)
        n = rounds if rounds is not None else proto.rounds
        extra = bases.with_columns(
            model=pl.col("baseline"),
            win_rate=pl.lit(0.5),
            lower=pl.lit(0.5),
            upper=pl.lit(0.5),
            level=pl.lit(proto.level),
            results=pl.lit([0.5] * n, dtype=pl.List(pl.Float64)),
            games=pl.lit(0, pl.Int64),
            won=pl.lit(0, pl.Int64),
            tied=pl.lit(0, pl.Int64),
            lost=pl.lit(0, pl.Int64),
            unparsed=pl.lit(0, pl.Int64),
            judges=pl.lit(None, pl.String),
            dropped_games=pl.lit(0, pl.Int64),
            protocol=pl.lit(proto.name),
        )
        table = pl.concat([table, extra.select(table.columns)])
    if not keep_bootstrap:
        table = table.drop("results")
    return table.sort(["category", "win_rate"], descending=[False, True], nulls_last=True)


def judge_battles(
    judgments: pl.DataFrame, weight: int = DEFAULT_WEIGHT, protocol: str | BenchProtocol = V01
) -> pl.DataFrame:
    """Games as battles (``model_a, model_b, winner``) for the ranking library: the
    protocol's expanded rows (a strong verdict repeated ``weight`` times, unparsed games
    dropped by the protocol's rule), each with the positions of its game."""
    rows, _ = expanded_rows(judgments, protocol, weight)
    cand_a = pl.col("model_a") == pl.col("model")
    winner = (
        pl.when(pl.col("score") == 0.5)
        .then(pl.lit("tie"))
        .when((pl.col("score") == 1) == cand_a)
        .then(pl.lit("model_a"))
        .otherwise(pl.lit("model_b"))
    )
    return rows.select(
        "question_id",
        "game",
        "model_a",
        model_b=pl.when(cand_a).then(pl.col("baseline")).otherwise(pl.col("model")),
        winner=winner,
    )


def bt_leaderboard(
    judgments: pl.DataFrame,
    *,
    weight: int = DEFAULT_WEIGHT,
    rounds: int = 100,
    level: float = 0.95,
    seed: int = 0,
    anchor: tuple[str, float] | None = None,
    protocol: str | BenchProtocol = V01,
):
    """Bradley-Terry ratings of the judge's battles through the ranking library."""
    return fit_bt(
        judge_battles(judgments, weight, protocol),
        ci="bootstrap" if rounds else "sandwich",
        bootstrap_rounds=rounds,
        level=level,
        seed=seed,
        anchor=anchor,
    )


def styled_judge_battles(
    judgments: pl.DataFrame,
    features: pl.DataFrame,
    weight: int = DEFAULT_WEIGHT,
    protocol: str | BenchProtocol = V01,
) -> pl.DataFrame:
    """Judge battles with ``{feature}_a`` / ``{feature}_b`` style columns joined from
    ``features`` (``question_id, model`` + STYLE_FEATURES, e.g. ``answer_features``)."""
    battles = judge_battles(judgments, weight, protocol)
    feats = features.select("question_id", "model", *STYLE_FEATURES)
    for side in ("a", "b"):
        battles = battles.join(
            feats.rename({"model": f"model_{side}", **{f: f"{f}_{side}" for f in STYLE_FEATURES}}),
            on=["question_id", f"model_{side}"],
            how="left",
        )
    return battles


def style_controlled_leaderboard(
    judgments: pl.DataFrame,
    features: pl.DataFrame,
    *,
    weight: int = DEFAULT_WEIGHT,
    rounds: int = 0,
    level: float = 0.95,
    seed: int = 0,
    protocol: str | BenchProtocol = V01,
):
    """Bradley-Terry net of length and markdown on the judge's battles (ranking library;
    our rating, kept beside the anchor's style-controlled win rate)."""
    return fit_style_controlled(
        styled_judge_battles(judgments, features, weight, protocol),
        ci="bootstrap" if rounds else "sandwich",
        bootstrap_rounds=rounds,
        level=level,
        seed=seed,
    )


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
        float(decisive["verdict"].str.starts_with("A").mean()) if decisive.height else float("nan")
    )
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
            .join(
                tok.rename({"model": "baseline", "tokens": "base_tokens"}),
                on=["question_id", "baseline"],
                how="inner",
            )
            .with_columns(diff=(pl.col("tokens") - pl.col("base_tokens")).cast(pl.Float64))
        )
        if joined.height > 2 and joined["diff"].std() and joined["score"].std():
            report["length_correlation"] = float(np.corrcoef(joined["diff"], joined["score"])[0, 1])
            report["length_pairs"] = joined.height
    return report
