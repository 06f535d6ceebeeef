"""The topic stage end to end against the simulated arena endpoint (labels and embeddings
answered from the simulator's prompt truth), scored against that truth."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import adjusted_rand_score, f1_score

from arena_assets.labels import ClusterConfig
from arena_assets.labels.prompts import CRITERIA
from arena_assets.llm import LLMTask, ResponseCache, embed_texts
from arena_assets.pipeline.clean import clean_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.pipeline.topics import topic_clusters_month, topic_labels_month
from arena_assets.simulator import read_prompt_truth, simulate_months, start_endpoint
from arena_assets.simulator.endpoint import Faults
from arena_assets.storage import Lake

MONTH = "2024-02"
LABELS = (*CRITERIA, "math", "creative_writing")


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim")
    simulate_months(root / "raw", [MONTH], 900, seed=21)
    lake = Lake(str(root / "lake"))
    ingest_month(lake, str(root / "raw"), MONTH, salt="t", known_models=None)
    clean_month(lake, MONTH, threads=1)
    ep = start_endpoint(seed=21, truth_root=root / "raw")
    yield root, lake, ep
    ep.stop()


def _truth_by_text(root) -> dict[str, dict]:
    truth = read_prompt_truth(root / "raw", MONTH).unique("text", keep="first")
    return {r["text"]: r for r in truth.iter_rows(named=True)}


@pytest.mark.slow
def test_labels_and_clusters_against_the_simulator_truth(month, capsys):
    root, lake, ep = month
    truth = _truth_by_text(root)
    f1 = {}
    for model in ("sim-labeler-large", "sim-labeler-small"):
        task = LLMTask(model=model, base_url=ep.base_url, api_key="sim", max_concurrency=8)
        step = topic_labels_month(lake, MONTH, task, cache_root=str(root / "cache"))
        prompts = lake.read("conversations", MONTH, columns=["dedup_key", "first_prompt"]).unique(
            "dedup_key"
        )
        rows = (
            step.labels.unique("dedup_key")
            .join(prompts, on="dedup_key")
            .filter(pl.col("criteria_status") == "ok")
        )
        matched = [
            (r, truth[r["first_prompt"]])
            for r in rows.iter_rows(named=True)
            if r["first_prompt"] in truth
        ]
        assert (
            len(matched) >= 0.8 * rows.height
        )  # most first prompts are found verbatim in the truth
        f1[model] = {
            c: round(f1_score([t[c] for _, t in matched], [r[c] for r, _ in matched]), 3)
            for c in LABELS
        }
        assert set(step.out_of_range.values()) == {0}
    with capsys.disabled():
        print(f"\nF1 per label on {len(matched)} distinct prompts: {f1}")
    assert min(f1["sim-labeler-large"].values()) >= 0.9
    assert np.mean(list(f1["sim-labeler-small"].values())) < np.mean(
        list(f1["sim-labeler-large"].values())
    )
    # a rerun is answered from the cache: zero calls at the endpoint
    before = ep.call_count()
    topic_labels_month(
        lake,
        MONTH,
        LLMTask(model="sim-labeler-large", base_url=ep.base_url, api_key="sim"),
        cache_root=str(root / "cache"),
    )
    assert ep.call_count() == before

    etask = LLMTask(model="sim-embed-large", base_url=ep.base_url, api_key="sim", max_concurrency=4)
    cache = ResponseCache(str(root / "cache"), "embeddings")
    step = topic_clusters_month(
        lake,
        MONTH,
        lambda texts: embed_texts(etask, texts, cache)[0],
        cfg=ClusterConfig(),
        namer=LLMTask(model="sim-labeler-large", base_url=ep.base_url, api_key="sim"),
        cache_root=str(root / "cache"),
    )
    prompts = lake.read("conversations", MONTH, columns=["dedup_key", "first_prompt"]).unique(
        "dedup_key"
    )
    joined = step.assignments.join(prompts, on="dedup_key").filter(
        pl.col("first_prompt").is_in(list(truth))
    )
    ari = adjusted_rand_score(
        [truth[t]["topic"] for t in joined["first_prompt"]], joined["cluster_id"].to_list()
    )
    with capsys.disabled():
        print(
            f"endpoint embeddings: {step.summary.height} clusters for {step.assignments.height} prompts "
            f"({len({truth[t]['topic'] for t in joined['first_prompt']})} true topics), ARI {ari:.3f}; "
            f"names by LLM: {step.summary['name_source'].str.starts_with('llm:').sum()}"
        )
    assert ari >= 0.8


@pytest.mark.slow
def test_faults_at_the_simulator_every_item_finishes_once(month):
    root, lake, ep = month
    ep.set_faults(
        Faults(
            rate_429=0.06,
            rate_500=0.06,
            rate_garbage=0.06,
            rate_empty=0.06,
            rate_truncated=0.06,
            retry_after=0.01,
            seed=3,
        )
    )
    try:
        task = LLMTask(
            model="sim-labeler-large", base_url=ep.base_url, api_key="sim", max_retries=3
        )
        step = topic_labels_month(lake, MONTH, task, cache_root=str(root / "cache-faults"))
    finally:
        ep.set_faults(Faults())
    conv = lake.read("conversations", MONTH, columns=["conv_id"])
    assert step.labels.height == conv.height and step.labels["conv_id"].n_unique() == conv.height
    st = step.report.batches["prompt-tags"].statuses
    asked = (
        step.labels.unique("label_key").filter(pl.col("criteria_status") != "not_applicable").height
    )
    assert sum(st.values()) == asked  # every distinct prompt finished once, in some status
    # faults showed: garbled, empty and cut replies stay unread (LMArena's labeller asks once;
    # ARENA_LABEL_REASK_UNREADABLE is off), 429 / 500 are retried by the client
    assert st["parse_failed"] > 0 and st["ok"] > 0.7 * asked
    assert ep.call_count(status=429) > 0 and ep.call_count(status=500) > 0
    before = ep.call_count()
    again = topic_labels_month(lake, MONTH, task, cache_root=str(root / "cache-faults"))
    # only the items that failed or did not parse are asked again (neither was cached), and
    # against the healed endpoint each distinct request takes one call (items sharing a
    # request, e.g. one image in two conversations, share it): every other request is a
    # cache hit
    missing = sum(
        b.statuses["failed"] + b.statuses["parse_failed"] for b in step.report.batches.values()
    )
    asked_again = ep.call_count() - before
    assert 0 < asked_again <= missing
    assert sum(b.calls for b in again.report.batches.values()) == asked_again
    assert (
        sum(b.cache_hits for b in again.report.batches.values())
        == sum(b.unique_requests for b in again.report.batches.values()) - asked_again
    )
    assert again.labels.height == conv.height
    assert (
        sum(
            b.statuses["parse_failed"] + b.statuses["failed"] for b in again.report.batches.values()
        )
        == 0
    )
