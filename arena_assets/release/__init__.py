"""Public releases of a month: Chat, Battle and Bench snapshots in the Hugging Face dataset
layout with dataset cards, and an SFT export of the chats. Pure library (no Dagster):
functions over polars frames of the redacted lake tables."""

from arena_assets.release.card import parse_card, size_category
from arena_assets.release.frames import (
    BATTLE_SCHEMA,
    CHAT_SCHEMA,
    UnsafeReleaseError,
    battle_frame,
    bench_frame,
    chat_frame,
    rekey,
    release_salt,
)
from arena_assets.release.write import ReleaseSummary, sft_lines, write_dataset, write_month_release

__all__ = [
    "BATTLE_SCHEMA", "CHAT_SCHEMA", "ReleaseSummary", "UnsafeReleaseError", "battle_frame",
    "bench_frame", "chat_frame", "parse_card", "rekey", "release_salt", "sft_lines",
    "size_category", "write_dataset", "write_month_release",
]
