"""K-fold time-split evaluation of P2L against the marginal board on a battle table.

Battles sorted by time are cut into ``folds`` equal blocks; for every block k ≥ 2 the
model is fitted (ridge chosen inside the training blocks, as the monthly fit does) on the
blocks before it and scored on block k: mean log loss of P2L and of the W = 0 fit on the
same training battles, over the test battles whose two models the training rated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from arena_assets.routing.data import encode
from arena_assets.routing.features import FeatureSpace
from arena_assets.routing.p2l import Coded, P2LConfig, battle_nll, fit_p2l


@dataclass
class FoldScore:
    fold: int
    train: int
    test: int
    log_loss_p2l: float
    log_loss_marginal: float
    ridge: float | None


def time_split_scores(
    battles: pl.DataFrame,
    prompts: pl.DataFrame,
    emb: np.ndarray,
    *,
    folds: int = 10,
    cfg: P2LConfig = P2LConfig(),
    embedder: str = "",
) -> tuple[list[FoldScore], dict]:
    """``battles``: battle_id, tstamp, model_a, model_b, winner, dedup_key (keep optional);
    ``prompts`` one row per dedup_key with language, prompt_chars (+ labels), ``emb``."""
    battles = battles.sort("tstamp", "battle_id")
    n = battles.height
    edges = np.linspace(0, n, folds + 1).round().astype(int)
    scores: list[FoldScore] = []
    gains: list[np.ndarray] = []
    for k in range(1, folds):
        train_b, test_b = battles[: edges[k]], battles[edges[k] : edges[k + 1]]
        used = train_b["dedup_key"].unique()
        mask = prompts["dedup_key"].is_in(used.implode()).to_numpy()
        space = FeatureSpace.fit(prompts.filter(pl.Series(mask)), emb[mask], embedder, cfg.features)
        X = space.transform(prompts, emb)
        tr = encode(train_b, prompts, X, loss=cfg.loss, tie_mode=cfg.tie_mode)
        if tr.coded.n < 20 or len(tr.coded.models) < 2:
            continue
        fit = fit_p2l(tr.coded, cfg)
        te = encode(
            test_b, prompts, X, loss=cfg.loss, tie_mode=cfg.tie_mode, models=tr.coded.models
        ).coded
        if te.n == 0:
            continue
        rows = np.arange(te.n)
        nll_p, nll_m = (
            battle_nll(te, rows, fit.params, cfg),
            battle_nll(te, rows, fit.marginal, cfg),
        )
        gains.append(nll_m - nll_p)
        scores.append(
            FoldScore(k + 1, tr.coded.n, te.n, float(nll_p.mean()), float(nll_m.mean()), fit.alpha)
        )
    allg = np.concatenate(gains) if gains else np.zeros(0)
    summary = {
        "folds_scored": len(scores),
        "test_battles": len(allg),
        "log_loss_p2l": float(np.mean([s.log_loss_p2l for s in scores])) if scores else math.nan,
        "log_loss_marginal": float(np.mean([s.log_loss_marginal for s in scores]))
        if scores
        else math.nan,
        "gain_per_battle": float(allg.mean()) if len(allg) else math.nan,
        "gain_se": float(allg.std(ddof=1) / math.sqrt(len(allg))) if len(allg) > 1 else math.nan,
        "folds_with_w": sum(s.ridge is not None for s in scores),
    }
    return scores, summary


def read_vote_prompts(path) -> pl.DataFrame:
    """FastChat vote records carrying their prompts (``question_id, model_a, model_b,
    winner, tstamp, turns``; ``turns`` a list or its Python repr, as in FastChat's
    arena_hard_1k question_original.jsonl) -> battle_id, tstamp, model_a, model_b, winner,
    prompt (the first turn), dedup_key (= battle_id), sorted by time."""
    import ast
    import json
    from pathlib import Path

    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        turns = r["turns"] if isinstance(r["turns"], list) else ast.literal_eval(r["turns"])
        rows.append(
            {
                "battle_id": str(r["question_id"]),
                "tstamp": float(r["tstamp"]),
                "model_a": r["model_a"],
                "model_b": r["model_b"],
                "winner": r["winner"],
                "prompt": str(turns[0]),
            }
        )
    frame = pl.DataFrame(rows).unique("battle_id", keep="first").sort("tstamp", "battle_id")
    return frame.with_columns(pl.col("battle_id").alias("dedup_key"))


def coded_subset(coded: Coded, rows: np.ndarray) -> Coded:
    return Coded(
        coded.models,
        coded.a[rows],
        coded.b[rows],
        coded.outcome[rows],
        coded.prompt[rows],
        coded.tstamp[rows],
        coded.X,
    )
