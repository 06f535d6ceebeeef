"""Figures for the ranking library on synthetic pure-BT battles (run by hand).

    .venv/bin/python benchmarks/bench_ranking.py [--battles 1000000] [--models 100]

Prints: median time of aggregation + fit + sandwich + 1,000-round bootstrap (from a polars
frame with string model names); the largest distance of our ratings from an independent
reference fit run to a vanishing gradient (per-battle rows, scipy trust-exact); the time of a
style-controlled fit with 100 bootstrap rounds.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import numpy as np
import polars as pl
from scipy.optimize import minimize

from arena_assets.ranking import aggregate, fit_bt, fit_style_controlled, sample_bt_battles

FACTOR = 400 / math.log(10)


def timed(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def reference_fit(battles: pl.DataFrame, models: list[str]) -> tuple[np.ndarray, float]:
    """Per-battle logistic likelihood (ties = target 0.5), scipy trust-exact to a vanishing gradient."""
    enum = pl.Enum(models)
    a = battles["model_a"].cast(enum).to_physical().to_numpy().astype(np.int64)
    b = battles["model_b"].cast(enum).to_physical().to_numpy().astype(np.int64)
    y = (
        battles["winner"]
        .replace_strict({"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5})
        .to_numpy()
    )
    k, n = len(models), len(y)

    def f(beta):  # mean loss + (Σβ)²/(2k): same optimum (mean 0), no flat direction
        d = beta[a] - beta[b]
        return (
            y * np.logaddexp(0, -d) + (1 - y) * np.logaddexp(0, d)
        ).sum() / n + beta.sum() ** 2 / (2 * k * n)

    def g(beta):
        r = 1 / (1 + np.exp(-(beta[a] - beta[b]))) - y
        return (np.bincount(a, r, k) - np.bincount(b, r, k) + beta.sum() / k) / n

    def h(beta):  # dense K×K Hessian assembled per battle (bincount over the pair key)
        p = 1 / (1 + np.exp(-(beta[a] - beta[b])))
        off = np.bincount(a * k + b, p * (1 - p), k * k).reshape(k, k)
        off = off + off.T
        return (np.diag(off.sum(axis=1)) - off + 1.0 / k) / n  # + 11ᵀ/k: fixes the null space

    res = minimize(
        f, np.zeros(k), jac=g, hess=h, method="trust-exact", options={"gtol": 1e-14, "maxiter": 200}
    )
    beta = res.x - res.x.mean()
    return FACTOR * beta + 1000, float(np.abs(g(res.x)).max() * n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--style-rounds", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    planted = rng.normal(1000, 120, args.models)
    style = {
        f"model-{i:02d}": {"sum_assistant_tokens": float(rng.uniform(50, 400))}
        for i in range(args.models)
    }
    plain = sample_bt_battles(planted, args.battles, seed=1, tie_rate=0.15)
    print(
        f"{args.battles:,} battles, {args.models} models, {os.cpu_count()} CPUs; medians of {args.repeats}"
    )

    t_agg, agg = timed(lambda: aggregate(plain), args.repeats)
    print(f"aggregation to {agg.counts.shape[0]} pairs x 3 outcomes: {t_agg:.3f} s")
    t_sand, board = timed(lambda: fit_bt(plain), args.repeats)
    print(
        f"aggregation + fit + sandwich: {t_sand:.3f} s ({board.meta['newton_iterations']} Newton steps)"
    )
    t_all, _boot = timed(
        lambda: fit_bt(plain, ci="bootstrap", bootstrap_rounds=args.rounds, seed=0), args.repeats
    )
    print(f"aggregation + fit + sandwich + {args.rounds}-round bootstrap: {t_all:.3f} s")

    ref, grad = reference_fit(plain, board.models)
    ours = board.table.sort("model")["rating"].to_numpy()
    order = np.argsort(board.models)
    print(
        f"max |rating - reference| = {np.abs(ours - ref[order]).max():.2e} rating points "
        f"(reference max |gradient| = {grad:.1e} on the summed log-likelihood)"
    )

    # no ties here: random ties would attenuate the planted coefficient
    battles = sample_bt_battles(
        planted, args.battles, seed=2, style_coef={"sum_assistant_tokens": 0.3}, model_style=style
    )
    t_style, styled = timed(
        lambda: fit_style_controlled(
            battles, ci="bootstrap", bootstrap_rounds=args.style_rounds, seed=0
        ),
        1,
    )
    c = styled.coefficients.row(0, named=True)
    print(
        f"style control + {args.style_rounds}-round bootstrap on {args.battles:,} battles: {t_style:.2f} s "
        f"(length coef {c['coef']:.3f} [{c['lower']:.3f}, {c['upper']:.3f}], planted 0.3)"
    )


if __name__ == "__main__":
    main()
