"""Arena-Hard-Auto's numbers, reproduced: for each protocol version a small implementation
written here from the anchor's code (v0.1: ``gen_judgment.get_score``,
``show_result.get_battles_from_row``, ``utils_math.compute_mle_elo`` /
``get_bootstrap_result`` / ``construct_style_matrices`` / ``fit_bt`` /
``get_bootstrap_result_style_control`` at commit 0489bf3; v2: ``gen_judgment.get_score``,
``show_result.load_judgments`` / ``print_leaderboard`` /
``print_leaderboard_with_style_features``, ``utils/math_utils.py`` at HEAD) must give our
library's scores to 0.01 points and interval bounds to 0.5 points. Nothing here calls the
library's arithmetic: the reference reads the judgment files in the anchor's layout, fits
its logistic regressions with scipy's BFGS on the anchor's own design matrices, and draws
the anchor's resamples from numpy's RandomState (v0.1 seeds 42; v2 is unseeded upstream,
so both sides take the same seed).

Inputs: the four real v0.1 answer files (``../shared/real/arena_hard_v0.1``, their
``conv_metadata`` for style control) judged by a length-biased judge written here, the
seven real published judgment records, and synthetic judgment sets; all with about 1 %
unparsed games, ties, strong verdicts both ways, two-label texts and single-bracket labels
(which the two versions read differently).
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from arena_assets.judging.answers import import_arena_hard_answers
from arena_assets.judging.metrics import bench_leaderboard
from arena_assets.judging.readers import import_arena_hard_judgments

V01, V2 = "arena-hard-v0.1", "arena-hard-v2"
BASE = "gpt-4-0314"
CREATIVE_BASE = "claude-3-haiku-20240307"
SCORE_TOL, BOUND_TOL = 1e-4, 5e-3  # 0.01 and 0.5 points of win rate


# ---- the anchor, re-implemented -------------------------------------------------------------
def ref_score_v01(text: str):
    matches = [m for m in re.findall(r"\[\[([AB<>=]+)\]\]", text) if m != ""]
    return matches[0].strip("\n") if len(set(matches)) == 1 else None


def ref_score_v2(text: str):
    for pattern in (r"\[\[([AB<>=]+)\]\]", r"\[([AB<>=]+)\]"):
        matches = [m for m in re.findall(pattern, text.upper()) if m != ""]
        if len(set(matches)) > 0:
            return matches[-1].strip("\n")
    return None


G1 = {
    "A=B": ("tie", 1),
    "A>B": ("model_a", 1),
    "A>>B": ("model_a", 3),
    "B>A": ("model_b", 1),
    "B>>A": ("model_b", 3),
}
G2 = {
    "A=B": ("tie", 1),
    "A>B": ("model_b", 1),
    "A>>B": ("model_b", 3),
    "B>A": ("model_a", 1),
    "B>>A": ("model_a", 3),
}
L2S = {
    "A>B": [1],
    "A>>B": [1] * 3,
    "A=B": [0.5],
    "A<<B": [0] * 3,
    "A<B": [0],
    "B>A": [0],
    "B>>A": [0] * 3,
    "B=A": [0.5],
    "B<<A": [1] * 3,
    "B<A": [1],
}


def ref_battles_v01(records):
    """get_battles_from_row over the records (files in name order): model_a is the baseline."""
    out = []
    for rec in records:
        for game, table in zip(rec["games"], (G1, G2)):
            if game["score"] in table:
                winner, weight = table[game["score"]]
                out += [(rec["question_id"], rec["model"], winner)] * weight
    return out


def _logistic(x, y, ridge=0.0, init=0.0):
    def f(w):
        z = x @ w
        return np.sum(np.logaddexp(0, z) - y * z) + 0.5 * ridge * w @ w

    def g(w):
        return x.T @ (1 / (1 + np.exp(-(x @ w))) - y) + ridge * w

    return minimize(
        f, np.full(x.shape[1], init), jac=g, method="BFGS", options={"gtol": 1e-10, "maxiter": 5000}
    ).x


def ref_mle_winrates(battles, models, baseline):
    """compute_mle_elo (duplicated rows, a tie = one win each way, no penalty), then the
    win rate against ``baseline`` (model_a of every battle) as predict_win_rate gives it."""
    idx = {m: i for i, m in enumerate(models)}
    n = len(battles)
    x = np.zeros((2 * n, len(models)))
    y = np.zeros(2 * n)
    for i, (_, model, winner) in enumerate(battles):
        for row in (i, i + n):
            x[row, idx[baseline]] = np.log(10)
            x[row, idx[model]] = -np.log(10)
        y[i] = 1.0 if winner in ("model_a", "tie") else 0.0
        y[i + n] = 1.0 if winner == "model_a" else 0.0
    keep = [j for j, m in enumerate(models) if m != baseline]  # gauge: baseline at 0
    w = np.zeros(len(models))
    w[keep] = _logistic(x[:, keep], y)
    elo = 400 * w + 1000
    return {m: elo[idx[m]] for m in models}


def ref_v01(records, baseline=BASE):
    battles = ref_battles_v01(records)
    models = list(dict.fromkeys([baseline] + [m for _, m, _ in battles]))
    point = ref_mle_winrates(battles, models, baseline)
    rs = np.random.RandomState(42)
    boots = []
    for _ in range(100):
        draw = rs.choice(len(battles), size=len(battles), replace=True)
        boots.append(ref_mle_winrates([battles[i] for i in draw], models, baseline))
    out = {}
    for m in models:
        if m == baseline:
            continue
        rate = lambda e: 1 / (1 + 10 ** ((1000 - e) / 400))
        out[m] = (
            rate(point[m]),
            rate(np.percentile([b[m] for b in boots], 2.5)),
            rate(np.percentile([b[m] for b in boots], 97.5)),
        )
    return out


def ref_rows_v2(records):
    """load_judgments: both games scored or the record goes; game 2's copies first."""
    rows = []
    for rec in records:
        g = rec["games"]
        if g[0] is None or g[1] is None or g[0]["score"] is None or g[1]["score"] is None:
            continue
        scores = L2S[g[1]["score"]] + [1 - s for s in L2S[g[0]["score"]]]
        rows += [(rec["category"], rec["uid"], rec["model"], s) for s in scores]
    return rows


def ref_v2(records, category):
    rows = [r for r in ref_rows_v2(records) if r[0] == category]
    by_model = {}
    for _, _, m, s in rows:
        by_model.setdefault(m, []).append(s)
    rs = np.random.RandomState(42)
    boots = {m: [] for m in by_model}
    for _ in range(100):
        for m in sorted(by_model):  # groupby(model).sample: groups in key order
            s = np.array(by_model[m])
            boots[m].append(s[rs.choice(len(s), size=len(s), replace=True)].mean())
    return {m: (np.mean(b), np.quantile(b, 0.05), np.quantile(b, 0.95)) for m, b in boots.items()}


def ref_style_v01(records, meta):
    """construct_style_matrices (baseline as model_a, (a-b)/(a+b+1), np.std), fit_bt
    (sklearn's default L2, C=1), get_bootstrap_result_style_control's resampling."""
    battles = ref_battles_v01(records)
    models = list(dict.fromkeys([BASE] + [m for _, m, _ in battles]))
    idx = {m: i for i, m in enumerate(models)}
    k, p = len(battles), len(models)
    x = np.zeros((2 * k, p + 4))
    y = np.zeros(2 * k)
    style = np.zeros((k, 4))
    for i, (q, model, winner) in enumerate(battles):
        a, b = meta[BASE][q], meta[model][q]
        style[i] = [(a[f] - b[f]) / (a[f] + b[f] + 1) for f in range(4)]
        for row in (i, i + k):
            x[row, idx[BASE]] = np.log(10)
            x[row, idx[model]] = -np.log(10)
        y[i] = 1.0 if winner in ("model_a", "tie") else 0.0
        y[i + k] = 1.0 if winner == "model_a" else 0.0
    doubled = np.vstack([style, style])
    x[:, p:] = (doubled - doubled.mean(axis=0)) / doubled.std(axis=0)
    tie = np.array([w == "tie" for _, _, w in battles])

    def elo(w):  # fit_bt: 400 * coef + 1000, the baseline moved to 1114
        e = 400 * w[:p] + 1000
        return {m: e[idx[m]] - e[idx[BASE]] + 1114 for m in models if m != BASE}

    def rate(e):
        return 1 / (1 + 10 ** ((1114 - e) / 400))

    point = elo(_logistic(x, y, ridge=1.0))
    rs = np.random.RandomState(42)
    boots = []
    for _ in range(100):
        draw = rs.choice(list(range(k)), size=k, replace=True)
        nontie = draw[~tie[draw]]
        ties = np.concatenate([draw[tie[draw]], draw[tie[draw]] + k])
        xb = np.concatenate([x[nontie], x[nontie], x[ties]])
        yb = np.concatenate([y[nontie], y[nontie], y[ties]])
        boots.append(elo(_logistic(xb, yb, ridge=1.0)))
    return {
        m: (
            rate(point[m]),
            rate(np.percentile([b[m] for b in boots], 2.5)),
            rate(np.percentile([b[m] for b in boots], 97.5)),
        )
        for m in point
    }


def ref_style_v2(records, meta, category, baseline):
    """print_leaderboard_with_style_features: length (m-b)/(m+b), markdown densities
    (m-b)/(m+b+1), sample sd, one-hot +1 model / -1 baseline, BCE without penalty,
    randint bootstrap, median and 5 / 95 % quantiles."""
    rows = [r for r in ref_rows_v2(records) if r[0] == category]
    models = sorted({m for _, _, m, _ in rows} | {baseline})
    idx = {m: i for i, m in enumerate(models)}
    feats = []
    for _, q, m, _ in rows:
        a, b = meta[m][q], meta[baseline][q]
        length = (a[0] - b[0]) / (a[0] + b[0])
        da = [v / (a[0] + 1) for v in a[1:]]
        db = [v / (b[0] + 1) for v in b[1:]]
        feats.append([length] + [(u - v) / (u + v + 1) for u, v in zip(da, db)])
    feats = np.array(feats)
    feats = (feats - feats.mean(axis=0)) / feats.std(axis=0, ddof=1)
    onehot = np.zeros((len(rows), len(models)))
    for i, (_, _, m, _) in enumerate(rows):
        onehot[i, idx[m]], onehot[i, idx[baseline]] = 1, -1
    x = np.hstack([onehot, feats])
    y = np.array([s for *_, s in rows], dtype=float)
    draws = np.random.RandomState(42).randint(0, len(rows), size=(100, len(rows)))
    table = []
    for draw in draws:
        w = _logistic(x[draw], y[draw], init=0.5)
        table.append(
            {m: np.exp(w[idx[m]]) / (np.exp(w[idx[m]]) + np.exp(w[idx[baseline]])) for m in models}
        )
    return {
        m: tuple(np.quantile([t[m] for t in table], q) for q in (0.5, 0.05, 0.95))
        for m in models
        if m != baseline
    }


# ---- judgment sets -----------------------------------------------------------------------------
def _text(label: str | None, u: float) -> str:
    """A judge's reply: mostly one label; some restate an option first (two labels), some
    use single brackets or lower case, some end without any label."""
    if label is None:
        return "Both answers have merits; I could not settle on a verdict."
    if u < 0.03:
        return f"Compared with [[A=B]] at first sight, on reflection: [[{label}]]"
    if u < 0.05:
        return f"My final verdict is [{label.lower()}]."
    return f"My own answer first.\n...\nMy final verdict is: [[{label}]]"


def _label(d: float) -> str:
    if abs(d) < 0.25:
        return "A=B"
    return ("A>>B" if d >= 1.1 else "A>B") if d > 0 else ("B>>A" if d <= -1.1 else "B>A")


def _judge_files(root: Path, tokens: dict, questions: list[str], category: dict, seed: int) -> dict:
    """Both layouts of one set of judge texts: {version: folder}. The verdict leans to the
    longer answer (a length-biased judge) with noise; 1 % of texts hold no label."""
    rng = np.random.RandomState(seed)
    out = {}
    plan = []
    for model in sorted(m for m in tokens if m != BASE):
        for q in questions:
            base = CREATIVE_BASE if category[q] == "creative_writing" else BASE
            if model == base:
                continue
            texts = []
            for game in (1, 2):
                sign = 1 if game == 2 else -1  # candidate is A in game 2
                d = (
                    sign
                    * (np.tanh((tokens[model][q] - tokens[base][q]) / 350) + rng.normal(0, 0.7))
                    + 0.1
                )
                label = None if rng.random_sample() < 0.01 else _label(d)
                texts.append(_text(label, rng.random_sample()))
            plan.append((model, q, base, texts))
    for version in (V01, V2):
        folder = root / version / "model_judgment" / "judge-x"
        folder.mkdir(parents=True)
        for model in sorted({p[0] for p in plan}):
            with open(folder / f"{model}.jsonl", "w") as fh:
                for m, q, base, texts in plan:
                    if m != model:
                        continue
                    if version == V01:
                        if base != BASE:
                            continue
                        rec = {
                            "question_id": q,
                            "model": m,
                            "judge": "judge-x",
                            "games": [
                                {"user_prompt": "", "judgment": t, "score": ref_score_v01(t)}
                                for t in texts
                            ],
                        }
                    else:
                        rec = {
                            "uid": q,
                            "category": category[q],
                            "judge": "judge-x",
                            "model": m,
                            "baseline": base,
                            "games": [
                                {"score": ref_score_v2(t), "judgment": {"answer": t}, "prompt": []}
                                for t in texts
                            ],
                        }
                    fh.write(json.dumps(rec) + "\n")
        out[version] = folder
    return out


def _records(folder: Path) -> list[dict]:
    return [
        json.loads(line)
        for f in sorted(folder.glob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]


DIFFS: dict[str, float] = {}  # largest difference seen per column (printed with -s)


def _compare(ours, ref: dict, cols: tuple[str, str, str]) -> int:
    got = {r["model"]: r for r in ours.to_dicts()}
    assert ref and set(ref) <= set(got)
    for model, want in ref.items():
        for col, value in zip(cols, want):
            tol = SCORE_TOL if col in ("win_rate", "sc_win_rate") else BOUND_TOL
            assert got[model][col] == pytest.approx(value, abs=tol), (
                model,
                col,
                got[model][col],
                value,
            )
            DIFFS[col] = max(DIFFS.get(col, 0.0), abs(got[model][col] - value))
    print(f"compared {len(ref)} models: largest differences so far {DIFFS}")
    return len(ref)


def _check(folders: dict, meta: dict | None, features) -> None:
    recs01, recs2 = _records(folders[V01]), _records(folders[V2])
    scores = [g["score"] for r in recs01 for g in r["games"]]
    assert 0 < scores.count(None) < 0.06 * len(scores)  # unparsed games: no label, or two
    assert {"A>>B", "B>>A", "A=B"} <= set(scores)
    ours01 = bench_leaderboard(
        import_arena_hard_judgments(folders[V01]),
        features,
        protocol=V01,
        style_control=features is not None,
    )
    assert _compare(ours01, ref_v01(recs01), ("win_rate", "lower", "upper")) >= 1
    if meta is not None:
        _compare(ours01, ref_style_v01(recs01, meta), ("sc_win_rate", "sc_lower", "sc_upper"))
    judged2 = import_arena_hard_judgments(folders[V2])
    ours2 = bench_leaderboard(judged2, features, protocol=V2, style_control=features is not None)
    for category in sorted(set(judged2["category"])):
        block = ours2.filter(ours2["category"] == category)
        _compare(block, ref_v2(recs2, category), ("win_rate", "lower", "upper"))
        if meta is not None:
            base = CREATIVE_BASE if category == "creative_writing" else BASE
            _compare(
                block,
                ref_style_v2(recs2, meta, category, base),
                ("sc_win_rate", "sc_lower", "sc_upper"),
            )


def test_parsers_match_the_anchor_on_hand_written_texts() -> None:
    from arena_assets.judging.protocol import parse_v01, parse_v2

    cases = [
        "[[A>B]]",
        "x [[A>B]] y [[A>B]]",
        "[[A>B]] then [[B>A]]",
        "[b>>a]",
        "[[a=b]]",
        "[[A<B]]",
        "none",
        "",
        "[[B<<A]] and [A>B]",
        "[[A>>>B]]",
        "[[A>B]]\n[[A=B]]",
    ]
    for text in cases:
        v01 = ref_score_v01(text)
        assert parse_v01(text)[0] == (v01 if v01 in G1 else None), text
        v2 = ref_score_v2(text)
        restated = {"A<<B": "B>>A", "A<B": "B>A", "B=A": "A=B", "B<<A": "A>>B", "B<A": "A>B"}
        assert parse_v2(text) == (restated.get(v2, v2) if v2 in L2S else None), text
    assert parse_v01("no label")[1] is True and parse_v01("[[A>B]] [[B>A]]")[1] is False


def test_scores_and_intervals_on_the_real_answers(real_data, tmp_path) -> None:
    answers = real_data / "arena_hard_v0.1" / "model_answer"
    meta, tokens = {}, {}
    for f in sorted(answers.glob("*.jsonl")):  # conv_metadata as show_result reads it
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            cm = rec["conv_metadata"]
            meta.setdefault(rec["model_id"], {})[rec["question_id"]] = (
                cm["token_len"],
                *(sum(cm[k].values()) for k in ("header_count", "list_count", "bold_count")),
            )
            tokens.setdefault(rec["model_id"], {})[rec["question_id"]] = cm["token_len"]
    features = import_arena_hard_answers(answers)
    questions = sorted(tokens[BASE])
    category = {
        q: "creative_writing" if zlib.crc32(q.encode()) % 4 == 0 else "hard_prompt"
        for q in questions
    }
    _check(_judge_files(tmp_path, tokens, questions, category, seed=5), meta, features)


def test_the_published_judgment_records(real_data) -> None:
    path = real_data / "arena_hard_v0.1" / "model_judgment_sample.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    ours = bench_leaderboard(import_arena_hard_judgments(path), protocol=V01)
    _compare(ours, ref_v01(recs), ("win_rate", "lower", "upper"))


def test_scores_and_intervals_on_synthetic_judgment_sets(tmp_path) -> None:
    import polars as pl

    rng = np.random.RandomState(11)
    models = [BASE, CREATIVE_BASE, "model-b", "model-c"]
    questions = [f"q{i:03d}" for i in range(240)]
    tokens = {m: {q: int(rng.randint(20, 1500)) for q in questions} for m in models}
    meta = {
        m: {
            q: (
                tokens[m][q],
                int(rng.randint(0, 6)),
                int(rng.randint(0, 12)),
                int(rng.randint(0, 8)),
            )
            for q in questions
        }
        for m in models
    }
    features = pl.DataFrame(
        [
            {
                "question_id": q,
                "model": m,
                "token_len": v[0],
                "header_count": v[1],
                "list_count": v[2],
                "bold_count": v[3],
            }
            for m, per in meta.items()
            for q, v in per.items()
        ]
    )
    category = {
        q: "creative_writing" if i % 3 == 0 else "hard_prompt" for i, q in enumerate(questions)
    }
    _check(_judge_files(tmp_path, tokens, questions, category, seed=9), meta, features)
