"""Battle cells (what the cumulative boards read) and the data-quality figures of the
checks, on hand-written frames."""

from __future__ import annotations

import numpy as np
import polars as pl

from arena_assets.pipeline import quality
from arena_assets.ranking import sample_bt_battles
from arena_assets.ranking.battle_cells import aggregate_cells, battle_cells, rankable_cells
from arena_assets.ranking.boards import arena_boards, board_options, boards_from_cells
from arena_assets.ranking.cells import encode_battles
from arena_assets.ranking.leaderboard import leaderboard_from_aggregated


def _battles(seed: int = 1) -> pl.DataFrame:
    votes = sample_bt_battles({"m1": 1100, "m2": 1000, "m3": 950, "m4": 900}, 3_000, seed=seed)
    n = votes.height
    rng = np.random.default_rng(seed)
    return (
        votes.select("model_a", "model_b", "winner")
        .with_columns(
            keep=pl.Series(rng.random(n) > 0.1),
            language=pl.Series(rng.choice(["en", "de", None], n).tolist(), dtype=pl.String),
            **{
                f"{f}_{s}": pl.Series(rng.integers(0, 50, n))
                for f in (
                    "sum_assistant_tokens",
                    "header_count",
                    "ordered_list_count",
                    "unordered_list_count",
                    "list_count",
                    "bold_count",
                )
                for s in "ab"
            },
        )
        .with_columns(
            removed_reason=pl.when(pl.col("keep")).then(None).otherwise(pl.lit("daily_cap"))
        )
    )


def test_cells_count_every_battle_and_aggregate_like_the_rows():
    battles = _battles()
    cells = battle_cells(battles, "2024-01")
    assert cells["n"].sum() == battles.height
    assert cells.height < battles.height / 10
    kept = battles.filter(pl.col("keep") & pl.col("winner").is_not_null())
    rows = encode_battles(kept).aggregate()
    counted = aggregate_cells(rankable_cells(cells))
    assert counted.models == rows.models
    np.testing.assert_array_equal(counted.left, rows.left)
    np.testing.assert_array_equal(counted.counts, rows.counts)
    # hence the same board, intervals included (the bootstrap resamples the cells)
    options = board_options(bootstrap_rounds=20, min_battles=10)
    a = leaderboard_from_aggregated(rows, options).table
    b = leaderboard_from_aggregated(counted, options).table
    assert a.equals(b)


def test_boards_from_two_months_of_cells_equal_the_boards_of_their_rows():
    jan, feb = _battles(1), _battles(2)
    options = board_options(bootstrap_rounds=10, min_battles=10)
    from_rows, _ = arena_boards(
        pl.concat([jan, feb]), month="2024-02", options=options, min_category_battles=500
    )
    cells = pl.concat([battle_cells(jan, "2024-01"), battle_cells(feb, "2024-02")])
    style = pl.concat([jan, feb]).select(
        "keep",
        "model_a",
        "model_b",
        "winner",
        *[c for c in jan.columns if c.endswith(("_a", "_b")) and c not in ("model_a", "model_b")],
    )
    from_cells, info = boards_from_cells(
        cells, style, month="2024-02", options=options, min_category_battles=500
    )
    assert from_rows.equals(from_cells)
    assert {"overall", "style_control", "language:en", "language:de"} == set(from_cells["board"])
    assert info["removed_by_reason"] == {"daily_cap": (~pl.concat([jan, feb])["keep"]).sum()}


def test_quality_figures_on_hand_written_frames():
    frame = pl.DataFrame({"id": ["a", "b", "b", None], "x": [1, 2, 3, 4]})
    assert quality.duplicate_keys(frame, ["id"]) == 1
    assert quality.null_counts(frame, ["id", "x"]) == {"id": 1}
    assert quality.schema_mismatches(frame, {"id": pl.String, "x": pl.Float64, "y": pl.Int64}) == [
        "x: Int64 (expected Float64)",
        "y: missing",
    ]
    boards = pl.DataFrame(
        {
            "rating": [1000.0, 1010.0, 990.0, 1000.0],
            "lower": [990.0, 1020.0, float("nan"), 500.0],
            "upper": [1010.0, 1030.0, 1000.0, 1500.0],
        }
    )
    assert quality.interval_problems(boards) == {
        "not_finite": 1,
        "inverted": 0,
        "rating_outside": 1,
        "too_wide": 1,
    }
    assert quality.volume_ratio(50, 100) == 0.5 and quality.volume_ratio(5, None) is None
    assert quality.language_shift({"en": 50, "de": 50}, {"en": 100}) == 0.5
    assert quality.language_shift({"en": 1}, {}) is None
    assert quality.drift_ok(1.0, 0.1) and not quality.drift_ok(0.3, 0.0)
    assert not quality.drift_ok(1.0, 0.5)


def test_range_figures_on_hand_written_frames():
    battles = pl.DataFrame(
        {
            "winner": ["model_a", "tie", "draw", None],
            "model_a": ["x", "y", "x", "x"],
            "model_b": ["y", "y", "z", "y"],
            "keep": [True, True, False, True],
            "bold_count_a": [0, 1, -1, 2],
            "bold_count_b": [0, 0, 0, 0],
            "weight": [1.0, 0.25, 2.0, 0.5],
            "weight_reason": [None, "no_history", None, None],
        }
    )
    assert quality.battle_range_problems(battles) == {
        "unknown_winner": 1,
        "negative_style_count": 1,
        "kept_self_battle": 1,
        "weight_out_of_range": 1,
        "weight_without_reason": 1,
    }
    boards = pl.DataFrame({"rank": [1, 0], "rank_ub": [1, 1], "battles": [10, 0]})
    assert quality.board_range_problems(boards) == {"rank_below_1": 1, "no_battles": 1}
