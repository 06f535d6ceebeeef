"""One rule for settings, for the Dagster CLI and `arena-assets` alike: a
variable exported in the shell wins over `.env`; `.env` gives the value otherwise.

The bare Dagster CLI loads `.env` over the shell; `make install` writes `.env` with every
value as NAME=${NAME:-value}, which Dagster's reader expands to the shell's value when there
is one (arena_assets/envfile.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_env_file_is_written_and_migrated_to_the_shell_first_form(tmp_path, monkeypatch):
    from arena_assets.envfile import dotenv_file, shell_first, sync_env_file

    example = tmp_path / "example"
    example.write_text("# comment\nA=./data/raw\nB=\nC='[{\"json\": 1}]'\nD=2GB\n")
    target = tmp_path / ".env"
    said = sync_env_file(example, target)
    assert target.read_text().splitlines()[1:3] == ["A=${A:-./data/raw}", "B=${B:-}"]
    assert any("plain values" in s and "C" in s for s in said)  # JSON cannot: named
    # an older .env: plain lines rewritten with the same value, missing variables added
    target.write_text("A=/srv/raw\nC='x y'\n")
    said = sync_env_file(example, target)
    lines = target.read_text().splitlines()
    assert lines[:2] == ["A=${A:-/srv/raw}", "C='x y'"] and "D=${D:-2GB}" in lines
    assert any("A now yields to the shell" in s for s in said)
    assert any("added D" in s for s in said)
    monkeypatch.setenv("A", "/from/shell")
    monkeypatch.delenv("D", raising=False)
    values = dotenv_file(target)
    assert values["A"] == "/from/shell" and values["D"] == "2GB"
    assert shell_first("X=a b") == "X=a b" and shell_first("X=${X:-a}") == "X=${X:-a}"


def test_the_shell_wins_for_the_dagster_cli_and_for_arena_assets(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    try:  # what `make install` writes
        from arena_assets.envfile import sync_env_file

        sync_env_file(ROOT / ".env.example", project / ".env")
    except ImportError:  # a checkout before the rule: `make` copied the example
        (project / ".env").write_text((ROOT / ".env.example").read_text())
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    shell_raw = tmp_path / "shell-raw"
    simulate_months(shell_raw, ["2024-02"], 20, seed=1)
    # the shell sets only the raw root; everything else comes from the project's .env
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env.update(DAGSTER_HOME=str(home), ARENA_RAW_ROOT=str(shell_raw))
    proc = subprocess.run(
        [
            str(BIN / "dagster"),
            "asset",
            "materialize",
            "-m",
            "arena_assets.definitions",
            "--select",
            "raw_logs,raw_rejects",
            "--partition",
            "2024-02",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lake = Lake(str(project / "data" / "lake"))  # ARENA_LAKE_ROOT from .env
    assert lake.read("raw_logs", "2024-02").height > 0  # read from the shell's raw root
    assert not (project / "data" / "raw").exists()
    # arena-assets reads the same: the shell's raw root, .env's lake and catalog
    out = subprocess.run(
        [str(BIN / "arena-assets"), "summary"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert f"Raw logs:        {shell_raw}" in out and "Lake (Parquet):  ./data/lake" in out
    assert "raw_logs               2024-02:" in out
