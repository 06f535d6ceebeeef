"""The answer cache and a forgotten user: which entries were computed from their prompts,
and their deletion.

The cache (``llm/cache.py``) is keyed by a hash of the request, so it cannot say whose
prompt an answer came from. Every month step that asks an LLM about users' prompts
records the keys it asked for (``llm/keylog.py``) and keeps, beside the lake, an index of
``(conv_id, user_hash, namespace, key)``: one row per conversation a request was made
from (a label asked once for a prompt many typed has a row per conversation). It lives at
``<lake>/_llm_keys/<stage>/<YYYY-MM>.parquet`` (an underscore folder: the lake's own file,
not an asset), rewritten with the stage's month; it holds hashes and ids only.

``forget`` then deletes the cache entries of the user's rows, except a **shared** one: a
key that a row of another user who is not forgotten also names (the same prompt typed by
someone else, a cluster name asked from several users' prompts, a battle judged that way
for both). Such an answer is theirs as well, exactly as ``footprint`` keeps a prompt others
typed too; deleting it would leak nothing less and only make the next run ask again. The
user's index rows are removed after their entries, so a forget that stops in between is
finished by running it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from arena_assets.llm.cache import ResponseCache
from arena_assets.storage import Lake

FOLDER = "_llm_keys"
KEY_INDEX_SCHEMA = {
    "conv_id": pl.String,
    "user_hash": pl.String,
    "namespace": pl.String,
    "key": pl.String,
}
OWNER_SCHEMA = {"item": pl.String, "conv_id": pl.String, "user_hash": pl.String}


def index_table(stage: str) -> str:
    """The index's folder under the lake, as a table name for ``Lake.write`` / ``read``."""
    return f"{FOLDER}/{stage}"


def key_index(log: pl.DataFrame, owners: pl.DataFrame) -> pl.DataFrame:
    """The index rows of a step: ``log`` (namespace, item_id, key: ``KeyLog.frame``) joined
    to ``owners`` (item, conv_id, user_hash) by the item id's head, its text up to the
    first ``|`` or ``\\x1f`` ("<battle>|1", "<conv>\\x1f<n>", "<prompt>|<model>|<game>"
    name their battle, conversation or prompt). Items without an owner are left out."""
    heads = log.with_columns(item=pl.col("item_id").str.extract(r"^([^|\x1f]*)", 1))
    return (
        heads.join(owners.cast(OWNER_SCHEMA), on="item", how="inner")  # type: ignore[arg-type]
        .select(list(KEY_INDEX_SCHEMA))
        .unique()
        .sort("namespace", "key", "conv_id")
    )


def write_key_index(lake: Lake, stage: str, month: str, index: pl.DataFrame) -> str:
    """Replace the stage's month of the index (atomic, as every lake write; a plan's lake
    writes nothing)."""
    frame = index.select([pl.col(c).cast(t) for c, t in KEY_INDEX_SCHEMA.items()])
    return lake.write(index_table(stage), month, frame, empty_ok=True)


def index_partitions(lake: Lake) -> list[tuple[str, str]]:
    """(table, month) of every index file in the lake."""
    folder = lake.folder(FOLDER)
    lake.fs.invalidate_cache()
    if not lake.fs.exists(folder):
        return []
    stages = sorted(
        p.rstrip("/").rsplit("/", 1)[-1]
        for p in lake.fs.ls(folder, detail=False)
        if lake.fs.isdir(p) and not p.rstrip("/").rsplit("/", 1)[-1].startswith(("_", "."))
    )
    return [(index_table(s), m) for s in stages for m in lake.months(index_table(s))]


@dataclass
class CacheForget:
    """What the forget did to the answer cache."""

    removed: dict[str, int] = field(default_factory=dict)  # namespace -> entries deleted
    shared: dict[str, int] = field(default_factory=dict)  # namespace -> keys kept (shared)
    index_rows: int = 0  # the user's rows in the index

    @property
    def total(self) -> int:
        return sum(self.removed.values())

    def lines(self, dry_run: bool) -> list[str]:
        verb = "would delete" if dry_run else "deleted"
        if not self.index_rows:
            return ["  LLM answer cache: no request of the user in the key index"]
        out = [f"  LLM answer cache: {verb} {self.total} entries computed from the user's prompts"]
        for ns in sorted(set(self.removed) | set(self.shared)):
            kept = self.shared.get(ns, 0)
            out.append(
                f"    {ns}: {self.removed.get(ns, 0)}"
                + (f" ({kept} kept: the same request of another user)" if kept else "")
            )
        return out


def forget_cached_answers(
    lake: Lake,
    user_hash: str,
    cache_root: str,
    *,
    forgotten: frozenset[str] = frozenset(),
    storage_options: dict | None = None,
    dry_run: bool = False,
) -> CacheForget:
    """Delete the cache entries computed from the user's prompts alone (see the module
    doc); ``forgotten``: users whose rows do not make a key shared (the forget list)."""
    out = CacheForget()
    parts = index_partitions(lake)
    theirs = []
    for table, month in parts:
        rows = lake.read(table, month, filters=[("user_hash", "==", user_hash)])
        out.index_rows += rows.height
        theirs.append(rows.select("namespace", "key"))
    if not out.index_rows:
        return out
    mine = pl.concat(theirs).unique()
    wanted = mine["key"].to_list()
    not_owners = sorted({user_hash, *forgotten})
    shared = []
    for table, month in parts:
        rows = lake.read(table, month, columns=["user_hash", "namespace", "key"])
        shared.append(
            rows.filter(
                pl.col("key").is_in(wanted)
                & ~pl.col("user_hash").is_in(not_owners).fill_null(False)
            ).select("namespace", "key")
        )
    kept = pl.concat(shared).unique()
    delete = mine.join(kept, on=["namespace", "key"], how="anti")
    for (ns,), keys in delete.group_by(["namespace"], maintain_order=True):
        cache = ResponseCache(cache_root, ns, storage_options=storage_options or {})
        out.removed[ns] = cache.remove(keys["key"].to_list(), dry_run=dry_run)
    for (ns,), keys in kept.group_by(["namespace"], maintain_order=True):
        out.shared[ns] = keys.height
    if not dry_run:
        for table, month in parts:
            rows = lake.read(table, month)
            left = rows.filter(pl.col("user_hash").ne_missing(user_hash))
            if left.height < rows.height:
                lake.write(table, month, left, empty_ok=True)
    return out
