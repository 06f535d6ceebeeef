"""The bench board keeps every game accounted for: a model whose games were all unparsed
keeps its row (null score, its counts), the style-controlled win rate says how many rows it
was fitted on and refuses a model whose answers lack style features, the mean answer
tokens are per question category. Hand-built judgment sets, counts worked out here."""

from __future__ import annotations

import polars as pl
import pytest

from arena_assets.judging.metrics import bench_leaderboard
from arena_assets.judging.summary import pairwise_summary
from arena_assets.judging.verdicts import game_positions, judgment_frame

BASE = "base"


def _games(
    model: str,
    verdicts: list[tuple[str | None, str | None]],
    category: str | None = None,
    start: int = 0,
) -> list[dict]:
    rows = []
    for q, pair in enumerate(verdicts, start=start):
        for (g, a, b), v in zip(game_positions(model, BASE), pair):
            rows.append(
                {
                    "question_id": f"q{q}",
                    "category": category,
                    "model": model,
                    "baseline": BASE,
                    "judge": "j",
                    "game": g,
                    "model_a": a,
                    "model_b": b,
                    "judgment": f"[[{v}]]" if v else "no label",
                    "verdict": v,
                }
            )
    return rows


def _features(
    models: list[str], questions: int, tokens: dict[str, int] | None = None
) -> pl.DataFrame:
    rows = []
    for m in models:
        for q in range(questions):
            t = (tokens or {}).get(m, 100) + 7 * (q % 5) + (13 if m == BASE else 0)
            k = sum(map(ord, m))  # each model its own markdown habits
            rows.append(
                {
                    "question_id": f"q{q}",
                    "model": m,
                    "answer_tokens": t,
                    "header_count": (q + k) % 3,
                    "list_count": (q + len(m)) % 4,
                    "bold_count": (q * k) % 3,
                }
            )
    return pl.DataFrame(rows)


def test_a_model_whose_games_were_all_unparsed_keeps_its_row_and_counts() -> None:
    ok = _games("good", [("B>A", "A>B"), ("A=B", "B>A"), ("B>>A", "A=B")])
    lost = _games("mute", [(None, None)] * 3)
    frame = judgment_frame(ok + lost)
    for protocol in ("arena-hard-v0.1", "arena-hard-v2"):
        table = pairwise_summary(frame, protocol=protocol, rounds=20)
        assert table["games"].sum() == frame.height  # counts in = counts out
        mute = table.filter(pl.col("model") == "mute").row(0, named=True)
        assert mute["win_rate"] is None and mute["lower"] is None and mute["upper"] is None
        assert (mute["games"], mute["unparsed"], mute["dropped_games"]) == (6, 6, 6)
        assert mute["baseline"] == BASE and mute["protocol"] == protocol
        assert table.filter(pl.col("model") == "good")["win_rate"][0] is not None
    meta: dict = {}
    board = bench_leaderboard(frame, rounds=10, meta=meta)
    assert board.filter(pl.col("model") == "mute")["win_rate"][0] is None
    assert meta["models_without_win_rate"] == 1
    assert meta["without_win_rate"] == {
        "arena-hard-v0.1": {"mute": "6 games: 6 unparsed, 6 dropped"}
    }


def _three_models(n: int = 30) -> pl.DataFrame:
    pattern = [("B>A", "A>B"), ("A>B", "A=B"), ("B>>A", "B>A"), ("A=B", "A>B"), ("A>B", "B>A")]
    rows = []
    for i, m in enumerate(("alpha", "beta", "gamma")):
        rows += _games(m, [pattern[(q + i) % 5] for q in range(n)])
    return judgment_frame(rows)


def test_style_control_reports_its_rows_and_meta_per_category() -> None:
    frame = _three_models()
    feats = _features(
        ["alpha", "beta", "gamma", BASE], 30, {"alpha": 300, "beta": 100, "gamma": 50}
    )
    meta: dict = {}
    board = bench_leaderboard(frame, feats, rounds=10, meta=meta)
    rows = {m: n for m, n in board.select("model", "sc_rows").iter_rows() if m != BASE}
    # v0.1's expanded rows: 60 games each, a strong verdict three times
    strong = {
        m: int(frame.filter((pl.col("model") == m) & pl.col("verdict").str.contains(">>")).height)
        for m in rows
    }
    assert rows == {m: 60 + 2 * strong[m] for m in rows}
    style = meta["style_control"]["arena-hard-v0.1"]
    assert set(style["coefficients"]) == {"token_len", "header_count", "list_count", "bold_count"}
    assert style["rows_without_features"] == 0 and style["features_left_out"] == []
    assert style["models_left_out"] == {}


def test_a_model_with_partial_style_features_gets_no_style_controlled_rate() -> None:
    frame = _three_models()
    feats = _features(
        ["alpha", "beta", "gamma", BASE], 30, {"alpha": 300, "beta": 100, "gamma": 50}
    )
    partial = feats.filter(~((pl.col("model") == "gamma") & (pl.col("question_id") == "q4")))
    meta: dict = {}
    board = bench_leaderboard(frame, partial, rounds=10, meta=meta)
    gamma = board.filter(pl.col("model") == "gamma").row(0, named=True)
    assert gamma["sc_win_rate"] is None and gamma["sc_lower"] is None and gamma["sc_rows"] == 0
    assert gamma["win_rate"] is not None  # the plain score does not need the features
    style = meta["style_control"]["arena-hard-v0.1"]
    assert style["rows_without_features"] == 2  # q4's two games (no strong verdict there)
    gamma_rows = (
        60
        + 2
        * frame.filter((pl.col("model") == "gamma") & pl.col("verdict").str.contains(">>")).height
    )
    assert f"2 of {gamma_rows} rows" in style["models_left_out"]["gamma"]
    # the others are fitted as if gamma had not been judged at all
    alone = bench_leaderboard(frame.filter(pl.col("model") != "gamma"), feats, rounds=10)
    for m in ("alpha", "beta"):
        got = board.filter(pl.col("model") == m).row(0, named=True)
        want = alone.filter(pl.col("model") == m).row(0, named=True)
        assert got["sc_win_rate"] == pytest.approx(want["sc_win_rate"], abs=1e-9)
        assert got["sc_rows"] == want["sc_rows"] > 0


def test_mean_answer_tokens_are_per_question_category() -> None:
    rows = _games(
        "alpha", [("B>A", "A>B"), ("A>B", "B>A"), ("A=B", "A=B")], category="hard_prompt"
    ) + _games(
        "alpha",
        [("B>A", "A=B"), ("A>B", "A>B"), ("A=B", "B>A")],
        category="creative_writing",
        start=3,
    )
    frame = judgment_frame(rows)
    feats = pl.DataFrame(
        [
            {
                "question_id": f"q{q}",
                "model": m,
                "answer_tokens": (100 if q < 3 else 1000) + q,
                "header_count": 0,
                "list_count": 0,
                "bold_count": 0,
            }
            for m in ("alpha", BASE)
            for q in range(6)
        ]
    )
    board = bench_leaderboard(frame, feats, protocol="arena-hard-v2", rounds=5, style_control=False)
    tokens = {(c, m): t for c, m, t in board.select("category", "model", "avg_tokens").iter_rows()}
    assert tokens[("hard_prompt", "alpha")] == pytest.approx(101.0)
    assert tokens[("creative_writing", "alpha")] == pytest.approx(1004.0)
    assert tokens[("creative_writing", BASE)] == pytest.approx(1004.0)
