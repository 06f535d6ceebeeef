"""What a new user sees in the Dagster UI after `make demo`, each checked where it is
made: Markdown metadata escaped and rounded, the boards' metadata ordered and linked to
the site, the history preview, readable cluster names, a board skipped for a reason that
says why, no startup warning about backfill policies, no loopback address in metadata,
and runs launched by `arena-assets backfill` carrying a job name."""

from __future__ import annotations

import subprocess
import sys
import warnings

import polars as pl
import pytest
from markdown_it import MarkdownIt

from arena_assets.storage import Lake

# Dagster's UI renders metadata Markdown as CommonMark + tables, raw HTML dropped
RENDER = MarkdownIt("commonmark").enable("table")


def test_markdown_metadata_is_text_never_markup():
    from arena_assets.defs.metadata import table_metadata

    frame = pl.DataFrame(
        {
            "reason": ["bad_json"],
            "raw": ['{"user_id":"<USER>","x":1}'],
            "board": ["language:<code>"],
            "rating": [1158.8767225358854],
            "win_rate": [0.123456789],
            "n": [12],
        }
    )
    meta = table_metadata(
        frame,
        "file:///x.parquet",
        descriptions={
            "board": "overall, style_control or language:<code>.",
            "raw": "the *raw* line, _as read_",
        },
    )
    html = RENDER.render(meta["preview"].value)
    assert "&lt;USER&gt;" in html and "language:&lt;code&gt;" in html
    assert "1158.9" in html and "1158.87" not in html  # ratings: one decimal
    assert "0.1235" in html and "0.12345" not in html  # everything else: 4 significant digits
    columns = {c.name: c.description for c in meta["dagster/column_schema"].columns}
    assert "language:&lt;code&gt;." in RENDER.render(columns["board"])
    assert "<em>" not in RENDER.render(columns["raw"])


def test_json_metadata_is_rounded():
    from arena_assets.report import rounded

    assert rounded(
        {"spearman": 0.9323308270676691, "pairs": [0.07051282051282051, 3], "name": "x"}
    ) == {"spearman": 0.9323, "pairs": [0.07051, 3], "name": "x"}


def test_a_skipped_board_says_why_no_model_is_left():
    from arena_assets.ranking.leaderboard import TooFewModels, fit_bt

    battles = pl.DataFrame(
        {
            "model_a": ["a", "b", "c", "a"],
            "model_b": ["b", "c", "a", "c"],
            "winner": ["model_a", "model_a", "model_a", "tie"],
        }
    )
    with pytest.raises(TooFewModels) as err:
        fit_bt(battles, min_battles=300)
    assert str(err.value).startswith(
        "0 of 3 model(s) can be ranked, a leaderboard needs two: "
        "3 have fewer than min_battles=300 battles (the most: 3,"
    )


def test_cluster_names_read_as_names():
    from arena_assets.labels.clusters import ClusterConfig, build_topic_clusters
    from arena_assets.simulator.topics import TOPICS

    names = [t.name for t in TOPICS]
    assert "Villain's monologue about a perfect poison" in names
    assert "List of five ideas without using the word good" in names
    assert not [n for n in names if " s " in n or n.split()[-1].lower() in ("a", "from", "that")]

    def embed(texts):
        import numpy as np

        return np.array([[1.0, 0.0] if "villain" in t else [0.0, 1.0] for t in texts])

    prompts = pl.DataFrame(
        {
            "dedup_key": [f"k{i}" for i in range(6)],
            "n_conversations": [1] * 6,
            "first_prompt": ["write a villain monologue about poison"] * 3
            + ["list ideas for a garden party menu"] * 3,
        }
    )
    _, summary, _ = build_topic_clusters(
        prompts, None, embed, month="2024-01", cfg=ClusterConfig(n_clusters=2)
    )
    names = summary["cluster_name"].to_list()
    assert all(" / " not in n and n[0].isupper() and ", " in n for n in names), names


def test_no_backfill_policy_warning_when_the_code_location_loads():
    from arena_assets.definitions import defs

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings(  # what arena_assets.definitions installs, kept in place
            "ignore",
            message=r"Asset job (monthly_refresh|rematerialize_after_forget|"
            r"__ASSET_JOB\S*) materializes",
            category=UserWarning,
        )
        loaded = defs()
        for job in ("monthly_refresh", "rematerialize_after_forget"):
            loaded.resolve_job_def(job)
    assert not [w for w in caught if "BackfillPolicies" in str(w.message)]
    proc = subprocess.run(  # and in a process that loads it as `make ui`'s code server does
        [
            sys.executable,
            "-c",
            "import warnings; warnings.simplefilter('always'); "
            "from arena_assets.definitions import defs; d = defs(); "
            "[d.resolve_job_def(j) for j in ('monthly_refresh', 'rematerialize_after_forget')]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "varying BackfillPolicies" not in proc.stderr


def test_the_simulated_arena_is_named_not_shown():
    from arena_assets.defs.llm_resources import LLMTaskResource
    from arena_assets.llm.batch import BatchReport
    from arena_assets.llm.endpoints import public_base_url
    from arena_assets.simulator.shared import simulated_endpoint_url

    url = simulated_endpoint_url(None, 7)
    assert url.startswith("http://127.0.0.1:")
    task = LLMTaskResource(base_url="simulated", model="m", sim_seed=7, sim_base_url=url).task()
    report = BatchReport(model="sim-labeler-large", base_url=task.base_url).as_metadata()
    assert report["base_url"] == "simulated (world seed 7)"
    assert public_base_url("https://api.openai.com/v1") == "https://api.openai.com/v1"


def test_backfill_runs_carry_the_job_name(arena_env, tmp_path, monkeypatch):
    """A run of `arena-assets backfill` is the monthly_refresh job, not an ad-hoc asset
    selection (which the UI's partition pages show as "Job None")."""
    import shutil
    from pathlib import Path

    import dagster as dg

    from arena_assets.simulator import simulate_months

    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    simulate_months(arena_env["ARENA_RAW_ROOT"], ["2024-01"], 40, seed=3)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena_assets.cli",
            "backfill",
            "--from",
            "2024-01",
            "--to",
            "2024-01",
            "--select",
            "raw_logs,raw_rejects",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert Lake(arena_env["ARENA_LAKE_ROOT"]).exists("raw_logs", "2024-01")
    with dg.DagsterInstance.get() as instance:
        (run,) = instance.get_runs()
        assert run.job_name == "monthly_refresh" and run.tags["dagster/partition"] == "2024-01"
        record = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("raw_logs"), asset_partitions=["2024-01"]),
            limit=1,
        ).records[0]
        assert record.run_id == run.run_id
