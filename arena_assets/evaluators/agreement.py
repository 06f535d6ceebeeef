"""How well a judge agrees with the arena's human votes: PPE's metrics and MT-Bench's.

Per judge and slice of battles (overall, each category, each language, hard prompts):

* ``accuracy`` (PPE, Frick et al. 2024): over the battles the human decided (model_a or
  model_b; ``tie`` and ``tie (bothbad)`` votes left out), the share where the judge picked
  the human's side: PPE's "accuracy in selecting the human-preferred response". PPE's
  post and paper state no rule for a judge that ties, and its code could not be read
  here (no snapshot of ``lmarena/PPE``): counting a judge tie as a miss is this
  project's rule (``TIE_RULE``), and ``accuracy_tie_half`` scores it 0.5 instead (the
  expected score of breaking it with a coin), reported beside. A two-game judge's pick
  for both is the strength rule of ``judges.combine``.
  Interval: percentile bootstrap over prompt clusters (battles sharing a first prompt,
  ``dedup_key``, are drawn together), ``rounds`` seeded draws.
* ``agreement_with_ties`` / ``agreement_without_ties`` (MT-Bench, FastChat
  ``compute_agreement.py``): a human "tie" and "tie (bothbad)" are both a tie; with ties,
  a tie agrees with a tie; without ties, every battle where either said tie is dropped.
  The judge's label here is FastChat's, not the strength rule of ``accuracy``: a two-game
  judge's verdict is the side both games picked, and a battle whose two orders disagree
  is "inconsistent", a tie (``common.load_pairwise_model_judgments``, ``show_result.py``);
  an unparsed game (FastChat's "error") disagrees with the other game: a tie too.
  Single-shot judges (reward models, baselines) have one label for both metrics.
* ``kappa``: Cohen's kappa between the judge's and the human's label (side a, side b,
  tie) over all judged battles.
* ``flip_rate`` (two-game LLM judges): share of battles whose two position orders picked
  different sides; ``a_share``: among decisive games, the share won by position A.
* ``length_preference``: among the judge's decisive picks between answers of different
  length, the share that picked the longer; ``human_length_preference`` the same for the
  human votes of those battles.
* board metrics (overall slice): the judge's *implied board* (Bradley-Terry on its picks
  as battle outcomes, ties as half, bootstrap intervals) against the human board on the
  same battles: separability, agreement with confidence, Spearman, Kendall, Brier
  (``judging.metrics``), and ``row_wise_pearson``: for each model, the Pearson
  correlation of its empirical win rates against each opponent (judge vs human, pairs with
  at least ``min_pair_battles`` battles), averaged over models with 3 or more opponents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

SIDE_OF_WINNER = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie"}
# the project's rule, not PPE's: PPE states none for a judge that ties
TIE_RULE = (
    "a judge tie on a decided vote counts as a miss in `accuracy` (the project's rule: PPE "
    "states no tie rule); `accuracy_tie_half` counts it as 0.5"
)


@dataclass(frozen=True)
class AgreementOptions:
    rounds: int = 200  # cluster bootstrap draws
    level: float = 0.95
    seed: int = 0
    min_slice_battles: int = 30  # smaller slices are not reported on their own
    min_pair_battles: int = 1
    board_rounds: int = 100  # bootstrap rounds of the implied boards


def _score(human: str, pick: str | None, tie: float = 0.0) -> float | None:
    """A decided vote's score: 1 when the judge picked the human's side, ``tie`` when it
    tied (0 by the project's rule, ``TIE_RULE``: PPE states none), 0 otherwise; None for a
    human tie or no verdict."""
    if human == "tie" or pick is None:
        return None
    return 1.0 if pick == human else tie if pick == "tie" else 0.0


_GAME_SIDE = {"A>>B": "A", "A>B": "A", "A=B": "tie", "B>A": "B", "B>>A": "B"}


def fastchat_pick(game1: str | None, game2: str | None) -> str | None:
    """FastChat's label of a two-game pairwise judgment (see the module docstring):
    game 1 shows side a as Assistant A, game 2 side b; ``a`` / ``b`` when both games
    pick that side, ``tie`` when they disagree or one is unparsed, None when neither parsed."""
    if not game1 and not game2:
        return None
    if not game1 or not game2:
        return "tie"
    one = {"A": "a", "B": "b", "tie": "tie"}[_GAME_SIDE[game1]]
    two = {"A": "b", "B": "a", "tie": "tie"}[_GAME_SIDE[game2]]
    return one if one == two else "tie"


def cluster_bootstrap(
    values: np.ndarray, clusters: np.ndarray, *, rounds: int, level: float, seed: int
) -> tuple[float, float]:
    """Percentile interval of the mean of ``values`` resampling whole clusters."""
    if values.size == 0:
        return float("nan"), float("nan")
    _, inverse = np.unique(clusters, return_inverse=True)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse).astype(float)
    k = sums.size
    draws = np.random.default_rng(seed).multinomial(k, np.full(k, 1.0 / k), size=rounds)
    means = (draws @ sums) / (draws @ counts)
    tail = (1 - level) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def cohen_kappa(x: list[str], y: list[str]) -> float:
    """Cohen's kappa of two label lists over the union of their labels."""
    if not x:
        return float("nan")
    labels = sorted(set(x) | set(y))
    idx = {lab: i for i, lab in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)))
    for a, b in zip(x, y, strict=True):
        table[idx[a], idx[b]] += 1
    n = table.sum()
    observed = np.trace(table) / n
    expected = float((table.sum(axis=1) @ table.sum(axis=0)) / n**2)
    return float((observed - expected) / (1 - expected)) if expected < 1 else float("nan")


def mtbench_agreement(human: list[str], pick: list[str]) -> dict:
    """FastChat's agreement with and without ties (see module docstring)."""
    pairs = list(zip(human, pick, strict=True))
    without = [(h, p) for h, p in pairs if h != "tie" and p != "tie"]
    return {
        "agreement_with_ties": sum(h == p for h, p in pairs) / len(pairs)
        if pairs
        else float("nan"),
        "agreement_without_ties": (
            sum(h == p for h, p in without) / len(without) if without else float("nan")
        ),
        "pairs_without_ties": len(without),
    }


def _length_preference(
    picks: list[str], tokens_a: list[int], tokens_b: list[int]
) -> tuple[float, int]:
    chosen = [
        (p == "a") == (ta > tb)
        for p, ta, tb in zip(picks, tokens_a, tokens_b, strict=True)
        if p in ("a", "b") and ta != tb
    ]
    return (float(np.mean(chosen)) if chosen else float("nan")), len(chosen)


def _sign(verdict: str) -> int:
    return 0 if verdict == "A=B" else 1 if verdict.startswith("A") else -1


def _game_stats(game1: list, game2: list) -> tuple[float, float]:
    """(flip rate, A share) of two-game judges (game 2 shows side b as A); NaN for
    single-shot judges."""
    both = [(g1, g2) for g1, g2 in zip(game1, game2, strict=True) if g1 and g2]
    games = [g for g in game1 + game2 if g and g != "A=B"]
    flips = [_sign(g1) != -_sign(g2) for g1, g2 in both]
    return (
        float(np.mean(flips)) if flips else float("nan"),
        float(np.mean([g.startswith("A") for g in games])) if games else float("nan"),
    )


def slice_metrics(frame: pl.DataFrame, options: AgreementOptions) -> dict:
    """Every per-battle metric of one judge on one slice (``frame``: the judge's verdicts
    joined with the sample; see :func:`agreement_table`)."""
    judged = frame.filter(pl.col("pick").is_not_null())
    human = [SIDE_OF_WINNER[w] for w in judged["winner"]]
    picks = judged["pick"].to_list()
    games = list(zip(judged["game1"].to_list(), judged["game2"].to_list(), strict=True))
    fastchat = [
        fastchat_pick(g1, g2) if (g1 or g2) else p for (g1, g2), p in zip(games, picks, strict=True)
    ]
    scores = [
        (s, c)
        for s, c in (
            (_score(h, p), c) for h, p, c in zip(human, picks, judged["dedup_key"], strict=True)
        )
        if s is not None
    ]
    values = np.array([s for s, _ in scores], dtype=float)
    half = [_score(h, p, 0.5) for h, p in zip(human, picks, strict=True)]
    half = [v for v in half if v is not None]
    lo, hi = cluster_bootstrap(
        values,
        np.array([c for _, c in scores], dtype=object),
        rounds=options.rounds,
        level=options.level,
        seed=options.seed,
    )
    pref, n_pref = _length_preference(
        picks, judged["tokens_a"].to_list(), judged["tokens_b"].to_list()
    )
    human_pref, _ = _length_preference(
        human, judged["tokens_a"].to_list(), judged["tokens_b"].to_list()
    )
    flip, a_share = _game_stats(judged["game1"].to_list(), judged["game2"].to_list())
    return {
        "battles": frame.height,
        "judged": judged.height,
        "decisive_votes": int(values.size),
        "accuracy": float(values.mean()) if values.size else float("nan"),
        "accuracy_lower": lo,
        "accuracy_upper": hi,
        "accuracy_tie_half": float(np.mean(half)) if half else float("nan"),
        **mtbench_agreement(human, fastchat),
        "kappa": cohen_kappa(human, picks),
        "flip_rate": flip,
        "a_share": a_share,
        "length_preference": pref,
        "length_pairs": n_pref,
        "human_length_preference": human_pref,
    }


def _win_matrix(frame: pl.DataFrame, side: str) -> dict[tuple[str, str], tuple[float, int]]:
    """(i, j) -> (score of i against j, battles), ties as half, both orientations."""
    out: dict[tuple[str, str], list[float]] = {}
    for a, b, s in frame.select("model_a", "model_b", side).iter_rows():
        score_a = 1.0 if s == "a" else 0.0 if s == "b" else 0.5
        for i, j, v in ((a, b, score_a), (b, a, 1.0 - score_a)):
            cell = out.setdefault((i, j), [0.0, 0])
            cell[0] += v
            cell[1] += 1
    return {k: (v[0] / v[1], int(v[1])) for k, v in out.items()}


def row_wise_pearson(frame: pl.DataFrame, min_pair_battles: int = 1) -> tuple[float, int]:
    """Mean over models of the Pearson correlation of their win-rate rows (judge vs human;
    see module docstring), and how many models entered the mean."""
    human = _win_matrix(frame, "human")
    judge = _win_matrix(frame, "pick")
    rows: dict[str, list[tuple[float, float]]] = {}
    for (i, j), (h, n) in human.items():
        if n >= min_pair_battles and (i, j) in judge:
            rows.setdefault(i, []).append((h, judge[i, j][0]))
    corr = []
    for cells in rows.values():
        if len(cells) < 3:
            continue
        x, y = np.array(cells).T
        if x.std() > 0 and y.std() > 0:
            corr.append(float(np.corrcoef(x, y)[0, 1]))
    return (float(np.mean(corr)) if corr else float("nan")), len(corr)


def _as_battles(frame: pl.DataFrame, side: str) -> pl.DataFrame:
    return frame.select(
        "model_a",
        "model_b",
        pl.col(side)
        .replace_strict({"a": "model_a", "b": "model_b", "tie": "tie"}, return_dtype=pl.String)
        .alias("winner"),
    )


def board_metrics(
    frame: pl.DataFrame, options: AgreementOptions, human_boards: dict | None = None
) -> dict:
    """The judge's implied board against the human board of the same battles.
    ``human_boards``: human boards already fitted, by the options and the battles they were
    fitted on (judges that answered the same battles of one sample share one: the same
    fit, done once); one dict per sample."""
    from arena_assets.judging.metrics import bench_vs_human, leaderboard_score_table
    from arena_assets.ranking import RankingInputError, fit_bt
    from arena_assets.ranking.newton import NoMaximumLikelihood

    judged = frame.filter(pl.col("pick").is_not_null())
    rwp, rows = row_wise_pearson(judged, options.min_pair_battles)
    out: dict = {"row_wise_pearson": rwp, "row_wise_pearson_models": rows}
    fitted = {} if human_boards is None else human_boards

    def fit(side: str):
        return fit_bt(
            _as_battles(judged, side),
            ci="bootstrap",
            bootstrap_rounds=options.board_rounds,
            level=options.level,
            seed=options.seed,
        )

    human = (options, tuple(judged["battle_id"]))  # in order: the same rows, the same bootstrap
    try:
        if human not in fitted:
            fitted[human] = fit("human")
        boards = [fit("pick"), fitted[human]]
        vs = bench_vs_human(
            leaderboard_score_table(boards[0], "judge"), leaderboard_score_table(boards[1], "human")
        )
    except (RankingInputError, NoMaximumLikelihood, ValueError, np.linalg.LinAlgError) as exc:
        return out | {"board_error": str(exc)[:200]}
    return out | {
        "models_compared": vs["n_models"],
        "separability": vs["separability_bench"]["value"],
        "separability_human": vs["separability_human"]["value"],
        "confidence_agreement": vs["agreement_with_confidence"]["value"],
        "spearman": vs["spearman"],
        "kendall": vs["kendall"],
        "brier": vs["brier"]["value"],
    }


def _slices(frame: pl.DataFrame, min_battles: int) -> list[tuple[str, pl.DataFrame]]:
    out = [("overall", frame)]
    for col in ("category", "language"):
        for (value,), part in sorted(frame.group_by(col), key=lambda kv: str(kv[0][0])):
            if part.height >= min_battles:
                out.append((f"{col}:{value}", part))
    hard = frame.filter(pl.col("hard").fill_null(False))
    if hard.height >= min_battles:
        out.append(("hard", hard))
    return out


def agreement_table(
    verdicts: pl.DataFrame, sample: pl.DataFrame, options: AgreementOptions = AgreementOptions()
) -> pl.DataFrame:
    """One row per judge and slice: the per-battle metrics, and on ``overall`` the board
    metrics. ``verdicts``: ``judges.ask_judges`` output; ``sample``: the judged battles."""
    joined = verdicts.join(sample, on="battle_id", how="inner").with_columns(
        pl.col("winner").replace_strict(SIDE_OF_WINNER, return_dtype=pl.String).alias("human")
    )
    rows, human_boards = [], {}
    for judge in verdicts["judge"].unique(maintain_order=True):
        part = joined.filter(pl.col("judge") == judge)
        kind = part["judge_kind"][0]
        for name, piece in _slices(part, options.min_slice_battles):
            row = {
                "judge": judge,
                "judge_kind": kind,
                "slice": name,
                **slice_metrics(piece, options),
            }
            if name == "overall":
                row |= board_metrics(piece, options, human_boards)
            rows.append(row)
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA, strict=False)


AGREEMENT_SCHEMA = {
    "judge": pl.String,
    "judge_kind": pl.String,
    "slice": pl.String,
    "battles": pl.Int64,
    "judged": pl.Int64,
    "decisive_votes": pl.Int64,
    "accuracy": pl.Float64,
    "accuracy_lower": pl.Float64,
    "accuracy_upper": pl.Float64,
    "accuracy_tie_half": pl.Float64,
    "agreement_with_ties": pl.Float64,
    "agreement_without_ties": pl.Float64,
    "pairs_without_ties": pl.Int64,
    "kappa": pl.Float64,
    "flip_rate": pl.Float64,
    "a_share": pl.Float64,
    "length_preference": pl.Float64,
    "length_pairs": pl.Int64,
    "human_length_preference": pl.Float64,
    "row_wise_pearson": pl.Float64,
    "row_wise_pearson_models": pl.Int64,
    "models_compared": pl.Int64,
    "separability": pl.Float64,
    "separability_human": pl.Float64,
    "confidence_agreement": pl.Float64,
    "spearman": pl.Float64,
    "kendall": pl.Float64,
    "brier": pl.Float64,
    "board_error": pl.String,
}
