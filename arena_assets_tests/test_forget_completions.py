"""Forgetting a user reaches Copilot Arena too: their completion battles and rejects go
from the lake, their records under the completions root are blanked with --purge-raw (the
records' userId is an identity field), and --recompute rebuilds copilot_leaderboard through its asset (the plan's graph walk is
tested in test_forget.py); and
the completions and evaluators settings are bound to documented variables."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from arena_assets.cli import main as cli_main
from arena_assets.completions.adapters import merge_pairs, parse_files
from arena_assets.completions.board import CopilotBoardOptions
from arena_assets.completions.settings import board_options_from
from arena_assets.envfile import setting
from arena_assets.pipeline.completions import (
    completion_battles_month,
    copilot_leaderboard_month,
    read_board_data,
)
from arena_assets.privacy.forget import user_hash_of
from arena_assets.simulator import World
from arena_assets.simulator.completions import generate_completions
from arena_assets.storage import Lake
from arena_assets_tests.conftest import arena_env_values, env_example_keys

MONTH = "2024-04"
SALT = "forget-copilot"


def test_forget_purges_copilot_records_and_recomputes_its_board(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw, lake = tmp_path / "raw", Lake(str(tmp_path / "lake"))
    generate_completions(World.build(seed=5), raw, MONTH, 600)
    root = str(raw / "_completions")
    completion_battles_month(lake, root, MONTH, salt=SALT)
    before = copilot_leaderboard_month(
        lake, MONTH, CopilotBoardOptions(bootstrap_rounds=5, min_battles=1)
    )
    truth = pl.read_parquet(raw / "_truth" / "completions" / f"{MONTH}.parquet")
    user, pairs = Counter(truth["user_id"]).most_common(1)[0]
    target = user_hash_of(user, SALT)
    assert (
        lake.read("completion_battles", MONTH).filter(pl.col("user_hash") == target).height == pairs
    )
    for name, value in arena_env_values(tmp_path).items():  # the rebuild's resources read them
        monkeypatch.setenv(name, value)
    for name in (
        "ARENA_COMPLETIONS_ROOT",
        "ARENA_USER_SALT",
    ):  # the default root: <raw>/_completions
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ARENA_COPILOT_MIN_BATTLES", "1")
    monkeypatch.setenv("ARENA_PARTITIONS_END", MONTH)  # the code location rebuilds the month
    monkeypatch.setenv("ARENA_BOOTSTRAP_ROUNDS", "5")

    assert (
        cli_main(
            [
                "forget",
                "--user",
                user,
                "--purge-raw",
                "--recompute",
                "--lake",
                str(lake.root),
                "--raw-root",
                str(raw),
                "--salt",
                SALT,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"raw file completions:{MONTH}/completions-{MONTH}.jsonl" in out and "blanked" in out
    assert f"rebuilt {MONTH}: copilot_leaderboard" in out  # through its asset
    assert lake.read("completion_battles", MONTH).filter(pl.col("user_hash") == target).height == 0
    data = (raw / "_completions" / MONTH / f"completions-{MONTH}.jsonl").read_bytes()
    assert user.encode() not in data
    after = read_board_data(lake, MONTH)
    assert after["figures"]["pairs"] == before.figures["pairs"] - pairs
    # a re-read of the purged records brings nothing of the user back: blank lines
    parsed, _ = parse_files(root, MONTH, salt=SALT)
    assert target not in set(merge_pairs(parsed, MONTH)["user_hash"])
    assert {r["reason"] for r in parsed.rejects if r["user_hash"] is None} >= {"empty_line"}


def test_settings_are_bound_to_documented_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena_assets.defs.completions import resources as completions
    from arena_assets.defs.evaluators import resources as evaluators

    documented, fixture = env_example_keys(), set(arena_env_values(tmp_path))
    for env in (completions.ENV, evaluators.ENV):
        names = {var for var, _ in env.values()}
        assert names <= documented, names - documented
        assert names <= fixture, names - fixture
    for var, value in arena_env_values(tmp_path).items():
        monkeypatch.setenv(var, value)
    monkeypatch.setenv("ARENA_COPILOT_CI_LEVEL", "0.9")
    monkeypatch.setenv("ARENA_COPILOT_INCLUDE_UNACCEPTED", "true")
    monkeypatch.setenv("ARENA_REFUSAL_THRESHOLD", "0.35")
    monkeypatch.setenv("ARENA_COPILOT_FIT", "bt")
    board = (
        completions.CompletionSettings(**completions.env_fields(completions.ENV))
        .process_config_and_initialize()
        .board_options()
    )
    assert (board.level, board.include_unaccepted, board.fit) == (0.9, True, "bt")
    monkeypatch.setenv("ARENA_COPILOT_FIT", "ridge")
    with pytest.raises(
        ValueError, match="ARENA_COPILOT_FIT must be one of copilot-arena, bt, got 'ridge'"
    ):
        board_options_from(setting)
    monkeypatch.setenv("ARENA_COPILOT_FIT", "")  # empty: Copilot Arena's own fit
    assert board_options_from(setting).fit == "copilot-arena"
    settings = evaluators.EvaluatorSettings(
        **completions.env_fields(evaluators.ENV)
    ).process_config_and_initialize()
    assert settings.refusal_options().threshold == 0.35
    monkeypatch.setenv(
        "ARENA_COPILOT_CI_LEVEL", "ninety"
    )  # outside Dagster (forget --recompute) too
    with pytest.raises(ValueError, match="ARENA_COPILOT_CI_LEVEL must be a number, got 'ninety'"):
        board_options_from(setting)
    monkeypatch.setenv("ARENA_COPILOT_CI_LEVEL", "0.8")
    monkeypatch.setenv("ARENA_COPILOT_SEED", "seven")
    with pytest.raises(ValueError, match="ARENA_COPILOT_SEED must be an integer, got 'seven'"):
        board_options_from(setting)
