"""Writing a month's release in the Hugging Face dataset layout, on any fsspec storage.

    <release_root>/arena-chat-<YYYY-MM>/README.md                       dataset card
    <release_root>/arena-chat-<YYYY-MM>/data/train-00000-of-00002.parquet
    <release_root>/arena-battle-<YYYY-MM>/...   arena-bench-<YYYY-MM>/...
    <release_root>/arena-sft-<YYYY-MM>/data/train.jsonl                 OpenAI chat messages

A dataset folder is replaced as a whole (old shards removed first, the card written last),
so a rerun with fewer shards leaves no stale file that `data/train-*` would pick up. Rows
are sorted by their id and written with fixed Parquet options: a rerun gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import fsspec
import orjson
import polars as pl

from arena_assets.release.card import battle_card, bench_card, chat_card, language_codes, sft_card
from arena_assets.release.frames import battle_frame, bench_frame, chat_frame

ROWS_PER_SHARD = 200_000
ROLES = ("system", "user", "assistant")


@dataclass
class ReleaseSummary:
    month: str
    datasets: dict[str, str] = field(default_factory=dict)  # kind -> dataset folder URL
    rows: dict[str, int] = field(default_factory=dict)
    files: dict[str, list[str]] = field(default_factory=dict)
    battle_counts: dict = field(default_factory=dict)
    sft_skipped: dict[str, int] = field(default_factory=dict)


def _fs(url: str, storage_options: dict | None):
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    # s3fs caches listings per filesystem object; another writer may have changed the folder
    fs.invalidate_cache(path)
    return fs, path


def write_dataset(frame: pl.DataFrame, url: str, card: str, *, split: str = "train",
                  rows_per_shard: int = ROWS_PER_SHARD,
                  storage_options: dict | None = None) -> list[str]:
    """Replace the dataset folder `url` with `frame` as Parquet shards and its card."""
    fs, root = _fs(url, storage_options)
    if fs.exists(root):
        fs.rm(root, recursive=True)
    fs.makedirs(f"{root}/data", exist_ok=True)
    shards = max(1, -(-frame.height // rows_per_shard))
    paths = []
    for i in range(shards):
        path = f"{root}/data/{split}-{i:05d}-of-{shards:05d}.parquet"
        with fs.open(path, "wb") as fh:
            frame.slice(i * rows_per_shard, rows_per_shard).write_parquet(
                fh, compression="zstd", statistics=True, row_group_size=50_000)
        paths.append(path)
    with fs.open(f"{root}/README.md", "wb") as fh:
        fh.write(card.encode())
    return paths


def sft_lines(chat: pl.DataFrame) -> tuple[list[bytes], dict[str, int]]:
    """OpenAI chat JSONL lines from a Chat release frame, and the rows skipped by reason."""
    skipped = {"has_images": 0, "moderation_flagged": 0, "not_ending_with_answer": 0,
               "empty_turn": 0}
    lines = []
    for images, flagged, turns in chat.select("images", "moderation_flagged",
                                              "conversation").iter_rows():
        if images:
            skipped["has_images"] += 1
        elif flagged:
            skipped["moderation_flagged"] += 1
        elif not turns or turns[-1]["role"] != "assistant" or turns[0]["role"] == "assistant":
            skipped["not_ending_with_answer"] += 1
        elif any(not t["content"] or t["role"] not in ROLES for t in turns):
            skipped["empty_turn"] += 1
        else:
            messages = [{"role": t["role"], "content": t["content"]} for t in turns]
            lines.append(orjson.dumps({"messages": messages}) + b"\n")
    return lines, skipped


def write_month_release(
    month: str,
    release_root: str,
    *,
    conversations: pl.DataFrame,
    battles: pl.DataFrame | None,
    bench: pl.DataFrame | None,
    salt: bytes,
    license: str = "other",
    rows_per_shard: int = ROWS_PER_SHARD,
    storage_options: dict | None = None,
) -> ReleaseSummary:
    """Chat, Battle (when `battles` is given), Bench (when `bench` is given) and the SFT
    export of one month under `release_root`; every user hash re-keyed with `salt`."""
    root = release_root.rstrip("/")
    summary = ReleaseSummary(month)
    chat = chat_frame(conversations, salt)
    parts: list[tuple[str, pl.DataFrame, str]] = []
    name = f"arena-chat-{month}"
    parts.append(("chat", chat, chat_card(chat, name=name, month=month, license=license)))
    if battles is not None:
        battle, counts = battle_frame(battles, chat, salt)
        summary.battle_counts = counts
        name = f"arena-battle-{month}"
        parts.append(("battle", battle, battle_card(battle, counts, name=name, month=month,
                                                    license=license)))
    if bench is not None:
        prompts = bench_frame(bench)
        name = f"arena-bench-{month}"
        parts.append(("bench", prompts, bench_card(prompts, name=name, month=month,
                                                   license=license)))
    for kind, frame, card in parts:
        url = f"{root}/arena-{kind}-{month}"
        summary.datasets[kind] = url
        summary.rows[kind] = frame.height
        summary.files[kind] = write_dataset(frame, url, card, rows_per_shard=rows_per_shard,
                                            storage_options=storage_options)

    lines, summary.sft_skipped = sft_lines(chat)
    url = f"{root}/arena-sft-{month}"
    fs, path = _fs(url, storage_options)
    if fs.exists(path):
        fs.rm(path, recursive=True)
    fs.makedirs(f"{path}/data", exist_ok=True)
    with fs.open(f"{path}/data/train.jsonl", "wb") as fh:
        fh.writelines(lines)
    card = sft_card(len(lines), name=f"arena-sft-{month}", month=month, license=license,
                    languages=language_codes(chat))
    with fs.open(f"{path}/README.md", "wb") as fh:
        fh.write(card.encode())
    summary.datasets["sft"] = url
    summary.rows["sft"] = len(lines)
    summary.files["sft"] = [f"{path}/data/train.jsonl"]
    return summary
