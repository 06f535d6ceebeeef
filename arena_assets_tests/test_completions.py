"""Copilot Arena as a new event kind: its log records and its release CSV read into
completion battles (merged pairs, rejects with reasons, counts conserved), cleaned (code only
under Research consent, secrets redacted), the board with intervals and a latency control
that removes a planted latency effect, through Dagster on simulated pairs; and the public
release file itself when a fetched copy of lmarena/copilot-arena is on the machine."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import subprocess
from pathlib import Path

import orjson
import polars as pl
import pytest
from scipy import stats

from arena_assets.completions.adapters import clean_battles, merge_pairs, parse_files, reject_frame
from arena_assets.completions.board import CopilotBoardOptions, copilot_leaderboard
from arena_assets.simulator import World, simulate_months
from arena_assets.simulator.completions import CompletionConfig, generate_completions
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTH = "2024-03"
T = int(dt.datetime(2024, 3, 5, 10, tzinfo=dt.UTC).timestamp())
KEY = "sk-proj-" + "Ab3" * 14
MIRROR = Path(os.environ.get("ARENA_TEST_COPILOT_MIRROR", "/work/.mirror/lmarena+copilot-arena/repo"))


def item(idx: int, model: str, privacy: str = "Research", **over) -> dict:
    out = {"completionId": f"c{idx}", "userId": "user-123456", "timestamp": T, "model": model,
           "pairIndex": idx, "latency": 0.5 + idx, "prefix_length": 40, "suffix_length": 5,
           "completion_length": 12, "privacy": privacy}
    if privacy == "Research":
        out |= {"prefix": f'token = "{KEY}"\ndef f(x):\n    ', "suffix": "\n", "completion": "return x + 1",
                "prompt": "<system prompt + full file>", "raw_completion": "return x + 1"}
    return out | over


def shown(pair: str, a: str = "codestral-2405", b: str = "gpt-4o-mini", privacy: str = "Research") -> dict:
    return {"pairId": pair, "completionItems": [item(0, a, privacy), item(1, b, privacy)]}


def outcome(pair: str, accepted: int, **kw) -> dict:
    return shown(pair, **kw) | {"userId": "user-123456", "acceptedIndex": accepted, "fileType": "python",
                                "privacy": kw.get("privacy", "Research"), "version": "0.2.2"}


def write_month(root: Path, records: list, name: str = "log.jsonl") -> None:
    folder = root / MONTH
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(b"\n".join(r if isinstance(r, bytes) else orjson.dumps(r) for r in records) + b"\n")


def run(root: Path):
    parsed, _ = parse_files(str(root), MONTH, salt="s")
    battles = clean_battles(merge_pairs(parsed, MONTH))
    return parsed, battles, reject_frame(parsed.rejects)


def test_log_records_merge_clean_and_reject(tmp_path: Path) -> None:
    records = [
        shown("p1"), outcome("p1", 1),  # merged: the bottom one accepted
        shown("p2", privacy="Debug"), outcome("p2", 0, privacy="Debug"),  # no code kept
        shown("p3"),  # shown, neither accepted
        outcome("p4", 0, a="deepseek-coder", b="claude-3-5-sonnet"),  # outcome alone
        outcome("p1", 1),  # a second outcome of p1
        shown("p5", a="gpt-4o-mini", b="gpt-4o-mini"),
        {"pairId": "p6", "completionItems": [item(0, "x")]},
        outcome("p7", 2),
        {"pairId": "p8", "completionItems": [item(0, "x", timestamp=T + 40 * 86400), item(1, "y")]},
        {"prompt": "a chat line"}, b"{broken", b"",
    ]
    write_month(tmp_path, records)
    parsed, battles, rejects = run(tmp_path)
    assert parsed.records_read == len(records)
    assert parsed.records_read == battles["records"].sum() + rejects.height  # conserved
    rows = {r["pair_id"]: r for r in battles.iter_rows(named=True)}
    assert set(rows) == {"p1", "p2", "p3", "p4"}
    assert (rows["p1"]["winner"], rows["p1"]["records"], rows["p1"]["file_type"]) == ("model_b", 2, "python")
    assert rows["p3"]["winner"] == "tie (bothbad)" and not rows["p3"]["accepted"]
    assert rows["p4"]["model_a"] == "deepseek-coder" and rows["p4"]["records"] == 1
    assert (rows["p1"]["latency_a"], rows["p1"]["latency_b"]) == (0.5, 1.5)
    # code: kept (redacted) under Research, dropped under Debug; never the prompt
    assert KEY not in rows["p1"]["prefix"] and "<SECRET>" in rows["p1"]["prefix"]
    assert rows["p1"]["secrets_redacted"] == 1 and rows["p1"]["completion_b"] == "return x + 1"
    assert rows["p2"]["prefix"] is None and rows["p2"]["completion_a"] is None
    assert rows["p1"]["prefix_lines"] == 3 and "prompt" not in battles.columns
    assert rows["p1"]["user_hash"] != "user-123456" and len(rows["p1"]["user_hash"]) == 20
    reasons = sorted(rejects["reason"].to_list())
    assert reasons == sorted(["duplicate_pair", "same_model_battle", "bad_items", "bad_accepted_index",
                              "tstamp_outside_month", "unknown_layout", "invalid_json", "empty_line"])
    assert not rejects["raw"].str.contains("user-123456").any()  # ids blanked in rejected text
    assert not rejects["raw"].str.contains(KEY).any()
    hashed = rejects.filter(pl.col("reason") == "bad_accepted_index")["user_hash"][0]
    assert hashed == rows["p1"]["user_hash"]  # so forgetting the user reaches the reject


def test_release_csv(tmp_path: Path) -> None:
    folder = tmp_path / MONTH
    folder.mkdir(parents=True)
    with open(folder / "copilot_arena_examples_v1.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["prefix", "suffix", "model_a", "model_b", "acceptedIndex", "completion_a", "completion_b"])
        w.writerow(["import os\n\ndef main():\n    ", "\n", "codestral-2405", "gpt-4o", "0", "pass", "return"])
        w.writerow(["x = ", "", "gpt-4o", "gpt-4o", "1", "1", "2"])
    parsed, battles, rejects = run(tmp_path)
    assert battles.height == 1 and rejects["reason"].to_list() == ["same_model_battle"]
    row = battles.row(0, named=True)
    assert (row["winner"], row["source_format"], row["privacy"]) == ("model_a", "copilot_release", "Research")
    assert row["prefix"] == "import os\n\ndef main():\n    " and row["tstamp"].day == 1


def test_simulated_completions_leave_chat_logs_unchanged(tmp_path: Path) -> None:
    simulate_months(tmp_path / "plain", ["2024-01"], 300, seed=4)
    simulate_months(tmp_path / "with", ["2024-01"], 300, seed=4, completions_per_month=200)
    for f in sorted((tmp_path / "plain" / "2024-01").iterdir()):
        assert f.read_bytes() == (tmp_path / "with" / "2024-01" / f.name).read_bytes()
    assert (tmp_path / "with" / "_completions" / "2024-01").is_dir()
    assert not (tmp_path / "plain" / "_completions").exists()


def _true_order(root: Path, latency: bool) -> dict[str, float]:
    models = pl.read_parquet(root / "_truth" / "completion_models.parquet")
    return dict(zip(models["name"], models["skill_coding"]))


def test_latency_control_removes_the_planted_effect(tmp_path: Path) -> None:
    """Pure Bradley-Terry on skill plus a strong latency effect and no position bias: the
    plain board is pulled by latency, the latency-controlled one follows skill."""
    world = World.build(seed=11)
    cfg = CompletionConfig(accept_rate=1.0, position_bias=0.0, latency_effect=-4.0, latency_spread=0.8)
    generate_completions(world, tmp_path, MONTH, 12_000, cfg)
    parsed, _ = parse_files(str(tmp_path / "_completions"), MONTH, salt="s")
    battles = merge_pairs(parsed, MONTH)
    result = copilot_leaderboard(battles, MONTH, CopilotBoardOptions(bootstrap_rounds=20))
    skill = _true_order(tmp_path, True)
    rho = {}
    for name in ("overall", "latency_controlled"):
        b = result.board.filter(pl.col("board") == name)
        rho[name] = stats.spearmanr(b["rating"], [skill[m] for m in b["model"]]).statistic
    print(f"Spearman with true skill: plain {rho['overall']:.3f}, latency-controlled "
          f"{rho['latency_controlled']:.3f}; latency coefficient {result.latency['coef']:.3f} "
          f"[{result.latency['lower']:.3f}, {result.latency['upper']:.3f}]")
    assert result.latency["coef"] < 0 and result.latency["upper"] < 0  # slower side loses
    assert rho["latency_controlled"] > rho["overall"] and rho["latency_controlled"] > 0.9
    assert 0.45 < result.figures["top_share"] < 0.55  # no position bias planted


def test_completion_assets_through_dagster(arena_env) -> None:
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    world = World.build(seed=int(arena_env["ARENA_SIM_WORLD_SEED"]))
    summary = generate_completions(world, raw, "2024-01", 1500)
    result = materialize("2024-01", "completion_battles,copilot_leaderboard")
    assert result.success
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {"records_conserved": True, "no_code_without_consent": True,
                      "intervals_contain_ratings": True}
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    battles = lake.read("completion_battles", "2024-01")
    junk = pl.read_parquet(raw / "_truth" / "completion_junk" / "2024-01.parquet")
    rejects = lake.read("completion_rejects", "2024-01")
    assert battles.height == summary["pairs"] and rejects.height == summary["junk"]
    assert sorted(rejects["reason"]) == sorted(junk["expected_reason"])
    truth = pl.read_parquet(raw / "_truth" / "completions" / "2024-01.parquet")
    assert battles["secrets_redacted"].sum() == truth.filter(
        pl.col("planted_secret") & (pl.col("privacy") == "Research")).height
    assert battles.filter(pl.col("accepted")).height == truth["accepted_index"].is_not_null().sum()
    meta = result.asset_materializations_for_node("copilot_leaderboard")[0].metadata
    site = json.loads(Path(meta["site_data"].value).read_text())
    assert site["month"] == "2024-01" and site["boards"]["overall"][0]["rank"] == 1
    assert {"overall", "latency_controlled"} <= set(site["boards"])


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no fetched copy of lmarena/copilot-arena")
def test_the_published_release_file(tmp_path: Path) -> None:
    """Copilot Arena's own data/copilot_arena_examples_v1.csv, read from a fetched mirror
    (not committed here): every row a battle or a reject, rows counted independently."""
    data = subprocess.run(["git", "--git-dir", str(MIRROR), "show", "HEAD:data/copilot_arena_examples_v1.csv"],
                          capture_output=True, check=True).stdout
    folder = tmp_path / MONTH
    folder.mkdir()
    (folder / "examples.csv").write_bytes(data)
    rows = list(csv.DictReader(data.decode().splitlines(keepends=True)))
    parsed, battles, rejects = run(tmp_path)
    assert parsed.records_read == len(rows) == battles.height + rejects.height
    assert battles.height >= len(rows) - 2
    # the release writes acceptedIndex as 0.0 / 1.0; every battle is one of its rows
    from collections import Counter

    winners = {0: "model_a", 1: "model_b"}
    published = Counter((r["model_a"], r["model_b"], winners[int(float(r["acceptedIndex"]))])
                        for r in rows if r.get("acceptedIndex") not in (None, ""))
    ours = Counter(battles.select("model_a", "model_b", "winner").iter_rows())
    assert not ours - published and sum(ours.values()) == battles.height
