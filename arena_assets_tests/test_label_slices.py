"""A production month's label batches are asked in slices (``labels.label.SLICE`` requests at
a time, to bound memory): sliced or not, the same labels, the same calls, the same plan."""

from __future__ import annotations

import polars as pl
import pytest

from arena_assets.labels import label as L
from arena_assets.llm import LLMTask
from arena_assets.llm.plan import planning
from arena_assets.pipeline.clean import clean_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.simulator import simulate_months, start_endpoint
from arena_assets.storage import Lake

MONTH = "2024-03"


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    root = tmp_path_factory.mktemp("slices")
    simulate_months(root / "raw", [MONTH], 90, seed=5)
    lake = Lake(str(root / "lake"))
    ingest_month(lake, str(root / "raw"), MONTH, salt="t", known_models=None)
    clean_month(lake, MONTH, threads=1)
    conv = lake.read("conversations", MONTH, columns=["conv_id", "dedup_key", "first_prompt", "messages"])
    # copies of some conversations under new ids: their answers are the same requests, which
    # must cost one call however the batch is cut
    copies = conv.head(15).with_columns(pl.col("conv_id") + "-copy")
    ep = start_endpoint(seed=5, truth_root=root / "raw")
    yield root, pl.concat([conv, copies]), ep
    ep.stop()


def _run(root, conv, ep, cache: str, progress=None):
    task = LLMTask(model="sim-labeler-large", base_url=ep.base_url, api_key="sim", max_concurrency=4)
    before = ep.call_count()
    labels, report = L.label_conversations(conv, task, month=MONTH, cache_root=str(root / cache),
                                           progress=progress)
    return labels, report, ep.call_count() - before


def _plan(root, conv, ep, cache: str):
    task = LLMTask(model="sim-labeler-large", base_url=ep.base_url, api_key="sim")
    with planning() as batches:
        L.label_conversations(conv, task, month=MONTH, cache_root=str(root / cache))
    return [b.as_dict() for b in batches]


def test_sliced_batches_give_the_same_labels_calls_and_plan(month, monkeypatch):
    root, conv, ep = month
    whole_plan = _plan(root, conv, ep, "whole")
    whole, whole_report, whole_calls = _run(root, conv, ep, "whole")

    monkeypatch.setattr(L, "SLICE", 7)  # every batch in many slices
    sliced_plan = _plan(root, conv, ep, "sliced")
    seen = []
    sliced, sliced_report, sliced_calls = _run(root, conv, ep, "sliced", progress=seen.append)

    refusal = sliced_report.batches["refusal"]
    assert refusal.items > 7 * 3 and refusal.unique_requests < refusal.items  # sliced, with repeats
    assert sliced.equals(whole)  # every label, status and row order
    assert sliced_calls == whole_calls == sum(b.calls for b in whole_report.batches.values())
    for name, batch in whole_report.batches.items():
        got = sliced_report.batches[name]
        assert (got.items, got.unique_requests, got.calls, got.statuses, got.prompt_tokens) == \
               (batch.items, batch.unique_requests, batch.calls, batch.statuses, batch.prompt_tokens)
    assert sliced_report.unparsed == whole_report.unparsed
    # the plan: one batch per label task, as unsliced, the same figures (its calls = the run's)
    assert sliced_plan == whole_plan
    assert sum(b["calls"] for b in sliced_plan) == sliced_calls
    # progress is said for the whole batch: it only grows, and ends at every distinct request
    for name, batch in sliced_report.batches.items():
        mine = [p for p in seen if p.total == batch.unique_requests]
        assert mine and mine[-1].done == mine[-1].total and mine[-1].calls == batch.calls
    dones = [p.done for p in seen if p.total == refusal.unique_requests]
    assert dones == sorted(dones)
    # a rerun, still sliced, is answered from the cache
    again, _, calls = _run(root, conv, ep, "sliced")
    assert calls == 0 and again.equals(sliced)
