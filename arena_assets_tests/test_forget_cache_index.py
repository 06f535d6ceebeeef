"""The LLM key index keeps every cached answer findable: a labelling step that fails
after many calls still indexes what it cached; a rerun adds its rows to the month's index
instead of replacing them; and a forget that stopped after recording its journal but
before deleting the user's cache entries is finished by ``forget --resume``, even after a
rebuild of the month ran in between."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from arena_assets.cli import main as cli_main
from arena_assets.ingest import load_model_registry
from arena_assets.ingest.forgotten import add_forgotten
from arena_assets.llm import LLMTask, ResponseCache
from arena_assets.llm.batch import Progress
from arena_assets.pipeline.clean import clean_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.pipeline.topics import topic_labels_month
from arena_assets.privacy import journal
from arena_assets.privacy.cache_keys import index_partitions, index_table, write_key_index
from arena_assets.privacy.forget import forget_in_lake
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake

MONTH = "2024-02"
STOP_AFTER = 40  # answers received before the step dies


class Killed(Exception):
    """The step's process stopping in the middle of its calls."""


@pytest.fixture
def month(arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    simulate_months(raw, [MONTH], 120, seed=12)
    cache_root = str(Path(arena_env["ARENA_LAKE_ROOT"]).parent / "llm-cache")
    monkeypatch.setenv("ARENA_LLM_CACHE_ROOT", cache_root)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    ingest_month(
        lake,
        str(raw),
        MONTH,
        salt=arena_env["ARENA_USER_SALT"],
        known_models=load_model_registry(str(raw)),
    )
    clean_month(lake, MONTH, threads=1)
    task = LLMTask(
        model="sim-labeler-large", base_url=arena_env["ARENA_SIM_BASE_URL"], api_key="sim"
    )
    return lake, task, cache_root


def _index(lake: Lake) -> pl.DataFrame:
    return pl.concat([lake.read(t, m) for t, m in index_partitions(lake)])


def _cached_keys(cache_root: str) -> dict[str, set[str]]:
    """namespace -> every key with an answer in the cache (read afresh)."""
    out = {}
    for chunk in Path(cache_root).rglob("chunk-*.parquet"):
        ns = str(chunk.parent.relative_to(cache_root))
        if ns not in out:
            out[ns] = {e["key"] for e in ResponseCache(cache_root, ns).entries()}
    return out


def _stop_after(n: int):
    def progress(p: Progress) -> None:
        if p.done - p.cached >= n:
            raise Killed(f"stopped after {p.done} answers")

    return progress


def test_a_step_that_fails_after_many_calls_indexes_what_it_cached(month) -> None:
    lake, task, cache_root = month
    with pytest.raises(Killed):
        topic_labels_month(
            lake, MONTH, task, cache_root=cache_root, progress=_stop_after(STOP_AFTER)
        )
    assert not lake.exists("topic_labels", MONTH)  # the step failed: no partition
    cached = _cached_keys(cache_root)
    assert sum(map(len, cached.values())) >= STOP_AFTER // 2  # answers were cached
    index = _index(lake)
    for ns, keys in cached.items():
        indexed = set(index.filter(pl.col("namespace") == ns)["key"])
        assert keys <= indexed, f"{ns}: {len(keys - indexed)} cached answers not indexed"
    assert index["user_hash"].null_count() == 0 and index["conv_id"].null_count() == 0


def test_a_rerun_adds_to_the_index_of_the_month(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    first = pl.DataFrame(
        {"conv_id": ["c1", "c2"], "user_hash": ["u1", "u2"], "namespace": "n", "key": ["k1", "k2"]}
    )
    again = pl.DataFrame(
        {"conv_id": ["c2", "c3"], "user_hash": ["u2", "u3"], "namespace": "n", "key": ["k2", "k9"]}
    )
    write_key_index(lake, "bench_prompts", MONTH, first)
    write_key_index(lake, "bench_prompts", MONTH, again)  # other prompts: k1 stays cached
    index = lake.read(index_table("bench_prompts"), MONTH)
    assert sorted(index.select("conv_id", "key").rows()) == [
        ("c1", "k1"),
        ("c2", "k2"),
        ("c3", "k9"),
    ]


def test_resume_deletes_the_cache_entries_of_a_forget_that_stopped_before_them(
    month, arena_env: dict[str, str], capsys
) -> None:
    lake, task, cache_root = month
    topic_labels_month(lake, MONTH, task, cache_root=cache_root)
    index = _index(lake)
    counts = index.group_by("user_hash").len().sort(["len", "user_hash"], descending=True)
    target = counts["user_hash"][0]
    mine = index.filter(pl.col("user_hash") == target)
    others = index.filter(pl.col("user_hash") != target)
    own = mine.join(others, on=["namespace", "key"], how="anti").select("namespace", "key").unique()
    assert own.height > 0

    def present() -> int:
        cached = _cached_keys(cache_root)
        return sum(k in cached.get(ns, set()) for ns, k in own.rows())

    assert present() == own.height
    # what a forget had done when its process died: listed, journal saved, lake edited
    add_forgotten(lake, [target], arena_env["ARENA_USER_SALT"])
    entry = journal.new_entry(target)
    entry.months = [MONTH]
    journal.save(lake, entry)
    forget_in_lake(lake, target)
    # a rebuild of the month runs before anyone resumes: the user's index rows stay
    topic_labels_month(lake, MONTH, task, cache_root=cache_root)
    assert _index(lake).filter(pl.col("user_hash") == target).height == mine.height
    assert present() == own.height

    capsys.readouterr()
    assert cli_main(["forget", "--resume"]) == 0
    out = capsys.readouterr().out
    assert f"LLM answer cache: deleted {own.height} entries" in out
    assert present() == 0
    assert _index(lake).filter(pl.col("user_hash") == target).height == 0
    assert _index(lake).filter(pl.col("user_hash") != target).height == others.height
