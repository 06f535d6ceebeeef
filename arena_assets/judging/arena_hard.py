"""Arena-Hard-Auto's arithmetic, per protocol version (``judging.protocol`` has the table).

From judgments (one row per game: ``question_id, model, baseline, judge, game, model_a,
verdict``, optional ``category``) to

* ``expanded_rows``: the anchor's battles, one row per copy (a strong verdict counts
  ``weight`` times), each with the candidate's score 1 / 0.5 / 0, after the version's
  dropping rule, in the anchor's row order (models by name as its files sort; within a
  model the judges and records as given; v0.1 game 1 first, v2 game 2 first);
* ``win_rates``: the score and bootstrap interval against the baseline;
* ``style_win_rates``: the style-controlled win rate against the baseline and its interval.

Random draws reproduce the anchor's sampling calls with a seeded ``RandomState`` (the
anchor's v0.1 seeds numpy's global state with 42 and draws ``choice(N, N)`` per round over
the pooled rows; v2 draws ``choice(n_m, n_m)`` per model in name order per round, and
``randint(0, N, (rounds, N))`` for style control; it is unseeded, so any seed is as faithful).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import expit

from arena_assets.judging.protocol import V01, BenchProtocol, get_protocol

ANCHOR_SEED = 42  # np.random.seed(42) in the anchor's v0.1 utils_math.py
LN10 = float(np.log(10.0))
STYLE_INPUTS = ("token_len", "header_count", "list_count", "bold_count")


def _game_scores(judgments: pl.DataFrame) -> pl.DataFrame:
    """Each game's candidate score (null when unparsed) and whether the verdict is strong."""
    v = pl.col("verdict")
    cand_a = pl.col("model_a") == pl.col("model")
    a_wins = v.str.starts_with("A")
    score = (
        pl.when(v.is_null())
        .then(None)
        .when(v == "A=B")
        .then(0.5)
        .when(a_wins == cand_a)
        .then(1.0)
        .otherwise(0.0)
    )
    out = judgments.with_columns(score=score, strong=v.str.contains(">>").fill_null(False))
    if "category" not in out.columns:
        out = out.with_columns(category=pl.lit(None, pl.String))
    return out


def expanded_rows(
    judgments: pl.DataFrame, protocol: str | BenchProtocol, weight: int | None = None
) -> tuple[pl.DataFrame, dict]:
    """(rows, counts): the anchor's battles and ``{games, unparsed, dropped_games}``."""
    proto = get_protocol(protocol)
    weight = proto.weight if weight is None else weight
    if weight < 1:
        raise ValueError("weight must be >= 1")
    games = _game_scores(judgments).with_row_index("_order")
    keys = ["judge", "model", "question_id"]
    if proto.drop_question_on_unparsed:
        # v2 keeps a question only when both of its games were scored
        ok = games.group_by(keys).agg(_keep=pl.col("score").is_not_null().all() & (pl.len() == 2))
        kept = games.join(ok, on=keys, how="left").filter(pl.col("_keep"))
    else:
        kept = games.filter(pl.col("score").is_not_null())
    counts = {
        "games": games.height,
        "unparsed": int(games["score"].is_null().sum()),
        "dropped_games": games.height - kept.height,
    }
    # the anchor's row order (its bootstrap draws index into it): judges as listed, each
    # judge's files by model name, records in file order; v0.1 writes a record's game 1
    # before game 2, v2's load_judgments game 2 before game 1
    game_key = pl.col("game") if proto.rules == V01 else -pl.col("game")
    rows = (
        kept.with_columns(
            _judge=pl.col("_order").min().over("judge"),
            _record=pl.col("_order").min().over(keys),
            _game=game_key,
        )
        .sort(["model", "_judge", "_record", "_game"], maintain_order=True)
        .with_columns(_copies=pl.when(pl.col("strong")).then(weight).otherwise(1))
        .with_columns(pl.int_ranges(0, pl.col("_copies")).alias("copy"))
        .explode("copy", empty_as_null=False)
        .select(
            "category",
            "judge",
            "model",
            "baseline",
            "question_id",
            "game",
            "model_a",
            "copy",
            "score",
        )
    )
    return rows, counts


def _quantiles(values: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    values = values[~np.isnan(values)]
    return [float(np.quantile(values, q)) for q in qs] if values.size else [float("nan")] * len(qs)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.log(p / (1 - p))


def win_rates(
    rows: pl.DataFrame,
    protocol: str | BenchProtocol,
    *,
    rounds: int | None = None,
    seed: int = ANCHOR_SEED,
) -> pl.DataFrame:
    """One row per (category, model): ``win_rate, lower, upper, level, rows, results``
    (the bootstrap replicates). v0.1: the mean of the model's rows; each round resamples
    all rows of the category together and the percentile bounds are taken on the rating
    scale (the anchor's Elo, a monotone map of the win rate). v2: each round resamples
    each model's rows on its own; the score is the mean of the round means."""
    proto = get_protocol(protocol)
    rounds = proto.rounds if rounds is None else rounds
    lo, hi = (1 - proto.level) / 2, (1 + proto.level) / 2
    out = []
    for (category,), part in rows.group_by("category", maintain_order=True):
        models = sorted(set(part["model"].to_list()))
        code = np.searchsorted(models, part["model"].to_numpy())
        score = part["score"].to_numpy().astype(np.float64)
        means = np.bincount(code, score, len(models)) / np.bincount(code, minlength=len(models))
        rng = np.random.RandomState(seed)
        boot = np.full((rounds, len(models)), np.nan)
        for r in range(rounds):
            if proto.rules == V01:
                idx = rng.choice(len(score), size=len(score), replace=True)
                n = np.bincount(code[idx], minlength=len(models))
                s = np.bincount(code[idx], score[idx], len(models))
                boot[r] = np.divide(s, n, out=np.full(len(models), np.nan), where=n > 0)
            else:
                for m in range(len(models)):
                    own = score[code == m]
                    boot[r, m] = own[rng.choice(len(own), size=len(own), replace=True)].mean()
        for m, model in enumerate(models):
            col = boot[:, m]
            if proto.rules == V01:
                point = float(means[m])
                bounds = (
                    [float(expit(x)) for x in _quantiles(_logit(col), (lo, hi))]
                    if rounds
                    else [np.nan] * 2
                )
            else:
                point = float(np.nanmean(col)) if rounds else float(means[m])
                bounds = _quantiles(col, (lo, hi)) if rounds else [np.nan] * 2
            out.append(
                {
                    "category": category,
                    "model": model,
                    "baseline": part.filter(pl.col("model") == model)["baseline"][0],
                    "win_rate": point,
                    "lower": bounds[0],
                    "upper": bounds[1],
                    "level": proto.level,
                    "rows": int((code == m).sum()),
                    "results": col.tolist(),
                }
            )
    return pl.DataFrame(
        out,
        schema={
            "category": pl.String,
            "model": pl.String,
            "baseline": pl.String,
            "win_rate": pl.Float64,
            "lower": pl.Float64,
            "upper": pl.Float64,
            "level": pl.Float64,
            "rows": pl.Int64,
            "results": pl.List(pl.Float64),
        },
    )


def _fit(x: np.ndarray, s: np.ndarray, c: np.ndarray, scale: float, ridge: float) -> np.ndarray:
    """argmin  scale * sum_i c_i * BCE(s_i, sigmoid(x_i . w)) + ridge/2 * |w|^2  (Newton
    with step halving; a vanishing 1e-9 ridge keeps a separable board finite)."""
    w = np.zeros(x.shape[1])
    lam = max(ridge, 1e-9)

    def loss(w: np.ndarray) -> float:
        z = x @ w
        return float(scale * (c * (np.logaddexp(0.0, z) - s * z)).sum() + 0.5 * lam * w @ w)

    current = loss(w)
    for _ in range(100):
        p = expit(x @ w)
        grad = scale * x.T @ (c * (p - s)) + lam * w
        hess = scale * (x.T * (c * p * (1 - p))) @ x + lam * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-8:
            trial = loss(w - t * step)
            if trial <= current + 1e-12:
                break
            t /= 2
        w, current = w - t * step, trial
        if np.max(np.abs(t * step)) < 1e-10:
            break
    return w


def _style_matrix(
    rows: pl.DataFrame, features: pl.DataFrame, proto: BenchProtocol
) -> tuple[pl.DataFrame, np.ndarray, list[str]]:
    """Rows with both answers' features, their style columns (normalised as the version
    does) and the names of the features kept (a constant one cannot be normalised)."""
    feats = features.select("question_id", "model", *STYLE_INPUTS)
    joined = (
        rows.with_row_index("_order")
        .join(feats, on=["question_id", "model"], how="inner")
        .join(
            feats.rename({"model": "baseline", **{f: f"{f}_base" for f in STYLE_INPUTS}}),
            on=["question_id", "baseline"],
            how="inner",
        )
        .sort("_order")
    )
    m = {f: joined[f].to_numpy().astype(np.float64) for f in STYLE_INPUTS}
    b = {f: joined[f"{f}_base"].to_numpy().astype(np.float64) for f in STYLE_INPUTS}
    names, cols = list(STYLE_INPUTS), []
    if proto.rules == V01:  # baseline is side A: (a - b) / (a + b + 1) on every raw count
        cols = [(b[f] - m[f]) / (b[f] + m[f] + 1) for f in STYLE_INPUTS]
        x = np.column_stack(cols)
        mean, sd = x.mean(axis=0), x.std(axis=0)
    else:  # the model first; markdown as densities per token
        total = m["token_len"] + b["token_len"]
        cols = [
            np.divide(
                m["token_len"] - b["token_len"], total, out=np.zeros_like(total), where=total > 0
            )
        ]
        for f in STYLE_INPUTS[1:]:
            dm, db = m[f] / (m["token_len"] + 1), b[f] / (b["token_len"] + 1)
            cols.append((dm - db) / (dm + db + 1))
        x = np.column_stack(cols)
        mean, sd = x.mean(axis=0), x.std(axis=0, ddof=1) if len(x) > 1 else np.zeros(x.shape[1])
    keep = sd > 0
    x = (x[:, keep] - mean[keep]) / sd[keep]
    return joined, x, [n for n, k in zip(names, keep) if k]


def _coverage(rows: pl.DataFrame, features: pl.DataFrame) -> dict[str, tuple[int, int]]:
    """{model: (rows, rows whose two answers both have style features)}."""
    feats = features.select("question_id", "model").unique()
    has = rows.join(
        feats.with_columns(_m=pl.lit(True)), on=["question_id", "model"], how="left"
    ).join(
        feats.rename({"model": "baseline"}).with_columns(_b=pl.lit(True)),
        on=["question_id", "baseline"],
        how="left",
    )
    both = pl.col("_m").fill_null(False) & pl.col("_b").fill_null(False)
    counts = has.group_by("model").agg(n=pl.len(), ok=both.sum())
    return {m: (int(n), int(ok)) for m, n, ok in counts.iter_rows()}


def style_win_rates(
    rows: pl.DataFrame,
    features: pl.DataFrame,
    protocol: str | BenchProtocol,
    *,
    rounds: int | None = None,
    seed: int = ANCHOR_SEED,
) -> tuple[pl.DataFrame, dict]:
    """(one row per (category, model): ``sc_win_rate, sc_lower, sc_upper, sc_rows``; meta per
    category: the style ``coefficients``, ``rows_without_features``, ``features_left_out``
    (constant ones) and ``models_left_out`` with the reason). ``features``: ``question_id,
    model`` + ``STYLE_INPUTS`` (token count and markdown counts of each answer, the
    anchor's ``conv_metadata``). A model some of whose rows lack features (its answer's or
    the baseline's) is left out of the fit, its rate null (``sc_rows`` 0): the anchor has
    every answer's counts, and a fit on part of a model's games would be another number;
    the other models are fitted as if it had not been judged."""
    proto = get_protocol(protocol)
    rounds = proto.rounds if rounds is None else rounds
    lo, hi = (1 - proto.level) / 2, (1 + proto.level) / 2
    out, meta = [], {}
    # an answer counts as featured when every count is there (one row per answer)
    features = (
        features.select("question_id", "model", *STYLE_INPUTS)
        .drop_nulls()
        .unique(["question_id", "model"], keep="first", maintain_order=True)
    )
    for (category,), part in rows.group_by("category", maintain_order=True):
        cover = _coverage(part, features)
        partial = {
            m: f"{n - ok} of {n} rows without style features (its answers' or the baseline's): "
            "no style-controlled rate"
            for m, (n, ok) in sorted(cover.items())
            if ok < n
        }
        fit_rows = part.filter(~pl.col("model").is_in(list(partial)))
        joined, style, kept = _style_matrix(fit_rows, features, proto)
        meta[str(category)] = {
            "coefficients": {},
            "rows_without_features": sum(n - ok for n, ok in cover.values()),
            "features_left_out": [f for f in STYLE_INPUTS if f not in kept],
            "models_left_out": partial,
        }
        out += [
            {
                "category": category,
                "model": m,
                "baseline": part["baseline"][0],
                "sc_win_rate": None,
                "sc_lower": None,
                "sc_upper": None,
                "sc_rows": 0,
            }
            for m in partial
        ]
        if joined.height == 0:
            continue
        baseline = joined["baseline"][0]
        models = sorted(set(joined["model"].to_list()))
        code = np.searchsorted(models, joined["model"].to_numpy())
        score = joined["score"].to_numpy().astype(np.float64)
        onehot = np.zeros((len(score), len(models)))
        onehot[np.arange(len(score)), code] = 1.0
        if proto.rules == V01:  # columns: models, baseline (+ln 10 on side A), style
            x = np.column_stack([-LN10 * onehot, np.full(len(score), LN10), style])
            s, scale, ridge = 1.0 - score, 2.0, 1.0

            def rate(w: np.ndarray, k: int = len(models)) -> np.ndarray:
                return 1.0 / (1.0 + 10.0 ** (w[k] - w[:k]))
        else:  # the baseline's column is minus the others: fixed at 0
            x = np.column_stack([onehot, style])
            s, scale, ridge = score, 1.0, 0.0

            def rate(w: np.ndarray, k: int = len(models)) -> np.ndarray:
                return expit(w[:k])

        full = _fit(x, s, np.ones(len(score)), scale, ridge)
        rng = np.random.RandomState(seed)
        idx = rng.randint(0, len(score), size=(rounds, len(score))) if proto.rules != V01 else None
        boot = np.empty((rounds, len(models)))
        for r in range(rounds):
            draw = rng.choice(len(score), size=len(score), replace=True) if idx is None else idx[r]
            boot[r] = rate(
                _fit(x, s, np.bincount(draw, minlength=len(score)).astype(float), scale, ridge)
            )
        meta[str(category)]["coefficients"] = (
            dict(zip(kept, np.round(full[-len(kept) :], 4).tolist())) if kept else {}
        )
        point = rate(full)
        for m, model in enumerate(models):
            if proto.rules == V01:
                value = float(point[m])
                bounds = (
                    [float(expit(v)) for v in _quantiles(_logit(boot[:, m]), (lo, hi))]
                    if rounds
                    else [np.nan] * 2
                )
            else:
                value, *bounds = (
                    _quantiles(boot[:, m], (0.5, lo, hi))
                    if rounds
                    else [float(point[m]), np.nan, np.nan]
                )
            out.append(
                {
                    "category": category,
                    "model": model,
                    "baseline": baseline,
                    "sc_win_rate": value,
                    "sc_lower": bounds[0],
                    "sc_upper": bounds[1],
                    "sc_rows": int((code == m).sum()),
                }
            )
    schema = {
        "category": pl.String,
        "model": pl.String,
        "baseline": pl.String,
        "sc_win_rate": pl.Float64,
        "sc_lower": pl.Float64,
        "sc_upper": pl.Float64,
        "sc_rows": pl.Int64,
    }
    return pl.DataFrame(out, schema=schema), meta
