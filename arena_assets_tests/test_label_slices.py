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
    conv = lake.read(
        "conversations", MONTH, columns=["conv_id", "dedup_key", "first_prompt", "messages"]
    )
    # copies of some conversations under new ids: their answers are the same requests, which
    # must cost one call however the batch is cut
    copies = conv.head(15).with_columns(pl.col("conv_id") + "-copy")
    # and texts that differ but make the same prompt request: the labeller's template fills
    # {PROMPT}, then {ANSWER} with "" (also inside the prompt), so "x{ANSWER}" asks as "x"
    user = pl.element().struct.field("role") == "user"
    twins = conv.slice(15, 15).with_columns(
        pl.col("conv_id") + "-twin",
        pl.col("messages").list.eval(
            pl.when(user)
            .then(
                pl.element().struct.with_fields(pl.element().struct.field("content") + "{ANSWER}")
            )
            .otherwise(pl.element())
        ),
    )
    ep = start_endpoint(seed=5, truth_root=root / "raw")
    yield root, pl.concat([conv, copies, twins]), ep
    ep.stop()


def _run(root, conv, ep, cache: str, progress=None):
    task = LLMTask(
        model="sim-labeler-large", base_url=ep.base_url, api_key="sim", max_concurrency=4
    )
    before = ep.call_count()
    labels, report = L.label_conversations(
        conv, task, month=MONTH, cache_root=str(root / cache), progress=progress
    )
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

    refusal, tags = sliced_report.batches["refusal"], sliced_report.batches["prompt-tags"]
    assert refusal.items > 7 * 3 and refusal.unique_requests < refusal.items  # sliced, with repeats
    assert tags.unique_requests < tags.items  # the twins' inputs differ, their requests do not
    assert sliced.equals(whole)  # every label, status and row order
    assert sliced_calls == whole_calls == sum(b.calls for b in whole_report.batches.values())
    for name, batch in whole_report.batches.items():
        got = sliced_report.batches[name]
        assert (got.items, got.unique_requests, got.calls, got.statuses, got.prompt_tokens) == (
            batch.items,
            batch.unique_requests,
            batch.calls,
            batch.statuses,
            batch.prompt_tokens,
        )
    assert sliced_report.unparsed == whole_report.unparsed
    # the plan: one batch per label task, as unsliced, the same figures (its calls = the run's)
    assert sliced_plan == whole_plan
    assert sum(b["calls"] for b in sliced_plan) == sliced_calls
    # progress is said for the whole batch: it only grows, and ends at every distinct request
    for batch in sliced_report.batches.values():
        mine = [p for p in seen if p.total == batch.unique_requests]
        assert mine and mine[-1].done == mine[-1].total and mine[-1].calls == batch.calls
    dones = [p.done for p in seen if p.total == refusal.unique_requests]
    assert dones == sorted(dones)
    # planned over a cache with history (part of the month answered): the output estimate
    # from that history, rounded once for the batch, and its cost, as unsliced
    _run(root, conv.head(40), ep, "partial")
    monkeypatch.setattr(L, "SLICE", 10**6)
    whole_plan = _plan(root, conv, ep, "partial")
    monkeypatch.setattr(L, "SLICE", 7)
    sliced_plan = _plan(root, conv, ep, "partial")
    assert sliced_plan == whole_plan  # prompt tags and refusals from history (vision: too few yet)
    assert sum(b["output_basis"].startswith("history") and b["calls"] > 7 for b in sliced_plan) == 2
    # a rerun, still sliced, is answered from the cache
    again, _, calls = _run(root, conv, ep, "sliced")
    assert calls == 0 and again.equals(sliced)


def test_the_request_text_in_polars_is_the_request_text():
    """``LabelTask.user_text`` (what a slice's identity hashes) makes ``messages``' text,
    on texts holding the placeholders, regex replacement syntax and any script."""
    from arena_assets.labels.prompt_sets import LabelTask, load_prompt_set

    texts = [
        ("plain", "answer"),
        ("x{ANSWER}", ""),
        ("{PROMPT} again", "$0 $1 \\1 ${1}"),
        ("{", "ANSWER}"),
        ("naïve 東京 🙂", "Привет\n\n"),
        ("", ""),
        ("a" * 20, "{PROMPT}"),
    ]
    tasks = [
        *load_prompt_set().tasks,
        LabelTask(
            "t",
            "answer",
            "classification",
            ("refusal_v0.1",),
            "s",
            "A {ANSWER} {PROMPT}ANSWER} {PROMPT}",
        ),
    ]
    frame = pl.DataFrame(texts, schema=["prompt", "answer"], orient="row")
    for lt in tasks:
        got = frame.select(lt.user_text(pl.col("prompt"), pl.col("answer"))).to_series().to_list()
        want = []
        for prompt, answer in texts:
            content = lt.messages(prompt, answer)[1]["content"]
            want.append(content if isinstance(content, str) else content[0]["text"])
        assert got == want, lt.id
