"""Copilot Arena as a new event kind: the records its server persists (fixtures written
to the request bodies of ``server/app.py``'s ``/add_completion`` and
``/add_completion_outcome`` and the extension's ``vscode/src/api.ts``, stored as its
``FirebaseClient.upload_data`` stores them) and its release CSV read into completion
battles (pairs joined by completionId, rejects with reasons, counts conserved), cleaned
(code only under Research consent, secrets redacted, no identity or code in a reject), the
board with intervals, log-only acceptance rates and the exploratory latency control, through
Dagster on simulated pairs; and the public release file itself when a fetched copy of
lmarena/copilot-arena is on the machine."""

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
USER = "3f2c9a7e-5b1d-4c8e-9f0a-1b2c3d4e5f60"  # the extension's userId (a uuid)
MIRROR = Path(
    os.environ.get("ARENA_TEST_COPILOT_MIRROR", "/work/.mirror/lmarena+copilot-arena/repo")
)
# server/src/privacy.py: PrivacySensitiveKeys, dropped from what is stored unless Research
SENSITIVE = {
    "prompt",
    "prefix",
    "full_prefix",
    "suffix",
    "full_suffix",
    "raw_response",
    "raw_completion",
    "response",
    "completion",
    "code_to_edit",
    "user_input",
}


def stored(body: dict, privacy: str) -> dict:
    """What the server's upload_data writes: clean_data (nested too) unless Research."""
    if privacy == "Research":
        return body

    def clean(v):
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if k not in SENSITIVE}
        return [clean(x) for x in v] if isinstance(v, list) else v

    return clean(body)


def item(pair: str, idx: int, model: str, privacy: str = "Research", **over) -> dict:
    """A completion as /create_pair returns it (completionItem1/2 of app.py)."""
    prefix, suffix = f'token = "{KEY}"\ndef f(x):\n    ', "\n"
    return {
        "completionId": f"{pair}-c{idx}",
        "userId": USER,
        "timestamp": T,
        "prompt": "<system prompt>" + prefix + "<FILL>" + suffix,
        "prefix": prefix,
        "suffix": suffix,
        "full_prefix": "import os\n" + prefix,
        "full_suffix": suffix,
        "prompt_length": 80,
        "prefix_length": len(prefix),
        "suffix_length": len(suffix),
        "completion_length": 12,
        "prompt_token_length": 30,
        "prefix_token_length": 12,
        "suffix_token_length": 1,
        "full_prefix_length": 14,
        "full_suffix_length": 1,
        "completion_token_length": 5,
        f"model_{idx + 1}_cost": 0.0001,
        "latency": 0.5 + idx,
        "completion": "return x + 1",
        "raw_completion": "```python\nreturn x + 1\n```",
        "model": model,
        "pairCompletionId": f"{pair}-c{1 - idx}",
        "pairIndex": idx,
        "privacy": privacy,
        "versionBackend": "1.4.0",
    } | over


def completion(pair: str, idx: int, model: str, privacy: str = "Research", **over) -> dict:
    """The extension's /add_completion body (uploadArenaCompletion), as stored."""
    body = item(pair, idx, model, privacy, **over) | {"version": "0.2.2", "fileType": "python"}
    return stored(body, privacy)


def shown(
    pair: str, a: str = "codestral-2405", b: str = "gpt-4o-mini", privacy: str = "Research"
) -> list[dict]:
    return [completion(pair, 0, a, privacy), completion(pair, 1, b, privacy)]


def outcome(
    pair: str,
    accepted: int,
    a: str = "codestral-2405",
    b: str = "gpt-4o-mini",
    privacy: str = "Research",
    **over,
) -> dict:
    """The extension's /add_completion_outcome body (uploadArenaPair) plus the server's
    versionBackend and timestamp, as stored."""
    items = [
        item(pair, i, m, privacy)
        | {
            "pairIndex": i,
            "version": "0.2.2",
            "privacy": privacy,
            "fileType": "python",
            "username": "alice-dev",
        }
        for i, m in enumerate((a, b))
    ]
    body = {
        "pairId": f"{pair}-pair",
        "userId": USER,
        "completionItems": items,
        "acceptedIndex": accepted,
        "version": "0.2.2",
        "privacy": privacy,
        "fileType": "python",
        "repoUrl": "https://github.com/alice-dev/secret-repo",
        "versionBackend": "1.4.0",
        "timestamp": T + 20,
    } | over
    return stored(body, privacy)


def write_month(root: Path, records: list, name: str = "log.jsonl") -> None:
    folder = root / MONTH
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(
        b"\n".join(r if isinstance(r, bytes) else orjson.dumps(r) for r in records) + b"\n"
    )


def run(root: Path):
    parsed, _ = parse_files(str(root), MONTH, salt="s")
    battles = clean_battles(merge_pairs(parsed, MONTH))
    return parsed, battles, reject_frame(parsed.rejects)


def test_server_records_pair_merge_clean_and_reject(tmp_path: Path) -> None:
    lone = completion("p9", 0, "codestral-2405")
    create_pair_response = {
        "pairId": "p10-pair",
        "completionItems": [item("p10", 0, "x"), item("p10", 1, "y")],
    }
    records = [
        *shown("p1"),
        outcome("p1", 1),  # merged: the bottom one accepted
        *shown("p2", privacy="Debug"),
        outcome("p2", 0, privacy="Debug"),  # no code stored
        *shown("p3"),  # shown, neither accepted
        outcome("p4", 0, a="deepseek-coder", b="claude-3-5-sonnet"),  # outcome alone
        outcome("p1", 1),  # a second outcome of p1
        *shown("p5", a="gpt-4o-mini", b="gpt-4o-mini"),  # two records, one bad pair
        outcome("p6", 0) | {"completionItems": [item("p6", 0, "x")]},
        outcome("p7", 2),
        *[dict(c, timestamp=T + 40 * 86400) for c in shown("p8")],
        lone,
        create_pair_response,
        {"prompt": "a chat line"},
        b"{broken",
        b"",
    ]
    write_month(tmp_path, records)
    parsed, battles, rejects = run(tmp_path)
    assert parsed.records_read == len(records)
    assert parsed.records_read == battles["records"].sum() + rejects.height  # conserved
    rows = {r["pair_id"]: r for r in battles.iter_rows(named=True)}
    assert set(rows) == {"p1-c0", "p2-c0", "p3-c0", "p4-c0"}  # keyed by the top completionId
    p1 = rows["p1-c0"]
    assert (p1["winner"], p1["records"], p1["file_type"]) == ("model_b", 3, "python")
    assert p1["tstamp"] == dt.datetime.fromtimestamp(T + 20, dt.UTC)  # the outcome's own time
    assert rows["p3-c0"]["winner"] == "tie (bothbad)" and not rows["p3-c0"]["accepted"]
    assert rows["p3-c0"]["records"] == 2 and rows["p3-c0"]["tstamp"] == dt.datetime.fromtimestamp(
        T, dt.UTC
    )
    assert rows["p4-c0"]["model_a"] == "deepseek-coder" and rows["p4-c0"]["records"] == 1
    assert (p1["latency_a"], p1["latency_b"]) == (0.5, 1.5)
    # code: kept (redacted) under Research, absent under Debug; never the prompt
    assert KEY not in p1["prefix"] and "<SECRET>" in p1["prefix"]
    assert p1["secrets_redacted"] == 1 and p1["completion_b"] == "return x + 1"
    assert rows["p2-c0"]["prefix"] is None and rows["p2-c0"]["completion_a"] is None
    assert rows["p2-c0"]["prefix_length"] == p1["prefix_length"]  # lengths are not sensitive
    assert p1["prefix_lines"] == 3 and "prompt" not in battles.columns
    assert p1["user_hash"] != USER and len(p1["user_hash"]) == 20
    reasons = sorted(rejects["reason"].to_list())
    assert reasons == sorted(
        [
            "duplicate_pair",
            "same_model_battle",
            "same_model_battle",
            "bad_items",
            "bad_accepted_index",
            "tstamp_outside_month",
            "tstamp_outside_month",
            "unpaired_completion",
            "missing_accepted_index",
            "unknown_layout",
            "invalid_json",
            "empty_line",
        ]
    )
    hashed = rejects.filter(pl.col("reason") == "bad_accepted_index")["user_hash"][0]
    assert hashed == p1["user_hash"]  # so forgetting the user reaches the reject


def test_rejects_keep_no_identity_and_no_code(tmp_path: Path) -> None:
    """A rejected record keeps its shape, nothing of the user or the code: userId, the
    extension's username, the repository URL, the prompt, prefixes and raw completions."""
    bad = outcome("q1", 2)  # bad_accepted_index, Research: every sensitive field present
    broken = orjson.dumps(completion("q2", 0, "m"))[:-40]  # cut: invalid JSON, same fields
    write_month(tmp_path, [bad, broken])
    _, _, rejects = run(tmp_path)
    assert sorted(rejects["reason"]) == ["bad_accepted_index", "invalid_json"]
    text = " ".join(rejects["raw"].to_list() + rejects["detail"].to_list())
    for leaked in (
        USER,
        "alice-dev",
        "secret-repo",
        "<system prompt>",
        "import os",
        "```python",
        KEY,
        "return x + 1",
    ):
        assert leaked not in text, leaked
    assert '"prefix":"<REMOVED>"' in text and '"acceptedIndex":2' in text  # the shape is kept
    assert rejects.filter(pl.col("reason") == "bad_accepted_index")["user_hash"][0] is not None


def test_acceptance_rate_counts_server_records_only() -> None:
    """The release holds accepted pairs alone: its rows must not raise acceptance rates."""
    log = pl.DataFrame(
        {
            "model_a": ["x"] * 8,
            "model_b": ["y"] * 8,
            "winner": ["model_a", "model_b"] + ["tie (bothbad)"] * 6,
            "accepted": [True, True] + [False] * 6,
            "latency_a": [0.4] * 8,
            "latency_b": [1.2] * 8,
            "file_type": ["go"] * 8,
            "source_format": ["copilot_log"] * 8,
        }
    )
    release = pl.DataFrame(
        {
            "model_a": ["x", "y"] * 15,
            "model_b": ["y", "x"] * 15,
            "winner": ["model_a"] * 30,
            "accepted": [True] * 30,
            "latency_a": [None] * 30,
            "latency_b": [None] * 30,
            "file_type": [None] * 30,
            "source_format": ["copilot_release"] * 30,
        },
        schema_overrides={"latency_a": pl.Float64, "latency_b": pl.Float64, "file_type": pl.String},
    )
    result = copilot_leaderboard(
        pl.concat([log, release]), MONTH, CopilotBoardOptions(bootstrap_rounds=5, min_battles=1)
    )
    assert result.figures["acceptance_rate"] == 2 / 8 and result.figures["logged_pairs"] == 8
    overall = {
        r["model"]: r
        for r in result.board.filter(pl.col("board") == "overall").iter_rows(named=True)
    }
    assert overall["x"]["acceptance_rate"] == 1 / 8 and overall["y"]["acceptance_rate"] == 1 / 8
    assert overall["x"]["median_pair_latency"] == 1.2  # users waited for the slower one
    assert result.figures["acceptance_by_wait"] == [
        {"wait_from_s": 1.0, "wait_to_s": 2.0, "pairs": 8, "acceptance_rate": 0.25}
    ]


def test_release_csv(tmp_path: Path) -> None:
    folder = tmp_path / MONTH
    folder.mkdir(parents=True)
    with open(folder / "copilot_arena_examples_v1.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "prefix",
                "suffix",
                "model_a",
                "model_b",
                "acceptedIndex",
                "completion_a",
                "completion_b",
            ]
        )
        w.writerow(
            [
                "import os\n\ndef main():\n    ",
                "\n",
                "codestral-2405",
                "gpt-4o",
                "0",
                "pass",
                "return",
            ]
        )
        w.writerow(["x = ", "", "gpt-4o", "gpt-4o", "1", "1", "2"])
    _parsed, battles, rejects = run(tmp_path)
    assert battles.height == 1 and rejects["reason"].to_list() == ["same_model_battle"]
    row = battles.row(0, named=True)
    assert (row["winner"], row["source_format"], row["privacy"]) == (
        "model_a",
        "copilot_release",
        "Research",
    )
    assert row["prefix"] == "import os\n\ndef main():\n    " and row["tstamp"].day == 1


def test_simulated_completions_leave_chat_logs_unchanged(tmp_path: Path) -> None:
    simulate_months(tmp_path / "plain", ["2024-01"], 300, seed=4)
    simulate_months(tmp_path / "with", ["2024-01"], 300, seed=4, completions_per_month=200)
    for f in sorted((tmp_path / "plain" / "2024-01").iterdir()):
        assert f.read_bytes() == (tmp_path / "with" / "2024-01" / f.name).read_bytes()
    assert (tmp_path / "with" / "_completions" / "2024-01").is_dir()
    assert not (tmp_path / "plain" / "_completions").exists()


def _skill(root: Path) -> dict[str, float]:
    models = pl.read_parquet(root / "_truth" / "completion_models.parquet")
    return dict(zip(models["name"], models["skill_coding"]))


def _spearman(result, skill: dict[str, float]) -> dict[str, float]:
    out = {}
    for name in ("overall", "latency_controlled"):
        b = result.board.filter(pl.col("board") == name)
        out[name] = stats.spearmanr(b["rating"], [skill[m] for m in b["model"]]).statistic
    return out


def test_latency_control_mechanism_on_a_planted_side_effect(tmp_path: Path) -> None:
    """The exploratory board's mechanism: with a (counterfactual) planted effect of a side's
    own latency on which side is accepted, and no position bias, the plain board is pulled
    by latency and the latency-controlled one follows skill. Copilot Arena shows both
    completions at once, so the default simulator plants no such effect (next test)."""
    world = World.build(seed=11)
    cfg = CompletionConfig(
        accept_rate=0.999,
        wait_effect=0.0,
        position_bias=0.0,
        latency_effect=-4.0,
        latency_spread=0.8,
    )
    generate_completions(world, tmp_path, MONTH, 12_000, cfg)
    parsed, _ = parse_files(str(tmp_path / "_completions"), MONTH, salt="s")
    result = copilot_leaderboard(
        merge_pairs(parsed, MONTH), MONTH, CopilotBoardOptions(bootstrap_rounds=20)
    )
    rho = _spearman(result, _skill(tmp_path))
    print(
        f"planted side effect: Spearman with true skill plain {rho['overall']:.3f}, latency-controlled "
        f"{rho['latency_controlled']:.3f}; coefficient {result.latency['coef']:.3f} "
        f"[{result.latency['lower']:.3f}, {result.latency['upper']:.3f}]"
    )
    assert result.latency["coef"] < 0 and result.latency["upper"] < 0  # slower side loses
    assert rho["latency_controlled"] > rho["overall"] and rho["latency_controlled"] > 0.9
    assert 0.45 < result.figures["top_share"] < 0.55  # no position bias planted


def test_latency_as_copilot_arena_shows_it(tmp_path: Path) -> None:
    """The default simulator: both completions appear together, the wait (the slower
    one) lowers acceptance, nothing favours the faster side. The control must then be
    harmless (coefficient interval around 0, both boards as close to skill), and the
    acceptance-by-wait table must show the planted cost of waiting."""
    world = World.build(seed=11)
    generate_completions(world, tmp_path, MONTH, 12_000)
    parsed, _ = parse_files(str(tmp_path / "_completions"), MONTH, salt="s")
    result = copilot_leaderboard(
        merge_pairs(parsed, MONTH), MONTH, CopilotBoardOptions(bootstrap_rounds=20)
    )
    rho = _spearman(result, _skill(tmp_path))
    lat = result.latency
    print(
        f"no side effect: Spearman plain {rho['overall']:.3f}, latency-controlled {rho['latency_controlled']:.3f}; "
        f"coefficient {lat['coef']:.3f} [{lat['lower']:.3f}, {lat['upper']:.3f}]; "
        f"acceptance by wait {result.figures['acceptance_by_wait']}"
    )
    assert lat["lower"] < 0 < lat["upper"] and lat["status"] == "exploratory"
    assert rho["overall"] > 0.9 and abs(rho["latency_controlled"] - rho["overall"]) < 0.03
    by_wait = [b for b in result.figures["acceptance_by_wait"] if b["pairs"] >= 200]
    rates = [b["acceptance_rate"] for b in by_wait]
    assert len(rates) >= 3 and rates == sorted(rates, reverse=True)  # longer waits, fewer accepted
    truth = pl.read_parquet(tmp_path / "_truth" / "completions" / f"{MONTH}.parquet")
    assert result.figures["acceptance_rate"] == pytest.approx(truth["p_accept"].mean(), abs=0.02)


def test_completion_assets_through_dagster(arena_env) -> None:
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    world = World.build(seed=int(arena_env["ARENA_SIM_WORLD_SEED"]))
    summary = generate_completions(world, raw, "2024-01", 1500)
    result = materialize("2024-01", "completion_battles,copilot_leaderboard,copilot_user_boards")
    assert result.success
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {
        "records_conserved": True,
        "no_code_without_consent": True,
        "intervals_contain_ratings": True,
    }
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    battles = lake.read("completion_battles", "2024-01")
    junk = pl.read_parquet(raw / "_truth" / "completion_junk" / "2024-01.parquet")
    rejects = lake.read("completion_rejects", "2024-01")
    assert battles.height == summary["pairs"] and rejects.height == summary["junk"]
    assert sorted(rejects["reason"]) == sorted(junk["expected_reason"])
    truth = pl.read_parquet(raw / "_truth" / "completions" / "2024-01.parquet")
    assert (
        battles["secrets_redacted"].sum()
        == truth.filter(pl.col("planted_secret") & (pl.col("privacy") == "Research")).height
    )
    assert battles.filter(pl.col("accepted")).height == truth["accepted_index"].is_not_null().sum()
    meta = result.asset_materializations_for_node("copilot_leaderboard")[0].metadata
    site = json.loads(Path(meta["site_data"].value).read_text())
    assert site["month"] == "2024-01" and site["boards"]["overall"][0]["rank"] == 1
    assert {"overall", "latency_controlled"} <= set(site["boards"])
    # Copilot Arena's own fit by default; each user's board keyed by the salted hash only
    assert meta["fit"].value == "copilot-arena" and site["figures"]["fit"] == "copilot-arena"
    users = result.asset_materializations_for_node("copilot_user_boards")[0].metadata
    boards = lake.read("copilot_user_boards", "2024-01")
    assert users["users_with_a_board"].value == boards["user_hash"].n_unique()
    assert set(boards["user_hash"]) <= set(battles["user_hash"])


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no fetched copy of lmarena/copilot-arena")
def test_the_published_release_file(tmp_path: Path) -> None:
    """Copilot Arena's own data/copilot_arena_examples_v1.csv, read from a fetched mirror
    (not committed here): every row a battle or a reject, rows counted independently."""
    data = subprocess.run(
        ["git", "--git-dir", str(MIRROR), "show", "HEAD:data/copilot_arena_examples_v1.csv"],
        capture_output=True,
        check=True,
    ).stdout
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
    published = Counter(
        (r["model_a"], r["model_b"], winners[int(float(r["acceptedIndex"]))])
        for r in rows
        if r.get("acceptedIndex") not in (None, "")
    )
    ours = Counter(battles.select("model_a", "model_b", "winner").iter_rows())
    assert not ours - published and sum(ours.values()) == battles.height
