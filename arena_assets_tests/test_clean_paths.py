"""`clean_conversations` takes shortcuts on the common input (batches already sorted by
conv_id, every conversation with a message, few messages with PII); these tests check
that the general input gives the same rows as the common one."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from arena_assets.clean import clean_conversations
from arena_assets.clean.schema import SNAPSHOT_SCHEMA

PROMPTS = [
    "How do I sort a list in Python?",
    "Écris un poème sur la mer.",
    "my mail is ann@example.com",
    "Call me at +1 415-555-1234 or +1 415-555-9876",
    "Объясни, как работает фотосинтез.",
    "   ",
    "请解释一下光合作用。",
    "What is 2+2?",
]


def _snapshots(n: int) -> pl.DataFrame:
    t = datetime(2024, 5, 1, tzinfo=UTC)
    rows = []
    for i in range(n):
        prompt = PROMPTS[i % len(PROMPTS)]
        messages = [
            {"role": "user", "content": prompt, "images": [f"img{i}"] if i % 5 == 0 else []},
            {
                "role": "assistant",
                "content": f"Answer {i}: reach me at bob{i}@example.org",
                "images": None,
            },
        ]
        rows.append(
            {
                "month": "2024-05",
                "conv_id": f"c{i:04d}",
                "model": "m",
                "tstamp": t,
                "first_tstamp": t,
                "user_hash": "u",
                "anony": True,
                "snapshots": 1,
                "messages": messages * (1 + i % 3),
            }
        )
    return pl.DataFrame(rows, schema=SNAPSHOT_SCHEMA)


def test_unsorted_input_gives_the_sorted_rows() -> None:
    snapshots = _snapshots(60)
    expected = clean_conversations(snapshots)
    assert expected.get_column("conv_id").is_sorted()
    shuffled = clean_conversations(snapshots.sample(fraction=1.0, shuffle=True, seed=3))
    assert shuffled.equals(expected)
    assert (
        expected.get_column("pii_email").sum() > 60 and expected.get_column("pii_phone").sum() > 0
    )


def test_conversations_without_messages_leave_the_others_unchanged() -> None:
    snapshots = _snapshots(60)
    expected = clean_conversations(snapshots)
    empty = pl.int_range(pl.len()) % 4 == 1
    dtype = SNAPSHOT_SCHEMA["messages"]
    holes = snapshots.with_columns(
        pl.when(empty).then(pl.lit([], dtype=dtype)).otherwise(pl.col("messages")).alias("messages")
    )
    out = clean_conversations(holes)
    kept = pl.Series(range(60)) % 4 != 1
    assert out.filter(kept).equals(expected.filter(kept))
    blank = out.filter(~kept)
    assert blank.get_column("messages").list.len().max() == 0
    assert blank.select(pl.col("turns", "pii_email", "prompt_tokens").max()).row(0) == (0, 0, 0)
    assert set(blank.get_column("language")) == {"und"}


def test_first_prompt_and_turns_when_user_turns_are_missing_or_empty() -> None:
    snapshots = _snapshots(3)
    dtype = SNAPSHOT_SCHEMA["messages"]
    odd = [
        [{"role": "assistant", "content": "Hello! How can I help?", "images": None}],
        [
            {"role": "user", "content": None, "images": ["img-a"]},
            {
                "role": "user",
                "content": "Wie funktioniert die Photosynthese bei Pflanzen genau?",
                "images": [],
            },
        ],
    ]
    snapshots = snapshots.with_columns(
        pl.Series("messages", [*odd, snapshots["messages"][2]], dtype=dtype)
    )
    out = clean_conversations(snapshots)
    assert out.get_column("first_prompt").to_list()[:2] == [
        None,
        None,
    ]  # the first user turn's text
    assert out.get_column("turns").to_list()[:2] == [0, 2]
    assert out.get_column("language").to_list()[:2] == ["und", "de"]  # from the user turns only
    assert out.get_column("first_prompt")[2] == PROMPTS[2].replace("ann@example.com", "<EMAIL>")
