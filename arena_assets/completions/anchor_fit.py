"""Copilot Arena's own scores: an L2-penalised logistic regression that mixes every user's
battles with one user's, as ``server/src/scores.py`` of lmarena/copilot-arena computes
them (``get_coefficients``, ``compute_mle_elo``, ``get_scores``), restated on counts.

The anchor's arithmetic, for a list of models and a battle table ``df`` entering with
weight ``lam``:

- ``W[a, b]`` = 2 × (battles a won against b, either side) + ties between a and b (a tie
  counts once in each direction): its ``ptbl_win``;
- for every ordered pair (a, b), a != b, two rows of the design matrix, both with
  ``x = ln 10 · (e_a − e_b)``: one with y = 1 and sample weight ``W[a, b] · lam / len(df)``,
  one with y = 0 and weight ``W[b, a] · lam / len(df)``. Each unordered pair thus appears
  twice, so the data term is ``Σ_{a≠b} 2 · lam / len(df) · W[a, b] · softplus(−x·w)``;
- the global table enters with ``lam``, the user's with ``1 − lam``; sklearn's
  ``LogisticRegression(fit_intercept=False, penalty="l2", C=1.0)`` minimises
  ``½‖w‖² + C · Σ weight · log-loss``; ratings are ``400 · w + 1000``.

The board (``lam = 1``, the user's rows weightless) is that penalty's fit of every
accepted pair: the penalty is a fixed prior, about 4 battles' worth against the whole
data, so it pulls ratings towards 1000 whatever the number of battles. We solve the same
strictly convex objective by Newton's method to a vanishing gradient (sklearn's lbfgs stops
at ``tol=1e-6``); without the penalty it is the plain Bradley-Terry fit with mean 1000.

A user's board (``user_board``) follows ``compute_mle_elo``'s choice of ``lam``: the
average log-loss of held-out user battles, rounded to 4 decimals, over folds that hold out
rows ``i .. i+4`` for ``i = 0, 10, 20, ...`` (a step of 10 and a test of 5: half the rows are
never held out), refitting on the rest; the loss at ``lam = 0`` first, then five halving
steps from 0.5 that compare the two midpoints with that first loss (the anchor never
updates it). Its held-out loss is ``−log P(model_a wins)`` for every row: for a row the
second model won, the anchor flips both the features and the label, which scores the
first model's win. We follow all of it, as written; ``docs/methods/evaluators.md`` lists
where the code is ambiguous.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LN10 = math.log(10.0)
SCALE = 400.0
INIT_RATING = 1000.0
C = 1.0  # sklearn's LogisticRegression(C=1.0)
MIN_USER_BATTLES = 20  # get_scores: fewer user outcomes, no board
FOLD_STEP, FOLD_TEST = 10, 5  # get_avg_loss_for_user_data's folds
_EPS = np.finfo(np.float64).eps  # sklearn's log_loss clips probabilities to it


def win_counts(ia: np.ndarray, ib: np.ndarray, res: np.ndarray, k: int) -> np.ndarray:
    """``ptbl_win`` of battles given as model indices and results (1 a won, 0 b won, 0.5 a
    tie): ``W[a, b]`` = 2 × wins of a over b + ties of the pair."""
    w = np.zeros((k, k))
    a_won, b_won, tie = res == 1, res == 0, res == 0.5
    np.add.at(w, (ia[a_won], ib[a_won]), 2.0)
    np.add.at(w, (ib[b_won], ia[b_won]), 2.0)
    np.add.at(w, (ia[tie], ib[tie]), 1.0)
    np.add.at(w, (ib[tie], ia[tie]), 1.0)
    return w


def cell_weights(w: np.ndarray, n: int, lam: float) -> np.ndarray:
    """The data term's weight of each ordered cell: both rows of both orders of a pair."""
    return 2.0 * lam / n * w if n else np.zeros_like(w)


def fit(weights: np.ndarray, c: float = C, tol: float = 1e-12, max_iter: int = 100) -> np.ndarray:
    """``w`` minimising ``½‖w‖² + c · Σ_{a≠b} weights[a, b] · log(1 + 10^(w_b − w_a))`` (no
    penalty with ``c = inf``: mean 0), by Newton's method with step halving. ``weights``
    may hold a stack of problems (``(..., k, k)``), solved together."""
    weights = np.asarray(weights, dtype=np.float64)
    stack = weights.reshape(-1, *weights.shape[-2:])
    f, k = stack.shape[0], stack.shape[-1]
    penalty = 0.0 if math.isinf(c) else 1.0 / c
    eye = np.eye(k)

    def objective(b: np.ndarray) -> np.ndarray:
        d = LN10 * (b[:, :, None] - b[:, None, :])
        return 0.5 * penalty * (b * b).sum(axis=1) + np.sum(
            stack * np.logaddexp(0.0, -d), axis=(1, 2)
        )

    beta = np.zeros((f, k))
    value = objective(beta)
    for _ in range(max_iter):
        d = LN10 * (beta[:, :, None] - beta[:, None, :])
        p = 0.5 * (1.0 + np.tanh(0.5 * d))  # σ(d), stable
        g_cell = stack * (p - 1.0) * LN10
        grad = penalty * beta + g_cell.sum(axis=2) - g_cell.sum(axis=1)
        v = stack * p * (1.0 - p) * LN10**2
        s = v + np.swapaxes(v, 1, 2)
        hess = eye * s.sum(axis=2)[:, :, None] - s + penalty * eye
        if not penalty:  # the ratings' common shift is free: pin their mean at 0
            hess = hess + 1.0 / k
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        t = np.ones(f)
        trial = objective(beta - step)
        worse = trial > value + 1e-15 * np.abs(value)
        while worse.any() and t.min() > 1e-8:  # a step that does not lower it is halved
            t = np.where(worse, t / 2.0, t)
            trial = objective(beta - t[:, None] * step)
            worse = trial > value + 1e-15 * np.abs(value)
        beta, value = beta - t[:, None] * step, trial
        if np.max(np.abs(t[:, None] * step)) < tol:
            break
    if not penalty:
        beta = beta - beta.mean(axis=1, keepdims=True)
    return beta.reshape(weights.shape[:-1])


def elo(beta: np.ndarray) -> np.ndarray:
    return SCALE * beta + INIT_RATING


def board_ratings(w: np.ndarray, n: int, c: float = C) -> np.ndarray:
    """The global board: ``lam = 1``, every battle of ``w`` (its ``ptbl_win``, ``n`` battles)."""
    return elo(fit(cell_weights(w, n, 1.0), c))


def bootstrap_ratings(
    ia: np.ndarray, ib: np.ndarray, res: np.ndarray, k: int, rounds: int, seed: int, c: float = C
) -> np.ndarray:
    """rounds × k board ratings, each fitted on the battles resampled with replacement
    (drawn as multinomial counts of the distinct (a, b, result) battles: the same
    distribution), all rounds solved together."""
    n = len(ia)
    cats, counts = np.unique(
        np.column_stack([ia, ib, np.round(res * 2).astype(np.int64)]), axis=0, return_counts=True
    )
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=rounds)
    one = np.stack(  # each distinct battle's own ptbl_win
        [win_counts(a[None], b[None], np.array([r / 2]), k) for a, b, r in cats]
    )
    stacked = np.tensordot(draws.astype(np.float64), one, axes=1)  # rounds × k × k
    return elo(fit(cell_weights(stacked, n, 1.0), c))


@dataclass(frozen=True)
class UserBoard:
    lam: float  # the weight of every user's battles (1 - lam: this user's)
    ratings: np.ndarray  # order of the models
    votes: np.ndarray  # the user's battles each model took part in
    battles: int  # the user's battles
    losses: dict[float, float]  # lam -> the rounded average held-out loss, as evaluated


def _held_out_loss(beta: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> float:
    p = 0.5 * (1.0 + np.tanh(0.5 * LN10 * (beta[ia] - beta[ib])))  # P(model_a wins)
    return float(np.mean(-np.log(np.clip(p, _EPS, 1 - _EPS))))


def user_board(
    global_w: np.ndarray,
    n_global: int,
    ia: np.ndarray,
    ib: np.ndarray,
    res: np.ndarray,
    k: int,
    c: float = C,
) -> UserBoard | None:
    """One user's board from that user's battles in time order (indices, results), None
    where the anchor gives none (fewer than 20 battles, or one side always accepted)."""
    n = len(ia)
    if n < MIN_USER_BATTLES or len(np.unique(res)) == 1:
        return None
    g = cell_weights(global_w, n_global, 1.0)  # scaled by lam below
    folds = []
    for i in range(0, n, FOLD_STEP):
        test = np.arange(i, min(i + FOLD_TEST, n))
        keep = np.ones(n, dtype=bool)
        keep[test] = False
        folds.append((test, win_counts(ia[keep], ib[keep], res[keep], k), int(keep.sum())))
    losses: dict[float, float] = {}

    own = np.stack([cell_weights(w, m, 1.0) for _, w, m in folds])

    def loss(lam: float) -> float:
        if lam not in losses:
            betas = fit(lam * g + (1.0 - lam) * own, c)  # every fold at once
            per_fold = [_held_out_loss(b, ia[t], ib[t]) for b, (t, _, _) in zip(betas, folds)]
            losses[lam] = round(sum(per_fold) / len(per_fold), 4)
        return losses[lam]

    best_loss = loss(0.0)
    best, lower_bound, upper_bound = 0.5, 0.0, 1.0
    for _ in range(5):
        upper_lam, lower_lam = (upper_bound + best) / 2.0, (lower_bound + best) / 2.0
        upper_loss, lower_loss = loss(upper_lam), loss(lower_lam)
        if best_loss <= lower_loss and best_loss <= upper_loss:
            break
        if lower_loss < upper_loss:
            upper_bound, best = best, lower_lam
        elif lower_loss > upper_loss:
            lower_bound, best = best, upper_lam
        else:
            break
    mine = cell_weights(win_counts(ia, ib, res, k), n, 1.0 - best)
    ratings = elo(fit(best * g + mine, c))
    votes = np.bincount(ia, minlength=k) + np.bincount(ib, minlength=k)
    return UserBoard(best, ratings, votes, n, losses)


def _indices(battles, models: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    at = {m: i for i, m in enumerate(models)}
    ia = np.array([at[m] for m in battles["model_a"].to_list()], dtype=np.int64)
    ib = np.array([at[m] for m in battles["model_b"].to_list()], dtype=np.int64)
    res = np.array(
        [{"model_a": 1.0, "model_b": 0.0}.get(w, 0.5) for w in battles["winner"].to_list()]
    )
    return ia, ib, res


def board_models(battles, min_battles: int) -> tuple[list[str], dict[str, str]]:
    """The models the board rates: every model with at least ``min_battles`` battles among
    the rated ones (the others and their battles leave, as the anchor's model list keeps
    only the models it names); the left-out ones with their reason."""
    import polars as pl

    left_out: dict[str, str] = {}
    current = battles
    while True:
        counts = pl.concat([current["model_a"], current["model_b"]]).value_counts()
        few = sorted(m for m, n in counts.iter_rows() if n < min_battles)
        if not few:
            models = sorted(counts[counts.columns[0]].to_list())
            return models, left_out
        left_out |= dict.fromkeys(few, "under_min_battles")
        current = current.filter(~pl.col("model_a").is_in(few) & ~pl.col("model_b").is_in(few))
        if current.height == 0:
            return [], left_out


def fit_board(battles, min_battles: int, rounds: int, level: float, seed: int):
    """Copilot Arena's board of ``battles`` (``model_a, model_b, winner``): its penalised
    fit as the point, a percentile interval of ``rounds`` bootstrap refits at ``level``
    (Copilot Arena's scores have no interval: ours). -> (table, left_out); the table has
    ``model, rating, lower, upper, rank, rank_ub, battles``."""
    import polars as pl

    from arena_assets.ranking.leaderboard import rank_upper_bounds, ranks

    models, left_out = board_models(battles, min_battles)
    if len(models) < 2:
        raise ValueError(f"fewer than two models with {min_battles} battles: no board")
    kept = battles.filter(pl.col("model_a").is_in(models) & pl.col("model_b").is_in(models))
    ia, ib, res = _indices(kept, models)
    k = len(models)
    rating = board_ratings(win_counts(ia, ib, res, k), len(ia))
    if rounds > 0:
        boot = bootstrap_ratings(ia, ib, res, k, rounds, seed)
        lower, upper = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
    else:
        lower = upper = rating
    table = pl.DataFrame(
        {
            "model": models,
            "rating": rating,
            "lower": lower,
            "upper": upper,
            "rank": ranks(rating).astype(np.int64),
            "rank_ub": rank_upper_bounds(lower, upper).astype(np.int64),
            "battles": (np.bincount(ia, minlength=k) + np.bincount(ib, minlength=k)).astype(
                np.int64
            ),
        }
    ).sort(["rank", "model"])
    return table, left_out


def user_boards(global_battles, user_battles, models: list[str]):
    """Every user's board (``user_board``): ``global_battles`` all accepted pairs of the
    rated models, ``user_battles`` the same rows with ``user_hash`` and ``tstamp``, each
    user's taken in time order. -> one row per (user, model): ``user_hash, model, rating,
    votes, lam, user_battles``."""
    import polars as pl

    k = len(models)
    ga, gb, gres = _indices(global_battles, models)
    global_w = win_counts(ga, gb, gres, k)
    rows = []
    ordered = user_battles.sort("user_hash", "tstamp", "pair_id")
    for (user,), part in ordered.group_by("user_hash", maintain_order=True):
        ia, ib, res = _indices(part, models)
        board = user_board(global_w, len(ga), ia, ib, res, k)
        if board is None:
            continue
        rows += [
            {
                "user_hash": user,
                "model": m,
                "rating": float(board.ratings[i]),
                "votes": int(board.votes[i]),
                "lam": board.lam,
                "user_battles": board.battles,
            }
            for i, m in enumerate(models)
        ]
    return pl.DataFrame(
        rows,
        schema={
            "user_hash": pl.String,
            "model": pl.String,
            "rating": pl.Float64,
            "votes": pl.Int64,
            "lam": pl.Float64,
            "user_battles": pl.Int64,
        },
    )
