"""Copilot Arena's board, same input, same numbers: the project's board and per-user boards
against the arithmetic of Copilot Arena's ``server/src/scores.py``, restated here from its
documented math without the project's code: the win table (a win counts 2, a tie 1 each
way), the design matrix of ``ln 10 · (e_a − e_b)`` rows (two per ordered pair, labels 1 and
0), sample weights ``count · λ / len(df)``, no intercept, sklearn's L2 penalty with C = 1,
ratings ``400 · w + 1000``; and the per-user weight λ chosen as the anchor chooses it. The
fit is solved here with scipy on the explicit matrices, and checked once against sklearn's
``LogisticRegression`` itself. Without the penalty the same matrices give the Bradley-Terry
board (``ARENA_COPILOT_FIT=bt``)."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl
import pytest
from scipy.optimize import minimize
from sklearn.metrics import log_loss

from arena_assets.completions.board import (
    CopilotBoardOptions,
    copilot_leaderboard,
    copilot_user_boards,
)

MODELS = [f"m{i}" for i in range(8)]
LN10 = math.log(10)


def battles_frame(n: int = 3000, seed: int = 5) -> pl.DataFrame:
    """``n`` accepted pairs of 8 models (strengths ±150 Elo), spread over users: three
    heavy users (60, 45 and 25 pairs), one of 30 who always took the top completion, one of
    19, and light users."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0, 0.35, len(MODELS))
    a = rng.integers(0, len(MODELS), n)
    b = (a + rng.integers(1, len(MODELS), n)) % len(MODELS)
    a_won = rng.random(n) < 1 / (1 + 10 ** (skill[b] - skill[a]))
    users = [f"light{i}" for i in rng.integers(0, 400, n)]
    start = 0
    for name, count in (("heavy1", 60), ("heavy2", 45), ("heavy3", 25), ("top", 30), ("few", 19)):
        users[start : start + count] = [name] * count
        start += count
    a_won[130:160] = True  # "top" always accepted the top completion
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    order = rng.permutation(n)  # users' pairs interleaved in time
    return pl.DataFrame(
        {
            "pair_id": [f"p{i:05d}" for i in range(n)],
            "tstamp": [t0 + dt.timedelta(minutes=int(order[i])) for i in range(n)],
            "user_hash": users,
            "model_a": [MODELS[i] for i in a],
            "model_b": [MODELS[i] for i in b],
            "winner": ["model_a" if w else "model_b" for w in a_won],
            "accepted": [True] * n,
            "latency_a": rng.uniform(0.2, 2.0, n),
            "latency_b": rng.uniform(0.2, 2.0, n),
            "file_type": ["python"] * n,
            "source_format": ["copilot_log"] * n,
        }
    )


# --- the anchor's arithmetic, restated ------------------------------------------------


def design(rows: list[tuple[str, str, str]], lam: float, models: list[str]):
    """(X, y, sample weights) of one battle table entering with weight ``lam``."""
    idx = {m: i for i, m in enumerate(models)}
    wins = {(x, y): 0.0 for x in models for y in models}
    for a, b, winner in rows:
        if winner == "model_a":
            wins[a, b] += 2
        elif winner == "model_b":
            wins[b, a] += 2
        else:
            wins[a, b] += 1
            wins[b, a] += 1
    xs, ys, ws = [], [], []
    for a in models:
        for b in models:
            if a == b:
                continue
            x = np.zeros(len(models))
            x[idx[a]], x[idx[b]] = LN10, -LN10
            xs += [x, x]
            ys += [1.0, 0.0]
            ws += [wins[a, b] * lam / len(rows), wins[b, a] * lam / len(rows)]
    return np.array(xs), np.array(ys), np.array(ws)


def logistic_fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, penalised: bool = True):
    """argmin ½‖β‖² + Σ w · log-loss (C = 1), no intercept; without the penalty the mean-0
    solution."""

    def f(beta):
        z = x @ beta
        loss = np.sum(w * (y * np.logaddexp(0, -z) + (1 - y) * np.logaddexp(0, z)))
        grad = x.T @ (w * (1 / (1 + np.exp(-z)) - y))
        if penalised:
            loss, grad = loss + 0.5 * beta @ beta, grad + beta
        return loss, grad

    def hess(beta):
        p = 1 / (1 + np.exp(-(x @ beta)))
        return (x.T * (w * p * (1 - p))) @ x + np.eye(x.shape[1])

    if penalised:  # strictly convex: scipy's exact trust region to a vanishing gradient
        res = minimize(
            f,
            np.zeros(x.shape[1]),
            jac=True,
            hess=hess,
            method="trust-exact",
            options={"gtol": 1e-12},
        )
        return res.x
    res = minimize(f, np.zeros(x.shape[1]), jac=True, method="BFGS", options={"gtol": 1e-11})
    return res.x - res.x.mean()


def anchor_ratings(global_rows, user_rows, lam, models, penalised=True) -> np.ndarray:
    parts = [design(global_rows, lam, models)]
    if user_rows:
        parts.append(design(user_rows, 1 - lam, models))
    x, y, w = (np.concatenate(p) for p in zip(*parts))
    return 400 * logistic_fit(x, y, w, penalised) + 1000


def held_out_loss(beta: np.ndarray, rows, models) -> float:
    """The anchor's test log-loss of held-out rows (its features and labels as it sets them)."""
    idx = {m: i for i, m in enumerate(models)}
    xs, ys = [], []
    for a, b, winner in rows:
        x = np.zeros(len(models))
        sign = 1 if winner == "model_a" else -1
        x[idx[a]], x[idx[b]] = sign * LN10, -sign * LN10
        xs.append(x)
        ys.append(1.0 if winner == "model_a" else 0.0)
    p = 1 / (1 + np.exp(-(np.array(xs) @ beta)))
    return log_loss(ys, np.column_stack([1 - p, p]), labels=[0, 1])


def anchor_lambda(global_rows, user_rows, models) -> float:
    def avg_loss(lam):
        losses = []
        for i in range(0, len(user_rows), 10):
            test = user_rows[i : i + 5]
            train = user_rows[:i] + user_rows[i + 5 :]
            x, y, w = (
                np.concatenate(p)
                for p in zip(design(global_rows, lam, models), design(train, 1 - lam, models))
            )
            losses.append(held_out_loss(logistic_fit(x, y, w), test, models))
        return round(sum(losses) / len(losses), 4)

    first = avg_loss(0)
    lam, lo, hi = 0.5, 0.0, 1.0
    for _ in range(5):
        up, down = (hi + lam) / 2, (lo + lam) / 2
        up_loss, down_loss = avg_loss(up), avg_loss(down)
        if first <= down_loss and first <= up_loss:
            break
        if down_loss < up_loss:
            hi, lam = lam, down
        elif down_loss > up_loss:
            lo, lam = lam, up
        else:
            break
    return lam


def rows_of(frame: pl.DataFrame) -> list[tuple[str, str, str]]:
    return list(frame.select("model_a", "model_b", "winner").iter_rows())


# --- the checks -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def battles() -> pl.DataFrame:
    return battles_frame()


def _overall(battles: pl.DataFrame, fit: str) -> dict[str, float]:
    options = CopilotBoardOptions(bootstrap_rounds=20, min_battles=1, fit=fit)
    board = copilot_leaderboard(battles, "2024-01", options).board
    overall = board.filter(pl.col("board") == "overall")
    assert (overall["lower"] <= overall["rating"]).all()
    assert (overall["rating"] <= overall["upper"]).all()
    return dict(zip(overall["model"], overall["rating"]))


def test_board_is_copilot_arenas_penalised_fit(battles) -> None:
    ours = _overall(battles, "copilot-arena")
    want = anchor_ratings(rows_of(battles), [], 1.0, MODELS)
    gap = max(abs(ours[m] - want[i]) for i, m in enumerate(MODELS))
    bt = _overall(battles, "bt")
    spread = max(abs(ours[m] - bt[m]) for m in MODELS)
    print(f"penalised fit vs the restated anchor: {gap:.2e} Elo; vs Bradley-Terry: {spread:.1f}")
    assert gap < 1e-6
    assert spread > 5  # the penalty is not negligible: the two fits are different numbers


def test_without_the_penalty_the_anchor_is_bradley_terry(battles) -> None:
    bt = _overall(battles, "bt")
    want = anchor_ratings(rows_of(battles), [], 1.0, MODELS, penalised=False)
    gap = max(abs(bt[m] - want[i]) for i, m in enumerate(MODELS))
    print(f"Bradley-Terry vs the unpenalised anchor: {gap:.2e} Elo")
    assert gap < 1e-5


def test_the_restatement_is_sklearns_fit(battles) -> None:
    """The restated fit is the anchor's own call, sklearn's LogisticRegression (stopped at
    its tol=1e-6): equal to a thousandth of a rating point."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    x, y, w = design(rows_of(battles), 1.0, MODELS)
    with warnings.catch_warnings():  # sklearn 1.8+ spells the L2 penalty l1_ratio=0
        warnings.simplefilter("ignore", FutureWarning)
        lr = LogisticRegression(fit_intercept=False, penalty="l2", C=1.0, tol=1e-6)
        lr.fit(x, y, sample_weight=w)
    assert (
        np.max(np.abs(400 * lr.coef_[0] + 1000 - anchor_ratings(rows_of(battles), [], 1.0, MODELS)))
        < 1e-3
    )


def test_user_boards_are_copilot_arenas(battles) -> None:
    options = CopilotBoardOptions(bootstrap_rounds=0, min_battles=1)
    boards = copilot_user_boards(battles, options)
    # 20 or more pairs and both sides accepted: the three heavy users and no one else
    assert sorted(set(boards["user_hash"])) == ["heavy1", "heavy2", "heavy3"]
    everyone = rows_of(battles)
    for user, part in boards.group_by("user_hash"):
        mine = battles.filter(pl.col("user_hash") == user[0]).sort("tstamp", "pair_id")
        lam = anchor_lambda(everyone, rows_of(mine), MODELS)
        want = anchor_ratings(everyone, rows_of(mine), lam, MODELS)
        got = dict(zip(part["model"], part["rating"]))
        gap = max(abs(got[m] - want[i]) for i, m in enumerate(MODELS))
        print(f"{user[0]}: {mine.height} pairs, lambda {lam}, vs the restated anchor {gap:.1e}")
        assert part["lam"].unique().to_list() == [lam]
        assert gap < 1e-6
        votes = pl.concat([mine["model_a"], mine["model_b"]]).value_counts()
        assert dict(zip(part["model"], part["votes"])) == {
            m: dict(votes.iter_rows()).get(m, 0) for m in MODELS
        }
        assert part.sort("rank")["rating"].is_sorted(descending=True)
