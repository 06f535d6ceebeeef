"""P2L scored against the simulated arena's hidden truth (benchmarks and slow tests only).

The truth gives every prompt's Elo strengths (``simulator.prompt_skill.true_strengths``),
so on held-out battles we can measure:

- log loss of P2L, of the marginal board (W = 0) and of the truth's per-prompt
  probabilities σ((s_a − s_b)·ln10/400), all with ties as half wins, and the share of the
  marginal-to-truth gap that P2L closes: (marginal − P2L) / (marginal − truth);
- calibration (ECE) of P2L and of the marginal board;
- per-prompt Spearman over models between β̂(x) and the true strengths (the marginal
  board's constant β scored the same way for reference);
- category boards: P2L's aggregate over a category's prompts and a Bradley-Terry board
  fitted on only ``n`` battles of that category, each against the truth's own aggregate
  over the same prompts (Kendall's τ).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
from scipy.stats import kendalltau, spearmanr

from arena_assets.ranking.boards import CATEGORY_BOARDS
from arena_assets.ranking.cells import TIE
from arena_assets.ranking.newton import fit_pairs
from arena_assets.routing.aggregate import fit_bt_to_probs, mean_pair_probs
from arena_assets.routing.evaluate import expected_calibration_error, log_loss
from arena_assets.routing.outcomes import score_of_a
from arena_assets.routing.p2l import Coded, P2LModel, Params
from arena_assets.simulator.prompt_skill import true_strengths
from arena_assets.simulator.prompt_truth import read_prompt_truth
from arena_assets.simulator.truth import TRUTH_DIR
from arena_assets.simulator.world import World

ELO_LOGIT = math.log(10.0) / 400.0
TRUTH_COLUMNS = ["topic", "category", "language", "criteria_count", "would_refuse"]


def conversation_truth(raw_root: str, months: list[str]) -> pl.DataFrame:
    """conv_id -> the truth of its session's first prompt."""
    conv = pl.concat(
        [
            pl.read_parquet(
                Path(raw_root) / TRUTH_DIR / "conversations" / f"{m}.parquet",
                columns=["conv_id", "prompt_id"],
            )
            for m in months
        ]
    )
    prompts = pl.concat(
        [read_prompt_truth(raw_root, m).select("prompt_id", *TRUTH_COLUMNS) for m in months]
    ).unique("prompt_id")
    return conv.join(prompts, on="prompt_id", how="inner")


def _world_index(world: World, models: list[str]) -> np.ndarray:
    names = world.model_names
    return np.array([names.index(m) for m in models])


def truth_betas(world: World, truth: pl.DataFrame, models: list[str]) -> np.ndarray:
    """(rows × models) true strengths in natural log units (β scale)."""
    return true_strengths(world, truth)[:, _world_index(world, models)] * ELO_LOGIT


def prediction_scores(
    model: P2LModel, marginal: Params, coded: Coded, true_beta: np.ndarray
) -> dict:
    """``true_beta``: (battles × models) truth per test battle (same order as coded)."""
    i = np.arange(coded.n)
    y = score_of_a(coded.outcome)
    X = coded.X[coded.prompt]

    def p_of(beta: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(beta[i, coded.a] - beta[i, coded.b])))

    p_p2l, p_marg = p_of(model.params.betas(X)), p_of(marginal.betas(X))
    p_true = p_of(true_beta)
    ll = {k: log_loss(p, y) for k, p in (("p2l", p_p2l), ("marginal", p_marg), ("truth", p_true))}
    gap = ll["marginal"].mean() - ll["truth"].mean()
    gain = ll["marginal"] - ll["p2l"]
    return {
        "battles": int(coded.n),
        **{f"log_loss_{k}": float(v.mean()) for k, v in ll.items()},
        "gain": float(gain.mean()),
        "gain_se": float(gain.std(ddof=1) / math.sqrt(coded.n)),
        "gap_closed": float(gain.mean() / gap) if gap > 0 else math.nan,
        "ece_p2l": expected_calibration_error(p_p2l, y),
        "ece_marginal": expected_calibration_error(p_marg, y),
    }


def per_prompt_spearman(beta_hat: np.ndarray, beta_true: np.ndarray) -> float:
    rho = [
        spearmanr(h, t).statistic
        for h, t in zip(beta_hat, beta_true, strict=True)
        if np.ptp(h) > 0 and np.ptp(t) > 0
    ]
    return float(np.mean(rho)) if rho else math.nan


def small_n_category_boards(
    model: P2LModel,
    prompts: pl.DataFrame,
    X: np.ndarray,
    prompt_truth_beta: np.ndarray,
    train: Coded,
    train_prompts: pl.DataFrame,
    n_battles: int,
    repeats: int = 10,
    seed: int = 0,
    categories: tuple[str, ...] = (
        "coding",
        "math",
        "creative_writing",
        "hard_6",
        "if",
        "long_user",
    ),
) -> dict:
    """Per category: Kendall τ with the truth's order of (P2L board, BT on n battles)."""
    rng = np.random.default_rng(seed)
    out = {}
    frame = prompts.with_row_index("_row")
    tframe = train_prompts.with_row_index("_row")
    k = len(model.models)
    for cat in categories:
        expr = CATEGORY_BOARDS[cat].fill_null(False)
        rows = frame.filter(expr)["_row"].to_numpy()
        in_cat = np.zeros(train_prompts.height, bool)
        in_cat[tframe.filter(expr)["_row"].to_numpy()] = True
        cat_battles = np.flatnonzero(in_cat[train.prompt])
        if len(rows) < 20 or len(cat_battles) < n_battles:
            continue
        truth = fit_bt_to_probs(mean_pair_probs(prompt_truth_beta[rows]), k)
        p2l = fit_bt_to_probs(mean_pair_probs(model.params.betas(X[rows])), k)
        taus = []
        for _ in range(repeats):
            pick = rng.choice(cat_battles, n_battles, replace=False)
            bt = _bt_or_nan(train, pick, k)
            ok = ~np.isnan(bt)
            taus.append(kendalltau(bt[ok], truth[ok]).statistic if ok.sum() > 2 else math.nan)
        out[cat] = {
            "prompts": len(rows),
            "p2l_tau": float(kendalltau(p2l, truth).statistic),
            "bt_tau_mean": float(np.nanmean(taus)),
            "bt_tau_sd": float(np.nanstd(taus)),
        }
    return out


def _bt_or_nan(coded: Coded, rows: np.ndarray, k: int) -> np.ndarray:
    """Plain BT (ties half) on ``rows``; models it cannot rate are NaN (the largest
    strongly connected part is fitted, as the boards do)."""
    from arena_assets.ranking.cells import aggregate_codes
    from arena_assets.ranking.identify import rankable

    o = np.where(coded.outcome[rows] >= TIE, TIE, coded.outcome[rows])
    agg = aggregate_codes([str(i) for i in range(k)], coded.a[rows], coded.b[rows], o)
    sub, _ = rankable(agg)
    out = np.full(k, np.nan)
    if sub.n_models >= 2:
        beta, _ = fit_pairs(
            sub.left, sub.right, sub.pair_battles.astype(float), sub.pair_wins, sub.n_models
        )
        out[[int(m) for m in sub.models]] = beta
    return out
