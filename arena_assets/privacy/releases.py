"""A forgotten user in the month releases (``ARENA_RELEASE_ROOT``, Hugging Face layout).

A release re-keys user hashes with its own salt, so the lake's hash does not find the user
there; the release's salt does (``release_salt(secret, month)``, as the release asset
derives it), and so do the conversation ids the Chat dataset keeps. Per month release:

- the rows of the user are counted in each dataset (Chat by ``conversation_id`` or
  ``user_id``, Battle by ``judge``, Bench by ``question_id`` among the prompts only they
  typed, SFT by its lines equal to their chats' lines);
- the folder is ours to rewrite (it lives under our release root): it is rewritten from the
  forgotten lake with the release's own code (``write_month_release``, what the
  ``month_release`` asset calls), so the rows are gone at once; the recompute later
  rematerializes ``month_release`` through the asset;
- a month listed in ``ARENA_RELEASE_PUBLISHED`` has left our hands (pushed to a hub, sent
  to someone): the local copy is rewritten all the same, and the report warns, with the
  counts, that the published copy still holds the user and must be replaced by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import fsspec
import polars as pl

from arena_assets.storage import Lake

KINDS = ("chat", "battle", "bench", "sft")


@dataclass
class ReleaseTarget:
    root: str
    secret: str
    license: str = "cc-by-4.0"
    storage_options: dict = field(default_factory=dict)
    published: str = ""  # comma-separated months (or "*" for all) that were published

    def is_published(self, month: str) -> bool:
        months = {m.strip() for m in self.published.split(",") if m.strip()}
        return "*" in months or month in months

    def fs(self):
        return fsspec.core.url_to_fs(self.root.rstrip("/"), **self.storage_options)

    def folder(self, kind: str, month: str) -> str:
        return f"{self.fs()[1].rstrip('/')}/arena-{kind}-{month}"


def released_months(target: ReleaseTarget, months: list[str]) -> list[str]:
    fs, _ = target.fs()
    fs.invalidate_cache()
    return [m for m in months if any(fs.exists(target.folder(k, m)) for k in KINDS)]


def _parquet(fs, folder: str) -> pl.DataFrame | None:
    paths = sorted(fs.glob(f"{folder}/data/*.parquet"))
    if not paths:
        return None
    frames = []
    for path in paths:
        with fs.open(path, "rb") as fh:
            frames.append(pl.read_parquet(fh))
    return pl.concat(frames, how="diagonal_relaxed")


def count_in_release(
    target: ReleaseTarget,
    month: str,
    user_hash: str,
    conversations: set[str],
    exclusive_keys: set[str],
) -> dict[str, int]:
    """Rows of the user in each dataset of the month's release (kinds present only)."""
    from arena_assets.release import release_salt
    from arena_assets.release.frames import rekey
    from arena_assets.release.write import sft_lines

    fs, _ = target.fs()
    rekeyed = rekey(pl.Series([user_hash]), release_salt(target.secret, month))[0]
    out: dict[str, int] = {}
    chat = _parquet(fs, target.folder("chat", month))
    mine = None
    if chat is not None:
        mine = chat.filter(
            pl.col("conversation_id").is_in(sorted(conversations)) | (pl.col("user_id") == rekeyed)
        )
        out["chat"] = mine.height
    battle = _parquet(fs, target.folder("battle", month))
    if battle is not None:
        out["battle"] = battle.filter(pl.col("judge") == rekeyed).height
    bench = _parquet(fs, target.folder("bench", month))
    if bench is not None:
        out["bench"] = bench.filter(pl.col("question_id").is_in(sorted(exclusive_keys))).height
    sft = f"{target.folder('sft', month)}/data/train.jsonl"
    if fs.exists(sft):
        theirs = set(sft_lines(mine)[0]) if mine is not None and mine.height else set()
        with fs.open(sft, "rb") as fh:
            out["sft"] = sum(1 for line in fh if line in theirs)
    return out


def rewrite_release(target: ReleaseTarget, lake: Lake, month: str) -> None:
    """The month's release again from the (forgotten) lake, as the month_release asset
    writes it: conversations, battles, and bench_prompts when the lake has them."""
    from arena_assets.release import release_salt, write_month_release

    battles = lake.read("battles", month) if lake.exists("battles", month) else None
    bench = lake.read("bench_prompts", month) if lake.exists("bench_prompts", month) else None
    write_month_release(
        month,
        target.root,
        conversations=lake.read("conversations", month),
        battles=battles,
        bench=bench,
        salt=release_salt(target.secret, month),
        license=target.license,
        storage_options=target.storage_options,
    )


def describe(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in counts.items()) or "no dataset"
