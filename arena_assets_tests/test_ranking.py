"""Bradley-Terry ranking library: exactness, intervals, ties, anchors, style control, real files."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson
import polars as pl
import pytest
from scipy.optimize import minimize

from arena_assets.ranking import (
    aggregate,
    fit_bt,
    fit_style_controlled,
    read_battles,
    sample_bt_battles,
    true_ratings,
)
from arena_assets.ranking.leaderboard import rank_upper_bounds

FACTOR = 400 / math.log(10)


def per_battle_reference(battles: pl.DataFrame, models: list[str]) -> np.ndarray:
    """Independent fit: unaggregated rows, one per battle, scipy BFGS on the logistic loss.

    A tie is a row with target 0.5 (= half a win each side). Ratings mean 1000.
    """
    idx = {m: i for i, m in enumerate(models)}
    a = np.array([idx[m] for m in battles["model_a"]])
    b = np.array([idx[m] for m in battles["model_b"]])
    y = (
        battles["winner"]
        .replace_strict({"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5})
        .to_numpy()
    )
    k = len(models)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        beta = np.concatenate([[0.0], theta])  # model 0 fixed: a different parametrization
        d = beta[a] - beta[b]
        p = 1 / (1 + np.exp(-d))
        f = -(y * -np.logaddexp(0, -d) + (1 - y) * -np.logaddexp(0, d)).sum()
        r = p - y
        g = np.bincount(a, r, k) - np.bincount(b, r, k)
        return f, g[1:]

    res = minimize(
        loss, np.zeros(k - 1), jac=True, method="BFGS", options={"gtol": 1e-9, "maxiter": 10000}
    )
    beta = np.concatenate([[0.0], res.x])
    return FACTOR * (beta - beta.mean()) + 1000


@pytest.fixture(scope="module")
def synthetic() -> pl.DataFrame:
    ratings = {"alpha": 1150, "beta": 1080, "gamma": 1000, "delta": 960, "eps": 900, "zeta": 1020}
    return sample_bt_battles(ratings, 6000, seed=11, tie_rate=0.2)


def test_ratings_equal_per_battle_logistic_regression(synthetic: pl.DataFrame) -> None:
    board = fit_bt(synthetic)
    ref = per_battle_reference(synthetic, board.models)
    ours = board.table.sort("model")["rating"].to_numpy()
    order = np.argsort(board.models)
    assert np.abs(ours - ref[order]).max() < 1e-3
    assert board.table["rating"].mean() == pytest.approx(1000, abs=1e-9)


def test_sklearn_logistic_regression_agrees(synthetic: pl.DataFrame) -> None:
    sklearn = pytest.importorskip("sklearn.linear_model")
    decisive = synthetic.filter(pl.col("winner") != "tie")
    board = fit_bt(decisive)
    idx = {m: i for i, m in enumerate(board.models)}
    a = np.array([idx[m] for m in decisive["model_a"]])
    b = np.array([idx[m] for m in decisive["model_b"]])
    x = np.zeros((len(a), len(idx)))
    x[np.arange(len(a)), a] = 1
    x[np.arange(len(a)), b] = -1
    y = (decisive["winner"] == "model_a").to_numpy().astype(int)
    lr = sklearn.LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-12, max_iter=10_000)
    coef = lr.fit(x, y).coef_[0]
    ref = FACTOR * (coef - coef.mean()) + 1000
    rating = dict(zip(board.table["model"], board.table["rating"]))
    assert max(abs(rating[m] - ref[i]) for m, i in idx.items()) < 1e-3


def test_two_models_ties_half_closed_form() -> None:
    battles = pl.DataFrame(
        {
            "model_a": ["x"] * 7 + ["y"] * 5 + ["x"] * 4 + ["y"] * 2,
            "model_b": ["y"] * 7 + ["x"] * 5 + ["y"] * 4 + ["x"] * 2,
            "winner": ["model_a"] * 7 + ["model_a"] * 5 + ["tie"] * 4 + ["tie (bothbad)"] * 2,
        }
    )
    # x: 7 wins, y: 5 wins, 6 ties -> x 10 "wins", y 8
    board = fit_bt(battles)
    r = dict(zip(board.table["model"], board.table["rating"]))
    assert r["x"] - r["y"] == pytest.approx(400 * math.log10(10 / 8), abs=1e-9)
    dropped = fit_bt(battles, tie_mode="drop_bothbad")  # x 9, y 7
    r = dict(zip(dropped.table["model"], dropped.table["rating"]))
    assert r["x"] - r["y"] == pytest.approx(400 * math.log10(9 / 7), abs=1e-9)
    decisive = fit_bt(battles, tie_mode="drop")
    assert decisive.table["battles"].to_list() == [12, 12]


def test_anchor_pins_rating_and_keeps_differences(synthetic: pl.DataFrame) -> None:
    plain = fit_bt(synthetic)
    anchored = fit_bt(synthetic, anchor=("gamma", 1200.0))
    a = dict(zip(anchored.table["model"], anchored.table["rating"]))
    p = dict(zip(plain.table["model"], plain.table["rating"]))
    assert a["gamma"] == pytest.approx(1200.0, abs=1e-9)
    for m in p:
        assert a[m] - a["gamma"] == pytest.approx(p[m] - p["gamma"], abs=1e-9)
    # the anchor has no uncertainty of its own under anchoring
    row = anchored.table.filter(pl.col("model") == "gamma")
    assert row["upper"][0] - row["lower"][0] == pytest.approx(0, abs=1e-6)


def test_bootstrap_is_seeded_and_reproducible(synthetic: pl.DataFrame) -> None:
    one = fit_bt(synthetic, ci="bootstrap", bootstrap_rounds=120, seed=5)
    two = fit_bt(synthetic, ci="bootstrap", bootstrap_rounds=120, seed=5)
    other = fit_bt(synthetic, ci="bootstrap", bootstrap_rounds=120, seed=6)
    assert one.bootstrap.shape == (120, 6)
    assert one.bootstrap.tobytes() == two.bootstrap.tobytes()
    assert not np.array_equal(one.bootstrap, other.bootstrap)
    assert set(one.table["ci_method"]) == {"bootstrap"} and set(one.table["ci_level"]) == {0.95}
    # bootstrap and sandwich widths agree roughly on well-posed data
    sand = fit_bt(synthetic)
    w_boot = (one.table["upper"] - one.table["lower"]).to_numpy()
    w_sand = (sand.table["upper"] - sand.table["lower"]).to_numpy()
    assert np.all(np.abs(w_boot / w_sand - 1) < 0.35)


def test_bootstrap_fits_are_exact(synthetic: pl.DataFrame) -> None:
    """Each bootstrap round equals a fresh fit of its resampled counts."""
    from arena_assets.ranking.leaderboard import BOOTSTRAP_CHUNK
    from arena_assets.ranking.newton import fit_pairs

    agg = aggregate(synthetic)
    board = fit_bt(synthetic, ci="bootstrap", bootstrap_rounds=3, seed=9)
    seq = np.random.SeedSequence(9).spawn(1)[0]
    assert BOOTSTRAP_CHUNK >= 3
    draw = (
        np.random.default_rng(seq)
        .multinomial(agg.n_battles, agg.counts.ravel() / agg.n_battles, size=3)
        .reshape(3, -1, 3)
    )
    for r in range(3):
        beta, _ = fit_pairs(
            agg.left,
            agg.right,
            draw[r].sum(1).astype(float),
            draw[r, :, 0] + 0.5 * draw[r, :, 2],
            6,
            tol=1e-13,
        )
        assert np.abs(FACTOR * beta + 1000 - board.bootstrap[r]).max() < 1e-5


def test_rank_upper_bound_definition() -> None:
    lower = np.array([10.0, 8.0, 5.0, 1.0])
    upper = np.array([12.0, 11.0, 9.0, 6.0])
    # model 3 (upper 6): lower bounds above 6 are 10, 8 -> rank_ub 3
    assert rank_upper_bounds(lower, upper).tolist() == [1, 1, 2, 3]


def test_board_columns_and_winrates(synthetic: pl.DataFrame) -> None:
    board = fit_bt(synthetic)
    t = board.table
    assert {
        "model",
        "rating",
        "lower",
        "upper",
        "rank",
        "rank_ub",
        "battles",
        "ci_method",
        "ci_level",
    } <= set(t.columns)
    assert t["battles"].sum() == 2 * synthetic.height
    assert (t["rank_ub"] <= t["rank"]).all()
    wr = board.winrates
    assert wr.height == 6 * 5
    both = wr.join(wr, left_on=["model_a", "model_b"], right_on=["model_b", "model_a"])
    assert np.allclose(both["observed"] + both["observed_right"], 1.0)
    assert np.allclose(both["predicted"] + both["predicted_right"], 1.0)
    assert (both["battles"] == both["battles_right"]).all()
    assert wr["battles"].sum() == 2 * synthetic.height
    # the MLE matches the observed total score of each model (a property of BT's optimum)
    g = wr.group_by("model_a").agg(
        (pl.col("observed") * pl.col("battles")).sum().alias("obs"),
        (pl.col("predicted") * pl.col("battles")).sum().alias("pred"),
    )
    assert np.allclose(g["obs"], g["pred"], atol=1e-4)


def _coverage(ci: str, seeds: range, rounds: int = 0) -> float:
    rng = np.random.default_rng(123)
    planted = rng.normal(1000, 80, 12)
    truth = true_ratings(planted)
    hits = total = 0
    for seed in seeds:
        battles = sample_bt_battles(planted, 3000, seed=seed)
        board = fit_bt(battles, ci=ci, bootstrap_rounds=rounds, seed=seed)
        t = board.table
        true = np.array([truth[m] for m in t["model"]])
        hits += int(((t["lower"].to_numpy() <= true) & (true <= t["upper"].to_numpy())).sum())
        total += t.height
    return hits / total


def test_sandwich_intervals_cover_truth() -> None:
    assert 0.90 <= _coverage("sandwich", range(60)) <= 0.99


def test_bootstrap_intervals_cover_truth() -> None:
    assert 0.90 <= _coverage("bootstrap", range(30), rounds=200) <= 0.99


def test_min_battles_drops_rare_models(synthetic: pl.DataFrame) -> None:
    rare = pl.DataFrame({"model_a": ["rare"], "model_b": ["alpha"], "winner": ["model_a"]})
    board = fit_bt(pl.concat([synthetic, rare]), min_battles=10)
    assert "rare" not in board.models and len(board.models) == 6


def test_style_control_recovers_planted_verbosity() -> None:
    ratings = {f"m{i}": 1000 + 12 * i for i in range(8)}
    verbose = {"m0": {"sum_assistant_tokens": 400.0}}
    battles = sample_bt_battles(
        ratings, 40_000, seed=3, style_coef={"sum_assistant_tokens": 0.4}, model_style=verbose
    )
    plain = fit_bt(battles)
    styled = fit_style_controlled(battles)
    coef = dict(zip(styled.coefficients["feature"], styled.coefficients["coef"]))
    assert coef["sum_assistant_tokens"] == pytest.approx(0.4, abs=0.06)
    assert all(abs(coef[f]) < 0.06 for f in ("header_count", "list_count", "bold_count"))
    row = styled.coefficients.filter(pl.col("feature") == "sum_assistant_tokens")
    assert row["lower"][0] < 0.4 < row["upper"][0]
    assert plain.table["model"][0] == "m0"  # verbosity wins the plain board
    m0 = styled.table.filter(pl.col("model") == "m0")
    assert m0["rank"][0] >= 6 and m0["rank_change"][0] <= -5
    truth = true_ratings(ratings)
    assert m0["lower"][0] - 5 <= truth["m0"] <= m0["upper"][0] + 5


def test_style_control_bootstrap_seeded() -> None:
    battles = sample_bt_battles(
        {"a": 1000, "b": 1040, "c": 980}, 3000, seed=4, style_coef={"bold_count": 0.3}
    )
    one = fit_style_controlled(battles, ci="bootstrap", bootstrap_rounds=20, seed=1)
    two = fit_style_controlled(battles, ci="bootstrap", bootstrap_rounds=20, seed=1)
    assert one.bootstrap.tobytes() == two.bootstrap.tobytes()
    assert (one.coefficients["lower"] < one.coefficients["upper"]).all()


def test_style_control_needs_columns(synthetic: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="style control needs columns"):
        fit_style_controlled(synthetic)


def test_read_parquet_and_category(tmp_path: Path, synthetic: pl.DataFrame) -> None:
    frame = synthetic.with_columns(
        is_code=pl.int_range(pl.len()) % 3 == 0,
        categories=pl.when(pl.int_range(pl.len()) % 2 == 0)
        .then(pl.lit(["math"]))
        .otherwise(pl.lit(["creative"])),
    )
    path = tmp_path / "b.parquet"
    frame.write_parquet(path)
    assert read_battles(path).height == frame.height
    assert read_battles(path, category="is_code").height == 2000
    assert read_battles(path, category="math").height == 3000


def test_real_2023_votes_gpt4_first(real_data: Path) -> None:
    battles = read_battles(real_data / "battles" / "votes_2023_hard_english_with_prompts.jsonl")
    assert battles.height == 1135
    board = fit_bt(battles)
    assert board.table["model"][0] == "gpt-4"
    assert board.table["battles"].sum() == 2 * 1135


def test_real_2024_clean_battles_with_style_and_category(real_data: Path) -> None:
    path = real_data / "battles" / "clean_battles_2024_full_conversations.jsonl"
    battles = read_battles(path)
    assert battles.height == 100 and battles["model_a"].n_unique() > 20
    assert {"sum_assistant_tokens_a", "bold_count_b"} <= set(battles.columns)
    assert (battles["sum_assistant_tokens_a"] > 0).all()
    refusals = read_battles(path, category="refusal_v0.2")
    assert refusals.height == 12
    # the file's own num_tokens are used, not re-estimated
    first = orjson.loads(path.read_bytes().splitlines()[0])
    counted = sum(m["num_tokens"] for m in first["conversation_a"] if m["role"] == "assistant")
    assert battles["sum_assistant_tokens_a"][0] == counted
    board = fit_bt(battles, bootstrap_rounds=100, ci="bootstrap")
    ratings = board.table["rating"].to_numpy()
    # 100 battles of 49 models: only the strongly connected part is rated, and with
    # numbers of the size such a sample supports (the old ridge fit went -3,884 .. 3,679)
    assert np.isfinite(ratings).all() and ratings.max() - ratings.min() < 1000
    assert {"won_all", "lost_all"} <= set(board.left_out.values())
    assert set(board.table["model"]).isdisjoint(board.left_out)
    assert (
        board.table.height + len(board.left_out)
        == battles["model_a"].append(battles["model_b"]).n_unique()
    )
    assert (board.table["lower"] != 1000.0).all()
    styled = fit_style_controlled(battles)
    assert styled.table.height == board.table.height and styled.left_out == board.left_out


def test_bootstrap_bytes_do_not_depend_on_threads(synthetic: pl.DataFrame) -> None:
    from arena_assets.ranking.leaderboard import bootstrap_betas

    agg = aggregate(synthetic)
    beta = fit_bt(synthetic).beta
    one = bootstrap_betas(agg, beta, 130, seed=3, workers=1)
    two = bootstrap_betas(agg, beta, 130, seed=3, workers=2)
    assert one.tobytes() == two.tobytes()
