"""BenchBuilder's strong pass reads what the cheap pass read: every user turn of the
conversation joined by newlines (cut at 12,500 characters), not the first prompt alone;
through the real `openai` client against the stand-in labelling server."""

from __future__ import annotations

import polars as pl

from arena_assets.bench.builder import BenchOptions
from arena_assets.bench.relabel import StrongRelabel
from arena_assets.bench.schema import CRITERIA
from arena_assets.llm import LLMTask
from arena_assets.pipeline.bench import bench_prompts_month, labelled_prompts
from arena_assets.storage import Lake
from arena_assets_tests.labelling_server import LabellingServer, expected_answer
from arena_assets_tests.test_labels import conversations_frame

MONTH = "2024-05"
ROWS = [  # (conv_id, first prompt, images, answers): each a second user turn after its first answer
    (
        f"c{i}",
        f"Design a rate limiter for service {i}",
        [],
        [f"Use a token bucket ({i}).", "Add a sliding window."],
    )
    for i in range(6)
]


def _lake(tmp_path) -> Lake:
    lake = Lake(str(tmp_path / "lake"))
    conv = conversations_frame(ROWS).with_columns(language=pl.lit("en"))
    lake.write("conversations", MONTH, conv)
    lake.write(
        "topic_labels",
        MONTH,
        conv.select(
            "conv_id",
            "dedup_key",
            code=pl.lit(False),
            math=pl.lit(False),
            creative_writing=pl.lit(False),
            is_vision=pl.lit(False),
            **{c: pl.lit(True) for c in CRITERIA},
        ),
    )
    lake.write(
        "topic_clusters", MONTH, conv.select("dedup_key", cluster_id=pl.int_range(pl.len()) // 2)
    )
    return lake


def test_the_strong_pass_reads_every_user_turn(tmp_path) -> None:
    lake = _lake(tmp_path)
    joined = {f"c{i}": f"Design a rate limiter for service {i}\nand then? (1)" for i in range(6)}
    frame = labelled_prompts(lake, MONTH)
    by_key = dict(zip(conversations_frame(ROWS)["dedup_key"], conversations_frame(ROWS)["conv_id"]))
    assert {by_key[k]: t for k, t in frame.select("prompt_id", "label_text").iter_rows()} == joined
    assert set(frame["prompt"]) == {r[1] for r in ROWS}  # the bench prompt stays the first turn
    seen: list[pl.DataFrame] = []
    with LabellingServer() as srv:
        strong = StrongRelabel(
            LLMTask(model="labeler-strong", base_url=srv.base_url, api_key="test-key"),
            str(tmp_path / "cache"),
        )

        def relabel(survivors: pl.DataFrame) -> pl.DataFrame:
            seen.append(survivors)
            return strong(survivors)

        bench_prompts_month(
            lake,
            MONTH,
            BenchOptions(size=10, strong_min_quality=0, strong_min_cluster_mean=0),
            relabel=relabel,
        )
        labels = strong(seen[0])
    assert sorted(seen[0]["label_text"]) == sorted(joined.values())
    for pid, *values in labels.select("prompt_id", *CRITERIA).iter_rows():
        want = expected_answer("prompt-tags", joined[by_key[pid]])["criteria"]
        assert [i for i, v in enumerate(values, start=1) if v] == want, pid
    # cut as the cheap pass cuts, and a caller without label_text still gets its prompt read
    short = StrongRelabel(strong.task, str(tmp_path / "cache2"), max_prompt_chars=20)
    with LabellingServer() as srv:
        short.task = LLMTask(model="labeler-strong", base_url=srv.base_url, api_key="test-key")
        out = short(seen[0].head(1))
        plain = short(seen[0].head(1).drop("label_text"))
    text = seen[0]["label_text"][0]
    assert [i for i, v in enumerate(out.select(CRITERIA).row(0), 1) if v] == expected_answer(
        "prompt-tags", text[:20]
    )["criteria"]
    assert [i for i, v in enumerate(plain.select(CRITERIA).row(0), 1) if v] == expected_answer(
        "prompt-tags", seen[0]["prompt"][0][:20]
    )["criteria"]
