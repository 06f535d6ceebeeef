"""The prompt stages (embeddings, clusters, their plan) read a month's messages only where
a conversation has images: the same distinct prompts, vision flags included, as reading
every message; a partition written without ``n_images`` still reads every message."""

from __future__ import annotations

import polars as pl
import pytest

from arena_assets.contracts import MESSAGE_TYPE
from arena_assets.labels.label import distinct_prompts
from arena_assets.pipeline.topics import prompt_conversations
from arena_assets.storage import Lake

MONTH = "2025-01"


def _msg(role: str, content: str, images: list[str] | None = None) -> dict:
    return {"role": role, "content": content, "images": images or []}


def _conversations() -> pl.DataFrame:
    # (conv_id, dedup_key, first prompt, messages): the vision flag comes from the first
    # user turn's images only, so an image in a later turn must not make a prompt vision
    rows = [
        ("c1", "k-text", "hello there", [_msg("user", "hello there"), _msg("assistant", "hi")]),
        ("c2", "k-text", "hello there", [_msg("user", "hello there")]),
        (
            "c3",
            "k-img",
            "what is this",
            [_msg("user", "what is this", ["sha256:aa"]), _msg("assistant", "a cat")],
        ),
        (
            "c4",
            "k-later",
            "describe",
            [
                _msg("user", "describe"),
                _msg("assistant", "what?"),
                _msg("user", "this one", ["sha256:bb"]),
            ],
        ),
        ("c5", "k-only-image", "", [_msg("user", "", ["sha256:cc", "sha256:dd"])]),
        ("c6", "k-mixed", "same text", [_msg("user", "same text")]),
        (
            "c0",
            "k-mixed",
            "same text",
            [_msg("user", "same text", ["sha256:ee"])],
        ),  # earlier id, imaged
        ("c7", "k-empty", None, []),
    ]
    frame = pl.DataFrame(
        {
            "conv_id": [r[0] for r in rows],
            "dedup_key": [r[1] for r in rows],
            "first_prompt": [r[2] for r in rows],
            "messages": [r[3] for r in rows],
            "language": ["en"] * len(rows),
        },
        schema={
            "conv_id": pl.String,
            "dedup_key": pl.String,
            "first_prompt": pl.String,
            "messages": pl.List(MESSAGE_TYPE),
            "language": pl.String,
        },
    )
    # as the clean stage counts them: every image of every message
    return frame.with_columns(
        n_images=pl.col("messages")
        .list.eval(pl.element().struct.field("images").list.len())
        .list.sum()
        .fill_null(0)
        .cast(pl.Int32)
    )


@pytest.mark.parametrize("with_count", [True, False], ids=["n_images", "older-partition"])
def test_same_prompts_as_reading_every_message(tmp_path, with_count):
    conv = _conversations()
    lake = Lake(str(tmp_path / "lake"))
    lake.write("conversations", MONTH, conv if with_count else conv.drop("n_images"))
    every = distinct_prompts(conv.drop("n_images"))
    read = prompt_conversations(lake, MONTH, ["conv_id", "dedup_key", "first_prompt", "language"])
    assert sorted(read.columns) == ["conv_id", "dedup_key", "first_prompt", "language", "messages"]
    assert read.height == conv.height
    got = distinct_prompts(read)
    assert got.sort("dedup_key").equals(every.sort("dedup_key"))
    # the rule written out: a prompt is vision when the first user turn of any of its
    # conversations has an image (an image in a later turn does not count)
    assert dict(got.select("dedup_key", "is_vision").iter_rows()) == {
        "k-text": False,
        "k-img": True,
        "k-later": False,
        "k-only-image": True,
        "k-mixed": True,
        "k-empty": False,
    }
    if with_count:  # only the conversations with images had their messages read
        assert set(read.filter(pl.col("messages").is_not_null())["conv_id"]) == {
            "c0",
            "c3",
            "c4",
            "c5",
        }
    else:
        assert read["messages"].null_count() == 0


def test_conv_id_is_required(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    lake.write("conversations", MONTH, _conversations())
    with pytest.raises(ValueError, match="conv_id"):
        prompt_conversations(lake, MONTH, ["dedup_key", "first_prompt"])
