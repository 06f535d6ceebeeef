"""Data that cannot rank: every model a board cannot rate is left out with its reason,
through the library, the `arena-assets leaderboard` command and the assets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from arena_assets.cli import main
from arena_assets.ranking import (
    LEFT_OUT_REASONS,
    FitOptions,
    NoMaximumLikelihood,
    RankingInputError,
    TooFewModels,
    aggregate,
    fit_bt,
    fit_style_controlled,
    rankable,
    sample_bt_battles,
)
from arena_assets.ranking.newton import fit_pairs
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

STYLE = ("sum_assistant_tokens", "header_count", "list_count", "bold_count")


def _votes(*rows: tuple[str, str, str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "model_a": [r[0] for r in rows],
            "model_b": [r[1] for r in rows],
            "winner": [r[2] for r in rows],
        },
        schema={"model_a": pl.String, "model_b": pl.String, "winner": pl.String},
    )


def _edge_cases() -> pl.DataFrame:
    """A well-connected core m1..m3 plus one model for each way of being unratable."""
    core = sample_bt_battles({"m1": 1100, "m2": 1000, "m3": 900}, 3_000, seed=1)
    island = sample_bt_battles({"i1": 1300, "i2": 700}, 400, seed=2)
    extra = _votes(
        ("champ", "m1", "model_a"),
        ("m2", "champ", "model_b"),  # never lost
        ("m3", "loser", "model_a"),
        ("loser", "m1", "model_b"),  # never won
        ("up1", "m1", "model_a"),
        ("up1", "up2", "model_a"),
        ("up2", "up1", "model_a"),
        ("up2", "m2", "model_a"),  # the group {up1, up2} never lost (or tied) to the core
        ("m3", "dn1", "model_a"),
        ("dn1", "dn2", "model_a"),
        ("dn2", "dn1", "model_a"),
    )
    return pl.concat(
        [
            core.select("model_a", "model_b", "winner"),
            island.select("model_a", "model_b", "winner"),
            extra,
        ]
    )


def _with_style(battles: pl.DataFrame) -> pl.DataFrame:
    rng = np.random.default_rng(5)
    return battles.with_columns(
        **{f"{f}_{s}": pl.Series(rng.integers(0, 6, battles.height)) for f in STYLE for s in "ab"}
    )


def test_each_unratable_model_is_left_out_with_its_reason() -> None:
    board = fit_bt(_edge_cases())
    assert sorted(board.table["model"]) == ["m1", "m2", "m3"]
    assert board.left_out == {
        "i1": "not_connected",
        "i2": "not_connected",
        "champ": "won_all",
        "loser": "lost_all",
        "up1": "above_ranked",
        "up2": "above_ranked",
        "dn1": "below_ranked",
        "dn2": "below_ranked",
    }
    assert set(board.left_out.values()) <= set(LEFT_OUT_REASONS)
    assert np.isfinite(board.table["rating"].to_numpy()).all()
    # a tie links both ways: one tie with the core brings a won-all model onto the board
    tied = fit_bt(pl.concat([_edge_cases(), _votes(("champ", "m3", "tie"))]))
    assert "champ" in tied.models and "champ" not in tied.left_out


def test_groups_above_and_below_and_min_battles() -> None:
    core = _votes(*[("a", "b", w) for w in ("model_a", "model_b", "tie")] * 5)
    above = _votes(("u", "a", "model_a"), ("u", "v", "model_a"), ("v", "u", "model_a"))
    agg, left = rankable(aggregate(pl.concat([core, above])))
    assert agg.models == ["a", "b"] and left == {"u": "above_ranked", "v": "above_ranked"}
    _, left = rankable(aggregate(core), min_battles=100)
    assert left == {"a": "under_min_battles", "b": "under_min_battles"}
    _, left = rankable(aggregate(pl.concat([core, _votes(("c", "a", "tie"))]), tie_mode="drop"))
    assert left == {"c": "no_battles"}


def test_the_solver_refuses_data_without_maximum_likelihood() -> None:
    # x beat y and y beat z, nobody beat x: no finite maximum, and no ridge to hide it
    left, right = np.array([0, 1]), np.array([1, 2])
    with pytest.raises(NoMaximumLikelihood):
        fit_pairs(left, right, np.array([3.0, 3.0]), np.array([3.0, 1.0]), 3)


def test_a_resample_without_a_model_leaves_it_missing_not_at_1000() -> None:
    # "rare" has 2 battles, one won one lost: many resamples draw neither or only one
    core = sample_bt_battles({"a": 1100, "b": 1000, "c": 900}, 2_000, seed=3)
    battles = pl.concat(
        [
            core.select("model_a", "model_b", "winner"),
            _votes(("rare", "a", "model_a"), ("rare", "b", "model_b")),
        ]
    )
    board = fit_bt(battles, bootstrap_rounds=200, ci="bootstrap", seed=1)
    rare = board.models.index("rare")
    column = board.bootstrap[:, rare]
    assert np.isnan(column).sum() == board.meta["bootstrap_missing_rounds"]["rare"] > 20
    assert not np.isclose(column[~np.isnan(column)], 1000.0).any()
    row = board.table.filter(pl.col("model") == "rare")
    assert row["lower"][0] < row["rating"][0] < row["upper"][0]
    assert (board.table["lower"] != 1000.0).all()


def test_style_fit_gets_the_same_guards() -> None:
    battles = _with_style(_edge_cases())
    styled = fit_style_controlled(battles, bootstrap_rounds=20, ci="bootstrap")
    plain = fit_bt(battles)
    assert styled.left_out == plain.left_out
    assert sorted(styled.table["model"]) == ["m1", "m2", "m3"]
    assert np.isfinite(styled.table["rating"].to_numpy()).all()
    assert styled.coefficients["coef"].is_finite().all()
    # a feature that never varies, or repeats another, gets no coefficient (no ridge)
    flat = battles.with_columns(
        bold_count_a=pl.lit(0),
        bold_count_b=pl.lit(0),
        list_count_a=pl.col("header_count_a"),
        list_count_b=pl.col("header_count_b"),
    )
    styled = fit_style_controlled(flat)
    assert styled.meta["features_left_out"] == {"list_count": "collinear", "bold_count": "constant"}
    coef = dict(styled.coefficients.select("feature", "coef").iter_rows())
    assert np.isnan(coef["bold_count"]) and np.isnan(coef["list_count"])
    assert np.isfinite(coef["header_count"])


def test_fastchat_style_normalisation_is_an_option() -> None:
    from arena_assets.ranking.style import style_differences

    assert style_differences([3, 0], [1, 0]).tolist() == [0.5, 0.0]
    assert style_differences([3, 0], [1, 0], "ratio_plus_one").tolist() == [0.4, 0.0]
    battles = sample_bt_battles(
        {"a": 1000, "b": 1050, "c": 990}, 3000, seed=4, style_coef={"bold_count": 0.3}
    )
    one = fit_style_controlled(battles)
    two = fit_style_controlled(battles, style_norm="ratio_plus_one")
    assert not np.allclose(one.theta, two.theta)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(bootstrap_rounds=-1), "bootstrap rounds must be >= 0"),
        (dict(anchor=("nobody", 1000.0)), "anchor model 'nobody' is not in the battles"),
        (dict(anchor=("champ", 1000.0)), "anchor model 'champ' is left out of the board (won_all)"),
    ],
)
def test_bad_options_are_input_errors(options: dict, message: str) -> None:
    with pytest.raises(RankingInputError) as err:
        fit_bt(
            _edge_cases(),
            FitOptions(**options) if "bootstrap_rounds" in options else None,
            **({} if "bootstrap_rounds" in options else options),
        )
    assert message in str(err.value)


def test_bad_input_is_an_input_error() -> None:
    with pytest.raises(RankingInputError, match="unknown winner"):
        fit_bt(_votes(("a", "b", "model_a"), ("a", "b", "left")))
    with pytest.raises(TooFewModels, match="no battles"):
        fit_bt(_votes())
    with pytest.raises(TooFewModels, match="a leaderboard needs two"):
        fit_bt(_votes(("a", "b", "model_a")))  # a won all: one model left


# --- the command line ------------------------------------------------------------------


@pytest.fixture
def edge_file(tmp_path: Path) -> Path:
    path = tmp_path / "edge.parquet"
    _edge_cases().write_parquet(path)
    return path


def test_cli_lists_every_left_out_model(tmp_path: Path, edge_file: Path, capsys) -> None:
    out = tmp_path / "board.parquet"
    assert main(["leaderboard", str(edge_file), "--out", str(out), "--bootstrap", "20"]) == 0
    assert sorted(pl.read_parquet(out)["model"]) == ["m1", "m2", "m3"]
    printed = capsys.readouterr().out
    assert "8 model(s) left out" in printed
    for line in ("i1: not_connected", "champ: won_all", "loser: lost_all", "dn1: below_ranked"):
        assert line in printed


def _write(tmp_path: Path, frame: pl.DataFrame) -> Path:
    path = tmp_path / "in.parquet"
    frame.write_parquet(path)
    return path


@pytest.mark.parametrize(
    "case, extra, message",
    [
        ("unknown_winner", [], "unknown winner ('left')"),
        (
            "anchor_absent",
            ["--anchor", "nobody=1000"],
            "anchor model 'nobody' is not in the battles",
        ),
        ("empty", [], "no battles in"),
        ("one_model", [], "a leaderboard needs two"),
        ("negative_bootstrap", ["--bootstrap", "-5"], "--bootstrap must be >= 0, got -5"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, case: str, extra: list[str], message: str
) -> None:
    frames = {
        "unknown_winner": _votes(("a", "b", "model_a"), ("b", "a", "left")),
        "anchor_absent": _edge_cases(),
        "empty": _votes(),
        "one_model": _votes(("a", "b", "model_a"), ("a", "b", "model_a")),
        "negative_bootstrap": _edge_cases(),
    }
    path = _write(tmp_path, frames[case])
    # from the shell, as a user runs it: exit status and stderr are what they see
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena_assets.cli",
            "leaderboard",
            str(path),
            "--out",
            str(tmp_path / "o.parquet"),
            *extra,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert message in lines[0]


# --- the assets ----------------------------------------------------------------------


def test_assets_list_left_out_models_in_metadata(arena_env: dict[str, str], monkeypatch) -> None:
    monkeypatch.setenv("ARENA_MIN_BATTLES", "1")  # the one-battle edge cases stay in play
    battles = _with_style(_edge_cases()).with_columns(
        keep=pl.lit(True), removed_reason=pl.lit(None, pl.String), language=pl.lit("en")
    )
    Lake(arena_env["ARENA_LAKE_ROOT"]).write("battles", "2024-01", battles)
    result = materialize("2024-01", "arena_leaderboard,leaderboard_history")
    assert result.success
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {
        "intervals_contain_ratings": True,
        "rating_move_alarm": True,
        "interval_width_sane": True,
        "schema_matches": True,
        "keys_unique_and_present": True,
        "values_in_range": True,
    }
    meta = {
        e.asset_key.path[-1]: e.materialization.metadata
        for e in result.get_asset_materialization_events()
    }
    left_out = meta["arena_leaderboard"]["models_left_out"].value
    assert (
        left_out["overall"]["champ"] == "won_all" and left_out["overall"]["i1"] == "not_connected"
    )
    assert left_out["style_control"] == left_out["overall"]
    boards = Lake(arena_env["ARENA_LAKE_ROOT"]).read("arena_leaderboard", "2024-01")
    assert set(boards["model"]) == {"m1", "m2", "m3"}
    history = Lake(arena_env["ARENA_LAKE_ROOT"]).read("leaderboard_history", "2024-01")
    assert set(history["model"]) == {"m1", "m2", "m3"}


def test_style_bootstrap_survives_resamples_where_a_feature_is_constant():
    """A style feature that varies in one battle only is constant in most resamples (a
    singular Hessian there): those rounds are NaN, the board still comes out."""
    import numpy as np

    from arena_assets.ranking import fit_style_controlled

    rng = np.random.default_rng(3)
    rows = []
    for i in range(60):
        a, b = rng.choice(["m1", "m2", "m3", "m4"], 2, replace=False)
        rows.append(
            {
                "model_a": a,
                "model_b": b,
                "winner": ("model_a", "model_b", "tie")[i % 3],
                "sum_assistant_tokens_a": 100 + 50 * (i % 4),
                "sum_assistant_tokens_b": 120,
                "header_count_a": 3 if i == 0 else 0,
                "header_count_b": 0,
                "list_count_a": 0,
                "list_count_b": 0,
                "bold_count_a": 0,
                "bold_count_b": 0,
            }
        )
    board = fit_style_controlled(pl.DataFrame(rows), ci="bootstrap", bootstrap_rounds=40, seed=1)
    table = board.table
    assert table.height >= 2
    assert table["lower"].is_finite().all() and (table["lower"] <= table["rating"]).all()
