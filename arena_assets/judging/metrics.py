"""How good is a benchmark? Its scores against a human leaderboard of the same models.

The metrics follow the Arena-Hard / BenchBuilder paper (Li et al. 2024, arXiv 2406.11939)
and the statistics notebook published with it:

* separability: share of model pairs whose confidence intervals do not overlap (two
  intervals overlap when the larger lower bound is below the smaller upper bound);
* agreement with confidence: over the pairs the *human* board separates, 1 when the
  bench separates them in the same order, 0.5 when the bench cannot separate them, 0 when
  it separates them the other way round; averaged over those pairs;
* Spearman and Kendall rank correlations of the point scores;
* Brier score of pairwise forecasts: for every pair the bench predicts
  P(a below b) = Φ((μ_b − μ_a)/√(σ²_a + σ²_b)) from its bootstrap mean and variance, the
  outcome is whether the human rating of a is below b's.

``bench_leaderboard`` assembles the bench's own board from judgments (win rate against the
baseline with bootstrap interval, Bradley-Terry through the ranking library, optional style
control, mean answer tokens).

Score tables are read from the published bootstrap files (``model, score, lower, upper,
results``), from arena leaderboard CSVs (``rating, variance, rating_q025, rating_q975``)
and from this project's leaderboard tables (``model, rating|score, lower, upper, se``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

from arena_assets.ranking.newton import NoMaximumLikelihood
from arena_assets.ranking.options import RankingInputError

# interval columns by source: (lower, upper)
_INTERVAL_COLUMNS = (("lower", "upper"), ("rating_q025", "rating_q975"))
_SCORE_COLUMNS = ("score", "rating", "win_rate")


@dataclass(frozen=True)
class ScoreTable:
    """One benchmark's (or board's) scores: point, interval, variance per model."""

    models: list[str]
    score: np.ndarray
    mean: np.ndarray  # bootstrap mean where replicates exist, else the score
    lower: np.ndarray
    upper: np.ndarray
    variance: np.ndarray
    name: str = ""

    def __post_init__(self) -> None:
        if len(set(self.models)) != len(self.models):
            raise ValueError(f"{self.name or 'score table'}: duplicate model names")

    def subset(self, models: list[str]) -> ScoreTable:
        idx = [self.models.index(m) for m in models]
        return ScoreTable(
            list(models),
            self.score[idx],
            self.mean[idx],
            self.lower[idx],
            self.upper[idx],
            self.variance[idx],
            self.name,
        )

    def renamed(self, mapping: dict[str, str]) -> ScoreTable:
        """Models renamed through ``mapping`` (case-insensitive keys); others dropped."""
        lowered = {k.lower(): v for k, v in mapping.items()}
        keep = [i for i, m in enumerate(self.models) if m.lower() in lowered]
        return ScoreTable(
            [lowered[self.models[i].lower()] for i in keep],
            self.score[keep],
            self.mean[keep],
            self.lower[keep],
            self.upper[keep],
            self.variance[keep],
            self.name,
        )


def score_table(frame: pl.DataFrame, name: str = "") -> ScoreTable:
    """A ScoreTable from any of the supported column layouts (see the module docstring)."""
    cols = set(frame.columns)
    model_col = next((c for c in ("model", "index", "", "Model") if c in cols), None)
    score_col = next((c for c in _SCORE_COLUMNS if c in cols), None)
    bounds = next(((lo, hi) for lo, hi in _INTERVAL_COLUMNS if lo in cols and hi in cols), None)
    if model_col is None or score_col is None or bounds is None:
        raise ValueError(
            f"{name or 'table'}: need a model column, score|rating and lower/upper "
            f"(or rating_q025/rating_q975); got {sorted(cols)}"
        )
    score = frame[score_col].cast(pl.Float64).to_numpy()
    lower = frame[bounds[0]].cast(pl.Float64).to_numpy()
    upper = frame[bounds[1]].cast(pl.Float64).to_numpy()
    if "results" in cols:  # bootstrap replicates: the notebook's population variance
        variance = np.array([np.var(np.asarray(r, dtype=float)) for r in frame["results"]])
        mean = np.array([np.mean(np.asarray(r, dtype=float)) for r in frame["results"]])
    elif "variance" in cols:
        variance = frame["variance"].cast(pl.Float64).to_numpy()
    elif "se" in cols:
        variance = frame["se"].cast(pl.Float64).to_numpy() ** 2
    else:  # a 95 % normal interval as the last resort
        variance = ((upper - lower) / (2 * 1.959964)) ** 2
    if "results" not in cols:
        mean = score
    return ScoreTable([str(m) for m in frame[model_col]], score, mean, lower, upper, variance, name)


def read_score_table(path: str | Path) -> ScoreTable:
    """Read a bootstrap JSONL, a leaderboard CSV, or a Parquet leaderboard table."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        frame = pl.DataFrame(rows, infer_schema_length=None)
    elif suffix == ".csv":
        frame = pl.read_csv(path)
    elif suffix == ".parquet":
        frame = pl.read_parquet(path)
    else:
        raise ValueError(f"{path}: unsupported score table format {suffix!r}")
    return score_table(frame, name=path.stem)


def leaderboard_score_table(board, name: str = "") -> ScoreTable:
    """A ranking-library ``Leaderboard`` (or ``StyleLeaderboard``) as a ScoreTable; a
    Leaderboard's bootstrap ratings, when kept, give the mean and variance, otherwise
    the rating and the squared standard error do."""
    table = board.table
    models = table["model"].to_list()
    if getattr(board, "bootstrap", None) is not None and hasattr(board, "models"):
        boot = board.bootstrap[:, [board.models.index(m) for m in models]]
        mean, variance = boot.mean(axis=0), boot.var(axis=0)
    else:
        mean, variance = table["rating"].to_numpy(), table["se"].to_numpy() ** 2
    return ScoreTable(
        models,
        table["rating"].to_numpy(),
        mean,
        table["lower"].to_numpy(),
        table["upper"].to_numpy(),
        variance,
        name,
    )


def write_bootstrap_stats(summary: pl.DataFrame, path: str | Path) -> None:
    """A win-rate summary with ``results`` as a published-style bootstrap JSONL
    (``model, score, lower, upper, results``)."""
    out = summary.select("model", pl.col("win_rate").alias("score"), "lower", "upper", "results")
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in out.to_dicts()))


def read_name_map(path: str | Path) -> dict[str, str]:
    """A JSON object ``{human name: bench name}`` as published beside the bootstrap files."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError(f"{path}: a name map is a JSON object of strings")
    return data


def _overlaps(lo1: float, hi1: float, lo2: float, hi2: float) -> bool:
    # each starts strictly before the other ends: a zero-width interval (the baseline's
    # fixed 50 %) inside another overlaps it, touching intervals do not
    return lo1 < hi2 and lo2 < hi1


def _overlap_length(lo1: float, hi1: float, lo2: float, hi2: float) -> float:
    return max(0.0, min(hi1, hi2) - max(lo1, lo2))


def separability(table: ScoreTable) -> dict:
    """Share of model pairs whose intervals do not overlap."""
    pairs = list(combinations(range(len(table.models)), 2))
    if not pairs:
        raise ValueError("separability needs at least two models")
    apart = sum(
        not _overlaps(table.lower[i], table.upper[i], table.lower[j], table.upper[j])
        for i, j in pairs
    )
    return {"value": apart / len(pairs), "separated_pairs": apart, "pairs": len(pairs)}


def agreement_with_confidence(bench: ScoreTable, human: ScoreTable) -> dict:
    """Agreement on the pairs the human board separates (1 same order, 0.5 bench unsure,
    0 opposite order); both tables must hold the same models."""
    _same_models(bench, human)
    h = human.subset(bench.models)
    total = 0
    points = 0.0
    for i, j in combinations(range(len(bench.models)), 2):
        # the notebook's rule here: intervals overlap when they share a positive length
        if _overlap_length(h.lower[i], h.upper[i], h.lower[j], h.upper[j]) > 0:
            continue
        total += 1
        if _overlap_length(bench.lower[i], bench.upper[i], bench.lower[j], bench.upper[j]) > 0:
            points += 0.5
        elif (bench.lower[i] < bench.lower[j]) == (h.lower[i] < h.lower[j]):
            points += 1.0
    return {"value": points / total if total else float("nan"), "human_separated_pairs": total}


def brier_score(bench: ScoreTable, human: ScoreTable) -> dict:
    """Brier score of the bench's pairwise forecasts against the human order (lower is better)."""
    _same_models(bench, human)
    h = human.subset(bench.models)
    order = np.array(
        sorted(range(len(bench.models)), key=lambda i: bench.models[i]), dtype=np.int64
    )
    first, second = np.triu_indices(len(order), k=1)  # the pairs in combinations(order, 2)'s order
    i, j = order[first], order[second]
    mean, var, score = (
        np.asarray(x, dtype=np.float64) for x in (bench.mean, bench.variance, h.score)
    )
    sd, diff = np.sqrt(var[i] + var[j]), mean[i] - mean[j]
    # P(bench says i below j) under a normal on the difference; one array call, not one
    # scipy call a pair (22,000 pairs took 1.4 s in judge_human_agreement at 2,000 battles)
    spread = sd > 0
    forecasts = (diff < 0).astype(np.float64)
    forecasts[spread] = stats.norm.cdf(0.0, loc=diff[spread], scale=sd[spread])
    outcomes = (score[i] < score[j]).astype(np.float64)
    return {"value": float(np.mean((forecasts - outcomes) ** 2)), "pairs": len(forecasts)}


def rank_correlations(bench: ScoreTable, human: ScoreTable) -> dict:
    _same_models(bench, human)
    h = human.subset(bench.models)
    return {
        "spearman": float(stats.spearmanr(bench.score, h.score).statistic),
        "kendall": float(stats.kendalltau(bench.score, h.score).statistic),
    }


def _same_models(bench: ScoreTable, human: ScoreTable) -> None:
    if set(bench.models) != set(human.models):
        raise ValueError("bench and human tables must hold the same models: use align()")


def align(
    bench: ScoreTable, human: ScoreTable, name_map: dict[str, str] | None = None
) -> tuple[ScoreTable, ScoreTable]:
    """Both tables on their shared models, bench names translated to human names.

    ``name_map`` is ``{human name: bench name}``; with it, bench models missing from the
    map are dropped (as in the paper's notebook) and human models are matched by name.
    """
    if name_map:
        bench = bench.renamed({v: k for k, v in name_map.items()})
    shared = [m for m in bench.models if m in set(human.models)]
    if len(shared) < 2:
        raise ValueError(
            f"only {len(shared)} model(s) shared by bench and human tables; pass a name map"
        )
    return bench.subset(shared), human.subset(shared)


def bench_vs_human(
    bench: ScoreTable, human: ScoreTable, name_map: dict[str, str] | None = None
) -> dict:
    """Every metric by name, computed on the models both tables share (listed in ``models``)."""
    b, h = align(bench, human, name_map)
    corr = rank_correlations(b, h)
    return {
        "models": sorted(b.models),
        "n_models": len(b.models),
        "separability_bench": separability(b),
        "separability_human": separability(h),
        "agreement_with_confidence": agreement_with_confidence(b, h),
        "spearman": corr["spearman"],
        "kendall": corr["kendall"],
        "brier": brier_score(b, h),
    }


def style_inputs(answers: pl.DataFrame) -> pl.DataFrame:
    """``question_id, model, token_len, header_count, list_count, bold_count`` of answers:
    an imported file's own counts (``token_len``, ``src_*``) where it has them, else the
    counts ``judging.answers.answer_features`` made."""

    def pick(*names: str) -> pl.Expr:
        return pl.coalesce([pl.col(n) for n in names if n in answers.columns]).cast(pl.Int64)

    return answers.select(
        "question_id",
        "model",
        token_len=pick("token_len", "answer_tokens"),
        header_count=pick("src_header_count", "header_count"),
        list_count=pick("src_list_count", "list_count"),
        bold_count=pick("src_bold_count", "bold_count"),
    )


def bench_leaderboard(
    judgments: pl.DataFrame,
    features: pl.DataFrame | None = None,
    *,
    protocol: str = "arena-hard-v0.1",
    weight: int | None = None,
    rounds: int | None = None,
    seed: int = 42,
    style_control: bool = True,
    meta: dict | None = None,
) -> pl.DataFrame:
    """One row per (question category, model), each category's baseline included:
    Arena-Hard-Auto's score against that baseline with its interval (``win_rate, lower,
    upper`` at the protocol's level) and game counts (a model whose games were all
    unparsed or dropped keeps its row, score null); given answer ``features``
    (``answer_features`` output or imported answers) the anchor's style-controlled win rate
    (``sc_win_rate, sc_lower, sc_upper``, fitted on ``sc_rows`` rows; null for a model
    some of whose answers lack features) and the mean answer tokens over the category's
    questions; and, from the same battles, our Bradley-Terry rating and style-controlled
    rating with bootstrap intervals. ``meta``, when given, is filled with what the board's
    metadata shows: ``models_without_win_rate`` (count) and ``without_win_rate`` (per
    category, model: why), and ``style_control`` per category (coefficients, rows without
    features, features left out, models left out and why)."""
    from arena_assets.judging.arena_hard import expanded_rows, style_win_rates
    from arena_assets.judging.protocol import get_protocol
    from arena_assets.judging.summary import (
        bt_leaderboard,
        pairwise_summary,
        style_controlled_leaderboard,
    )

    proto = get_protocol(protocol)
    weight = proto.weight if weight is None else weight
    rounds = proto.rounds if rounds is None else rounds
    meta = {} if meta is None else meta
    main = pl.lit(proto.question_category(None))
    judgments = judgments.with_columns(
        category=pl.col("category").fill_null(main) if "category" in judgments.columns else main
    )
    wins = pairwise_summary(
        judgments, protocol=proto, weight=weight, rounds=rounds, seed=seed, include_baseline=True
    )
    unscored = wins.filter(pl.col("win_rate").is_null())
    meta["models_without_win_rate"] = unscored.height
    meta["without_win_rate"] = {}
    for c, m, g, u, d in unscored.select(
        "category", "model", "games", "unparsed", "dropped_games"
    ).iter_rows():
        meta["without_win_rate"].setdefault(c, {})[m] = f"{g} games: {u} unparsed, {d} dropped"
    meta["style_control"] = {}
    blocks = []
    inputs = style_inputs(features) if features is not None else None
    for (category,), part in judgments.group_by("category", maintain_order=True):
        block = wins.filter(pl.col("category") == category)
        try:
            bt = bt_leaderboard(
                part, weight=weight, rounds=rounds, level=proto.level, seed=seed, protocol=proto
            ).table
        except (RankingInputError, NoMaximumLikelihood):  # e.g. one candidate won every game
            bt = pl.DataFrame(
                schema={
                    "model": pl.String,
                    "rating": pl.Float64,
                    "lower": pl.Float64,
                    "upper": pl.Float64,
                    "rank": pl.Int64,
                }
            )
        block = block.join(
            bt.select(
                "model", bt_rating="rating", bt_lower="lower", bt_upper="upper", bt_rank="rank"
            ),
            on="model",
            how="left",
        )
        if inputs is not None:
            asked = inputs.filter(
                pl.col("question_id").is_in(part["question_id"].unique().to_list())
            )
            tokens = asked.group_by("model").agg(
                avg_tokens=pl.col("token_len").cast(pl.Float64).mean()
            )
            block = block.join(tokens, on="model", how="left")
            if style_control:
                rows, _ = expanded_rows(part, proto, weight)
                sc, sc_meta = style_win_rates(rows, inputs, proto, rounds=rounds, seed=seed)
                meta["style_control"] |= sc_meta
                base = pl.col("model") == pl.col("baseline")
                block = block.join(
                    sc.select("model", "sc_win_rate", "sc_lower", "sc_upper", "sc_rows"),
                    on="model",
                    how="left",
                ).with_columns(
                    [
                        pl.when(base).then(0.5).otherwise(pl.col(c)).alias(c)
                        for c in ("sc_win_rate", "sc_lower", "sc_upper")
                    ]
                )
                try:
                    ours = inputs.rename({"token_len": "sum_assistant_tokens"})
                    styled = style_controlled_leaderboard(
                        part, ours, weight=weight, protocol=proto
                    ).table
                except (
                    np.linalg.LinAlgError,
                    NoMaximumLikelihood,
                    RankingInputError,
                ):  # too few games
                    styled = pl.DataFrame(
                        schema={
                            "model": pl.String,
                            "rating": pl.Float64,
                            "lower": pl.Float64,
                            "upper": pl.Float64,
                            "rank": pl.Int64,
                        }
                    )
                block = block.join(
                    styled.select(
                        "model",
                        style_rating="rating",
                        style_lower="lower",
                        style_upper="upper",
                        style_rank="rank",
                    ),
                    on="model",
                    how="left",
                )
        blocks.append(block)
    return pl.concat(blocks, how="diagonal_relaxed").sort(
        ["category", "win_rate"], descending=[False, True], nulls_last=True
    )
