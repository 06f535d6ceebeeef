"""Battle weights on the boards: a weight column of ones gives exactly the unweighted
numbers (plain fit, sandwich and bootstrap intervals, style control, counted cells), and a
weight counts as that share of a vote."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from arena_assets.ranking.battle_cells import aggregate_cells, battle_cells, rankable_cells
from arena_assets.ranking.boards import arena_boards, board_options
from arena_assets.ranking.leaderboard import fit_bt, leaderboard_from_aggregated
from arena_assets.ranking.style import fit_style_controlled

MODELS = [f"m{i}" for i in range(6)]
STYLE = ("sum_assistant_tokens", "header_count", "list_count", "bold_count")


def _battles(n: int = 4000, seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    strength = np.linspace(-0.8, 0.8, len(MODELS))
    a = rng.integers(0, len(MODELS), n)
    b = (a + rng.integers(1, len(MODELS), n)) % len(MODELS)
    p = 1 / (1 + np.exp(strength[b] - strength[a]))
    u = rng.random(n)
    winner = np.where(u < 0.1, "tie", np.where(u < 0.1 + 0.9 * p, "model_a", "model_b"))
    return pl.DataFrame(
        {
            "model_a": np.array(MODELS)[a],
            "model_b": np.array(MODELS)[b],
            "winner": winner,
            "keep": rng.random(n) > 0.05,
            "removed_reason": None,
            "language": rng.choice(["en", "de"], n),
            **{f"{f}_{s}": rng.integers(1, 60, n) for f in STYLE for s in "ab"},
        }
    ).with_columns(
        pl.when(pl.col("keep")).then(None).otherwise(pl.lit("daily_cap")).alias("removed_reason")
    )


def test_weights_of_one_give_the_unweighted_boards_exactly() -> None:
    battles = _battles()
    ones = battles.with_columns(weight=pl.lit(1.0))
    options = board_options(bootstrap_rounds=30, min_battles=10)
    for ci in ("sandwich", "bootstrap"):
        plain = fit_bt(battles.select("model_a", "model_b", "winner"), options, ci=ci)
        weighted = fit_bt(ones.select("model_a", "model_b", "winner", "weight"), options, ci=ci)
        assert plain.table.equals(weighted.table)
    plain = fit_style_controlled(battles, options)
    weighted = fit_style_controlled(ones, options)
    assert plain.table.equals(weighted.table) and plain.coefficients.equals(weighted.coefficients)
    # the monthly boards from counted cells (w = n) and from rows
    a, _ = arena_boards(battles, month="2024-01", options=options, min_category_battles=500)
    b, _ = arena_boards(ones, month="2024-01", options=options, min_category_battles=500)
    assert a.equals(b)
    cells = battle_cells(ones, "2024-01")
    assert cells["w"].to_list() == cells["n"].cast(pl.Float64).to_list()
    assert aggregate_cells(rankable_cells(cells)).weighted is None


def test_a_weight_counts_as_that_share_of_a_vote() -> None:
    battles = _battles().filter("keep").select("model_a", "model_b", "winner")
    half = battles.head(1000)
    # the first 1,000 votes at weight 1/2 each, next to the rest at 1 ...
    weighted = pl.concat(
        [
            half.with_columns(weight=pl.lit(0.5)),
            battles.slice(1000).with_columns(weight=pl.lit(1.0)),
        ]
    )
    # ... fit like those 1,000 counted half: every other one of two identical copies
    doubled = pl.concat([half, battles.slice(1000), battles.slice(1000)])
    a = fit_bt(weighted).table.sort("model")
    b = fit_bt(doubled).table.sort("model")
    # equal up to the overall scale of the likelihood: ratings equal, not intervals
    np.testing.assert_allclose(a["rating"].to_numpy(), b["rating"].to_numpy(), atol=1e-6)
    assert a["battles"].to_list() == fit_bt(battles).table.sort("model")["battles"].to_list()
    # a vote at weight 0 counts for nothing in the fit, and still as a vote cast
    zero = pl.concat(
        [
            battles,
            pl.DataFrame(
                {"model_a": ["m0"] * 300, "model_b": ["m5"] * 300, "winner": ["model_a"] * 300}
            ),
        ]
    )
    zero = zero.with_columns(weight=pl.Series([1.0] * battles.height + [0.0] * 300))
    c = fit_bt(zero).table.sort("model")
    d = fit_bt(battles).table.sort("model")
    np.testing.assert_allclose(c["rating"].to_numpy(), d["rating"].to_numpy(), atol=1e-6)
    assert c["battles"].sum() == d["battles"].sum() + 600


def test_weighted_cells_fit_like_the_weighted_rows() -> None:
    battles = _battles().with_columns(
        weight=pl.when(pl.col("model_a") == "m0").then(0.25).otherwise(1.0)
    )
    cells = battle_cells(battles, "2024-01")
    counted = aggregate_cells(rankable_cells(cells))
    assert counted.weighted is not None
    rows = battles.filter(pl.col("keep") & pl.col("winner").is_not_null())
    options = board_options(min_battles=10)
    a = leaderboard_from_aggregated(counted, options).table.sort("model")
    b = fit_bt(rows.select("model_a", "model_b", "winner", "weight"), options).table.sort("model")
    np.testing.assert_allclose(a["rating"].to_numpy(), b["rating"].to_numpy(), atol=1e-8)
    np.testing.assert_allclose(a["se"].to_numpy(), b["se"].to_numpy(), atol=1e-8)
    assert a["battles"].to_list() == b["battles"].to_list()
    plain = fit_bt(rows.select("model_a", "model_b", "winner"), options).table.sort("model")
    assert a["rating"].to_list() != pytest.approx(plain["rating"].to_list(), abs=1e-3)
