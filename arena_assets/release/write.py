"""Writing a month's release in the Hugging Face dataset layout, on any fsspec storage.

    <release_root>/arena-chat-<YYYY-MM>/README.md                       dataset card
    <release_root>/arena-chat-<YYYY-MM>/data/train-00000-of-00002.parquet
    <release_root>/arena-battle-<YYYY-MM>/...
    <release_root>/arena-bench-<YYYY-MM>/question.jsonl, model_answer/<model>.jsonl,
        model_judgment/<judge>/<model>.jsonl                            Arena-Hard-Auto's layout
    <release_root>/arena-sft-<YYYY-MM>/data/train.jsonl                 OpenAI chat messages

A dataset folder is replaced as a whole (old shards removed first, the card written last),
so a rerun with fewer shards leaves no stale file that `data/train-*` would pick up. Rows
are sorted by their id and written with fixed Parquet options: a rerun gives the same bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import fsspec
import orjson
import polars as pl

from arena_assets.errors import storage_errors
from arena_assets.release.bench_card import BENCH_CONFIGS, bench_card
from arena_assets.release.card import UserKeys, battle_card, chat_card, language_codes, sft_card
from arena_assets.release.frames import battle_frame, bench_frame, chat_frame, redacted_texts

if TYPE_CHECKING:
    from arena_assets.storage import Lake

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
    # how the chat and battle keys join (release.card.UserKeys), as the cards say it
    user_keys: dict = field(default_factory=dict)


@dataclass
class BenchRelease:
    """The bench of a month as released: its prompts (``bench_prompts``) and, when the month
    has them, the candidates' answers and the judge's games, in the protocol's layout."""

    prompts: pl.DataFrame
    answers: pl.DataFrame | None = None
    judgments: pl.DataFrame | None = None
    protocol: str = "arena-hard-v0.1"
    judge_prompts: object = None  # judging.judge_prompts.JudgePrompts the games were judged with


def bench_release_from_lake(lake: Lake, month: str) -> BenchRelease | None:
    """The month's bench tables from the lake (None without ``bench_prompts``); the
    protocol is the one the judgments record (``protocol`` column); for a partition
    written before that column, read from the question categories (v2's are hard_prompt
    and creative_writing), in the project's own wording. The prompt set kept beside the
    judgments renders each game's request in the layout."""
    from arena_assets.judging.judge_prompts import read_kept_prompts
    from arena_assets.judging.protocol import judgments_protocol

    if not lake.exists("bench_prompts", month):
        return None
    answers = lake.read("model_answers", month) if lake.exists("model_answers", month) else None
    judgments = lake.read("judgments", month) if lake.exists("judgments", month) else None
    protocol = judgments_protocol(judgments) if judgments is not None else None
    if protocol is None:
        v2 = (
            judgments is not None
            and "category" in judgments.columns
            and bool(set(judgments["category"].drop_nulls()) & {"hard_prompt", "creative_writing"})
        )
        protocol = "arena-assets-pairwise-v2" if v2 else "arena-assets-pairwise"
    prompts = read_kept_prompts(lake, "judgments", month) if judgments is not None else None
    return BenchRelease(lake.read("bench_prompts", month), answers, judgments, protocol, prompts)


def _fs(url: str, storage_options: dict | None):
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    # s3fs caches listings per filesystem object; another writer may have changed the folder
    fs.invalidate_cache(path)
    return fs, path


def write_dataset(
    frame: pl.DataFrame,
    url: str,
    card: str,
    *,
    split: str = "train",
    rows_per_shard: int = ROWS_PER_SHARD,
    storage_options: dict | None = None,
) -> list[str]:
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
                fh, compression="zstd", statistics=True, row_group_size=50_000
            )
        paths.append(path)
    with fs.open(f"{root}/README.md", "wb") as fh:
        fh.write(card.encode())
    return paths


def sft_lines(chat: pl.DataFrame) -> tuple[list[bytes], dict[str, int]]:
    """OpenAI chat JSONL lines from a Chat release frame, and the rows skipped by reason."""
    skipped = {
        "has_images": 0,
        "moderation_flagged": 0,
        "not_ending_with_answer": 0,
        "empty_turn": 0,
    }
    lines = []
    for images, flagged, turns in chat.select(
        "images", "moderation_flagged", "conversation"
    ).iter_rows():
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


def write_bench_dataset(
    url: str,
    release: BenchRelease,
    month: str,
    license: str = "other",
    storage_options: dict | None = None,
) -> tuple[pl.DataFrame, list[str]]:
    """Replace the bench folder ``url`` with Arena-Hard-Auto's layout (``judging.layout``)
    and its card: (the released prompts, the files written). The prompts pass the release's
    checks (``bench_frame``: redacted text only); answers (and their reasoning) and judge
    texts, written by models, are redacted with the cleaning's rules and checked the same
    way (``redacted_texts``); the card counts what was replaced."""
    from arena_assets.judging.layout import write_layout

    prompts = bench_frame(release.prompts)
    answers, judgments, redacted = (
        release.answers,
        release.judgments,
        {"answers": 0, "judgments": 0},
    )
    if answers is not None:
        answers, redacted["answers"] = redacted_texts(
            answers, ("answer", "reasoning"), "model_answers"
        )
    if judgments is not None:
        judgments, redacted["judgments"] = redacted_texts(judgments, ("judgment",), "judgments")
    fs, root = _fs(url, storage_options)
    if fs.exists(root):
        fs.rm(root, recursive=True)
    if "cluster_id" in release.prompts.columns and "cluster" not in prompts.columns:
        ids = (
            release.prompts.select(question_id="prompt_id", cluster="cluster_id")
            if "prompt_id" in release.prompts.columns
            else None
        )
        prompts = prompts.join(ids, on="question_id", how="left") if ids is not None else prompts
    paths = write_layout(
        url,
        prompts,
        answers,
        judgments,
        protocol=release.protocol,
        month=month,
        storage_options=storage_options,
        judge_prompts=release.judge_prompts,
    )
    # a configuration for each kind of file the folder holds (a month without answers
    # offers the questions alone): `load_dataset(folder, "answers")` and "judgments"
    folders = {p.removeprefix(root.rstrip("/") + "/").split("/")[0] for p in paths}
    configs = {
        name: files
        for name, files in BENCH_CONFIGS.items()
        if name == "default" or files.split("/")[0] in folders
    }
    card = bench_card(
        prompts,
        name=f"arena-bench-{month}",
        month=month,
        license=license,
        answers=answers,
        judgments=judgments,
        protocol=release.protocol,
        redacted=redacted,
        configs=configs,
    )
    with fs.open(f"{root}/README.md", "wb") as fh:
        fh.write(card.encode())
    return prompts, paths


def write_month_release(
    month: str,
    release_root: str,
    *,
    conversations: pl.DataFrame,
    battles: pl.DataFrame | None,
    bench: pl.DataFrame | BenchRelease | None,
    salt: bytes,
    license: str = "other",
    rows_per_shard: int = ROWS_PER_SHARD,
    storage_options: dict | None = None,
    release_name: str | None = None,
) -> ReleaseSummary:
    """Chat, Battle (when `battles` is given), Bench (when `bench` is given: the prompts, or a
    ``BenchRelease`` with answers and judgments, written in Arena-Hard-Auto's layout) and the
    SFT export of one month under `release_root`; every user hash re-keyed with `salt`, the
    salt of ``release_name`` (by default the month: what the chat and battle cards say of
    their keys follows from it)."""
    with storage_errors(
        what=f"release {month}",
        writing=True,
        path=release_root,
        root=release_root,
        setting="ARENA_RELEASE_ROOT",
    ):
        return _write_month_release(
            month,
            release_root,
            conversations=conversations,
            battles=battles,
            bench=bench,
            salt=salt,
            license=license,
            rows_per_shard=rows_per_shard,
            storage_options=storage_options,
            release_name=release_name,
        )


def _write_month_release(
    month: str,
    release_root: str,
    *,
    conversations: pl.DataFrame,
    battles: pl.DataFrame | None,
    bench: pl.DataFrame | BenchRelease | None,
    salt: bytes,
    license: str = "other",
    rows_per_shard: int = ROWS_PER_SHARD,
    storage_options: dict | None = None,
    release_name: str | None = None,
) -> ReleaseSummary:
    root = release_root.rstrip("/")
    summary = ReleaseSummary(month)
    chat = chat_frame(conversations, salt)
    battle, counts = battle_frame(battles, chat, salt) if battles is not None else (None, {})
    keys = UserKeys.of(month, release_name or month, chat, battle)
    summary.user_keys = asdict(keys)
    parts: list[tuple[str, pl.DataFrame, str]] = []
    name = f"arena-chat-{month}"
    parts.append(
        ("chat", chat, chat_card(chat, name=name, month=month, license=license, keys=keys))
    )
    if battle is not None:
        summary.battle_counts = counts
        name = f"arena-battle-{month}"
        card = battle_card(battle, counts, name=name, month=month, license=license, keys=keys)
        parts.append(("battle", battle, card))
    if bench is not None:
        release = bench if isinstance(bench, BenchRelease) else BenchRelease(bench)
        url = f"{root}/arena-bench-{month}"
        prompts, summary.files["bench"] = write_bench_dataset(
            url, release, month, license, storage_options
        )
        summary.datasets["bench"] = url
        summary.rows["bench"] = prompts.height
    for kind, frame, card in parts:
        url = f"{root}/arena-{kind}-{month}"
        summary.datasets[kind] = url
        summary.rows[kind] = frame.height
        summary.files[kind] = write_dataset(
            frame, url, card, rows_per_shard=rows_per_shard, storage_options=storage_options
        )

    lines, summary.sft_skipped = sft_lines(chat)
    url = f"{root}/arena-sft-{month}"
    fs, path = _fs(url, storage_options)
    if fs.exists(path):
        fs.rm(path, recursive=True)
    fs.makedirs(f"{path}/data", exist_ok=True)
    with fs.open(f"{path}/data/train.jsonl", "wb") as fh:
        fh.writelines(lines)
    card = sft_card(
        len(lines),
        name=f"arena-sft-{month}",
        month=month,
        license=license,
        languages=language_codes(chat),
    )
    with fs.open(f"{path}/README.md", "wb") as fh:
        fh.write(card.encode())
    summary.datasets["sft"] = url
    summary.rows["sft"] = len(lines)
    summary.files["sft"] = [f"{path}/data/train.jsonl"]
    return summary
