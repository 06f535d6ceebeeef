"""Batch mode through Dagster against the simulated arena's Batch API: a month's LLM assets
give online mode's rows with no call online, a step killed while its jobs are in flight
resumes them without submitting any again (counted at the arena), the plan prices both
modes, and `arena-assets llm export-batch` / `import-batch` round-trip a month's requests
answered elsewhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import openai
import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from arena_assets.cli import main as cli
from arena_assets.cli.demo import DEMO_CONVERSATIONS_PER_MONTH
from arena_assets.simulator import simulate_months
from arena_assets.simulator.faults import Faults
from arena_assets.simulator.shared import simulated_endpoint
from arena_assets.storage import Lake
from arena_assets_tests.conftest import arena_env_values, with_simulated_arena
from arena_assets_tests.harness import materialize

MONTH = "2024-01"
ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = "raw_logs,raw_rejects,conversations"
LLM = "topic_labels,topic_clusters,bench_prompts,model_answers,judgments"
CANDIDATES = ("kelp-34b-pro", "atlas-8b-preview")


def _candidates(mode: str) -> str:
    return json.dumps(
        [{"name": n, "base_url": "simulated", "params": {"mode": mode}} for n in CANDIDATES]
    )


def _use(monkeypatch, raw: Path, lake: Path, mode: str) -> dict[str, str]:
    """Every setting for a lake of its own on the shared raw root, every LLM task in
    ``mode``."""
    env = with_simulated_arena(
        {
            **arena_env_values(lake),
            "ARENA_RAW_ROOT": str(raw),
            "ARENA_CANDIDATES": _candidates(mode),
        }
    )
    for task in ("LABELER", "EMBED", "JUDGE"):
        env[f"ARENA_{task}_MODE"] = mode
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def _arena(env: dict[str, str]):
    return simulated_endpoint(env["ARENA_RAW_ROOT"], int(env["ARENA_SIM_WORLD_SEED"]))


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("raw")
    simulate_months(root, [MONTH], 250, seed=7)
    return root


def _rows(lake: Path, asset: str) -> pl.DataFrame:
    return Lake(str(lake / "lake")).read(asset, MONTH)  # arena_env_values puts it there


def _both_modes(monkeypatch, raw: Path, tmp: Path) -> tuple[Path, Path, int, int]:
    """The month's LLM assets online into one lake, in batch mode into another; the online
    calls and the jobs the batch run made."""
    lakes = {}
    for mode in ("online", "batch"):
        lakes[mode] = tmp / mode
        env = _use(monkeypatch, raw, lakes[mode], mode)
        assert materialize(MONTH, UPSTREAM).success
        ep = _arena(env)
        ep.set_faults(Faults())
        ep.reset_counts()
        assert materialize(MONTH, LLM).success
        online_calls = ep.call_count(route="chat/completions") + ep.call_count(route="embeddings")
        if mode == "online":
            assert online_calls > 0
    return lakes["online"], lakes["batch"], online_calls, ep.call_count(route="batches")


def _assert_same_rows(online: Path, batch: Path) -> None:
    for asset in LLM.split(","):
        a, b = _rows(online, asset), _rows(batch, asset)
        assert a.height > 0, asset
        assert_frame_equal(a, b, check_exact=True), asset


def test_batch_mode_gives_online_modes_rows_with_no_call_online(monkeypatch, raw, tmp_path):
    online, batch, calls, jobs = _both_modes(monkeypatch, raw, tmp_path)
    assert calls == 0  # labels, embeddings, cluster names, answers, verdicts: all in jobs
    assert jobs >= 5  # label tasks, embeddings, cluster names, each candidate, the judge
    _assert_same_rows(online, batch)


@pytest.mark.slow
def test_the_demos_month_is_the_same_in_both_modes(monkeypatch, tmp_path):
    """At the demo's size (its seed and conversations a month)."""
    raw = tmp_path / "raw"
    simulate_months(raw, [MONTH], DEMO_CONVERSATIONS_PER_MONTH, seed=7)
    online, batch, calls, jobs = _both_modes(monkeypatch, raw, tmp_path)
    assert calls == 0 and jobs >= 5
    _assert_same_rows(online, batch)


def test_a_step_killed_while_its_jobs_run_resumes_them(monkeypatch, raw, tmp_path):
    """topic_labels in batch mode, killed (SIGKILL) once every job it submits ahead is
    created and held in flight: the rerun waits for the same jobs, and the arena saw as
    many submissions as a run that was never killed."""
    env = _use(monkeypatch, raw, tmp_path / "clean", "batch")
    assert materialize(MONTH, UPSTREAM).success
    ep = _arena(env)
    ep.set_faults(Faults())
    ep.reset_counts()
    assert materialize(MONTH, "topic_labels").success
    clean_jobs = ep.call_count(route="batches")
    assert clean_jobs >= 2
    env = _use(monkeypatch, raw, tmp_path / "killed", "batch")
    assert materialize(MONTH, UPSTREAM).success
    ep.set_faults(Faults(batch_hold=True))
    ep.reset_counts()
    code = f"from arena_assets_tests.harness import materialize; materialize({MONTH!r}, 'topic_labels')"
    child = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert ep.batches.wait_created(clean_jobs, timeout=240), "the step never submitted"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    ep.set_faults(Faults())
    result = materialize(MONTH, "topic_labels")
    assert result.success
    assert ep.call_count(route="batches") == ep.batches.created == clean_jobs
    assert ep.call_count(route="chat/completions") == 0
    assert_frame_equal(_rows(tmp_path / "clean", "topic_labels"), _rows(tmp_path / "killed", "topic_labels"))  # fmt: skip
    assert not list((tmp_path / "killed").rglob("_batches/*.json"))  # every record collected


def test_the_plan_prices_both_modes(monkeypatch, raw, tmp_path, capsys):
    _use(monkeypatch, raw, tmp_path, "online")
    assert materialize(MONTH, UPSTREAM).success
    monkeypatch.setenv("ARENA_LABELER_BASE_URL", "https://api.openai.com/v1")
    monkeypatch.setenv("ARENA_LABELER_API_KEY", "sk-test")
    monkeypatch.setenv("ARENA_LABELER_MODE", "batch")
    assert cli(["plan", "--month", MONTH, "--assets", "topic_labels", "--json"]) == 0
    (plan,) = json.loads(capsys.readouterr().out)
    assert plan["calls"] > 0 and plan["cost_online"] > 0
    assert plan["cost_batch"] == pytest.approx(plan["cost_online"] / 2)  # OpenAI: half
    assert plan["cost"] == pytest.approx(plan["cost_batch"])  # the mode set is the bill
    assert {b["mode"] for b in plan["batches"]} == {"batch"}
    assert sum(b["batch_jobs"] for b in plan["batches"]) >= 2
    monkeypatch.setenv("ARENA_LABELER_PRICE_INPUT_PER_1M_BATCH", "0.15")  # as online: set
    monkeypatch.setenv("ARENA_LABELER_PRICE_OUTPUT_PER_1M_BATCH", "0.6")
    assert cli(["plan", "--month", MONTH, "--assets", "topic_labels"]) == 0
    out = capsys.readouterr().out
    assert "online $" in out and "batch $" in out and "every task in batch mode" in out
    total = next(line for line in out.splitlines() if line.startswith("month total"))
    online, batch = (float(x.split("$")[1].split()[0].rstrip(",")) for x in total.split("every task")[1:])  # fmt: skip
    assert online == batch > 0


def test_export_and_import_round_trip_a_months_requests(monkeypatch, raw, tmp_path, capsys):
    """The labeller's pending requests exported, answered elsewhere (the arena's Batch API
    by hand, as a user with OpenAI's would), imported with a bad line of every kind: each
    line gets its outcome, and the month's run then asks only what was not accepted."""
    env = _use(monkeypatch, raw, tmp_path / "lake", "online")
    assert materialize(MONTH, UPSTREAM).success
    requests = tmp_path / "requests.jsonl"
    assert cli(["llm", "export-batch", "--task", "labeler", "--month", MONTH, "--out", str(requests)]) == 0  # fmt: skip
    lines = [orjson.loads(x) for x in requests.read_bytes().splitlines()]
    assert len(lines) > 500 and len({x["custom_id"] for x in lines}) == len(lines)
    assert {x["url"] for x in lines} == {"/v1/chat/completions"}
    ep = _arena(env)
    ep.set_faults(Faults())
    client = openai.OpenAI(base_url=ep.base_url, api_key="x")
    job = client.batches.create(
        input_file_id=client.files.create(file=requests.open("rb"), purpose="batch").id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )
    assert ep.batches.wait_created(1, timeout=10)
    while (job := client.batches.retrieve(job.id)).status != "completed":
        assert job.status in ("validating", "in_progress", "finalizing"), job.status
    out = [orjson.loads(x) for x in client.files.content(job.output_file_id).content.splitlines()]
    assert len(out) == len(lines)
    # a parser refuses one answer, one request failed, one line twice, one unknown, one junk
    out[0]["response"]["body"]["choices"][0]["message"]["content"] = "no verdict here"
    out[1] = {"id": "x", "custom_id": out[1]["custom_id"], "response": None,
              "error": {"code": "server_error", "message": "failed elsewhere"}}  # fmt: skip
    dup = dict(out[2])
    unknown = {**out[3], "custom_id": "0" * 32}
    answers = tmp_path / "answers.jsonl"
    answers.write_bytes(
        b"".join(orjson.dumps(x) + b"\n" for x in [*out, dup, unknown]) + b"not json\n"
    )
    report = tmp_path / "report.jsonl"
    ep.reset_counts()
    assert cli(["llm", "import-batch", str(answers), "--task", "labeler", "--month", MONTH, "--report", str(report)]) == 0  # fmt: skip
    said = capsys.readouterr().out
    outcomes = [orjson.loads(x) for x in report.read_bytes().splitlines()]
    counts = {o: sum(x["outcome"] == o for x in outcomes) for o in {x["outcome"] for x in outcomes}}
    assert counts == {"accepted": len(lines) - 2, "parse_failed": 1, "failed": 1,
                      "duplicate": 1, "unknown": 1, "unreadable": 1}  # fmt: skip
    assert sum(counts.values()) == len(out) + 3  # every line of the file, once
    assert f"{len(lines) - 2:,} accepted" in said and "0 pending" in said
    assert ep.call_count() == 0  # an import calls nothing
    # the two not accepted are pending still; the run asks exactly those
    assert cli(["llm", "export-batch", "--task", "labeler", "--month", MONTH, "--out", str(requests)]) == 0  # fmt: skip
    assert len(requests.read_bytes().splitlines()) == 2
    assert materialize(MONTH, "topic_labels").success
    assert ep.call_count(route="chat/completions") == 2
