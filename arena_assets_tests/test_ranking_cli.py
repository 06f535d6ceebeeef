"""`arena-assets leaderboard` end to end."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from arena_assets.cli import main
from arena_assets.ranking import sample_bt_battles

REQUIRED = {"model", "rating", "lower", "upper", "rank_ub", "battles", "ci_method", "ci_level"}


@pytest.fixture
def battle_file(tmp_path: Path) -> Path:
    battles = sample_bt_battles(
        {"a": 1100, "b": 1000, "c": 950, "d": 1050},
        4000,
        seed=2,
        tie_rate=0.1,
        style_coef={"list_count": 0.2},
    )
    path = tmp_path / "battles.parquet"
    battles.write_parquet(path)
    return path


def test_cli_writes_board(tmp_path: Path, battle_file: Path, capsys: pytest.CaptureFixture) -> None:
    out, wr = tmp_path / "board.parquet", tmp_path / "wr.parquet"
    rc = main(
        [
            "leaderboard",
            str(battle_file),
            "--out",
            str(out),
            "--bootstrap",
            "50",
            "--winrates",
            str(wr),
        ]
    )
    assert rc == 0
    board = pl.read_parquet(out)
    assert set(board.columns) >= REQUIRED
    assert board["model"][0] == "a" and board.height == 4
    assert set(board["ci_method"]) == {"bootstrap"}
    assert pl.read_parquet(wr).height == 12
    assert "4 models" in capsys.readouterr().out


def test_cli_anchor_level_and_style(tmp_path: Path, battle_file: Path) -> None:
    out, coefs = tmp_path / "style.parquet", tmp_path / "coefs.parquet"
    rc = main(
        [
            "leaderboard",
            str(battle_file),
            "--out",
            str(out),
            "--style-control",
            "--anchor",
            "b=1200",
            "--level",
            "0.9",
            "--coefficients",
            str(coefs),
        ]
    )
    assert rc == 0
    board = pl.read_parquet(out)
    assert REQUIRED | {"rank_change"} <= set(board.columns)
    assert board.filter(pl.col("model") == "b")["rating"][0] == pytest.approx(1200)
    assert set(board["ci_level"]) == {0.9}
    assert pl.read_parquet(coefs)["feature"].to_list()[2] == "list_count"


def test_cli_bad_anchor_is_a_usage_error(tmp_path: Path, battle_file: Path) -> None:
    with pytest.raises(SystemExit):
        main(
            [
                "leaderboard",
                str(battle_file),
                "--out",
                str(tmp_path / "x.parquet"),
                "--anchor",
                "nonsense",
            ]
        )


def test_cli_on_real_clean_battles(tmp_path: Path, real_data: Path) -> None:
    out = tmp_path / "real.parquet"
    votes = real_data / "battles" / "votes_2023_hard_english_with_prompts.jsonl"
    rc = main(["leaderboard", str(votes), "--out", str(out), "--min-battles", "20"])
    assert rc == 0
    board = pl.read_parquet(out)
    assert board["model"][0] == "gpt-4"
    assert board["battles"].min() >= 20


def test_parser_constants_match_the_library() -> None:
    from arena_assets.cli import ranking as cli
    from arena_assets.ranking import options

    assert (cli.CI_METHODS, cli.TIE_MODES, cli.STYLE_NORMS) == (
        options.CI_METHODS,
        options.TIE_MODES,
        options.STYLE_NORMS,
    )
