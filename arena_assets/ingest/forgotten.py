"""The forget list: the salted hashes of forgotten users, which every ingest keeps out.

A user removed from the lake must not come back the next time a month is ingested from
the platform's raw files (which still hold their lines until they are purged, and may be
copied back, or a release file re-downloaded). So ``forget`` adds the user's hash here
*before* it removes anything, and every parser of raw records (native events, the
public-release adapters, Copilot Arena's records) turns a line of a listed user into a
``forgotten_user`` reject with no text: only its file, line number and user hash stay, so
the counts still add up and a later forget still finds those rows.

Where: ``<lake>/_privacy/forgotten.parquet``, beside the lake on the lake's own fsspec
filesystem (a local folder or s3), so every run of every month, and a copied or moved
lake, reads the same list. Columns: ``user_hash``, ``salt_fingerprint``, ``forgotten_at``:
never the identity itself (the hash is what the lake already stores).

The salt: a hash means a user only under the salt it was made with. A changed
``ARENA_USER_SALT`` would give every forgotten user a new hash that the list does not
hold, letting them all back in without a word. So each row carries a fingerprint of the
salt (a keyed hash of a fixed text, not the salt: like any user hash it only confirms a
guess), and reading the list under another salt stops with one line
(:class:`ForgetListSaltError`).

Writes are atomic (a temporary file, then a rename) and checked: the list is read back
after the rename and written again until it holds every hash just added, so two forgets
at the same moment cannot drop each other's user.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

import polars as pl

from arena_assets import inflight
from arena_assets.contracts import FORGOTTEN_USER

from .validate import salt_key

if TYPE_CHECKING:  # the parse workers import this module: no lake machinery at run time
    from arena_assets.storage import Lake

FOLDER = "_privacy"
FILE_NAME = "forgotten.parquet"
FORGOTTEN_SCHEMA = {
    "user_hash": pl.String,
    "salt_fingerprint": pl.String,
    "forgotten_at": pl.Datetime("us", "UTC"),
}
FORGOTTEN_REASON = FORGOTTEN_USER
_FINGERPRINT_TEXT = b"arena-assets forget list"
_WRITE_ATTEMPTS = 5


class ForgetListSaltError(RuntimeError):
    """The forget list was written under another salt than the one in use."""


def salt_fingerprint(salt: str) -> str:
    """A keyed hash of a fixed text under ``salt``: equal for equal salts, not the salt."""
    return hashlib.blake2b(_FINGERPRINT_TEXT, key=salt_key(salt), digest_size=16).hexdigest()


def forget_list_path(lake: Lake) -> str:
    """The list's path on ``lake.fs`` (no protocol)."""
    return f"{lake.folder(FOLDER)}/{FILE_NAME}"


def forget_list_url(lake: Lake) -> str:
    return f"{lake.root}/{FOLDER}/{FILE_NAME}"


def read_forget_list(lake: Lake) -> pl.DataFrame:
    """Every row of the list (empty when no one was forgotten yet)."""
    path = forget_list_path(lake)
    lake.fs.invalidate_cache()  # another process may have written it since
    if not lake.fs.exists(path):
        return pl.DataFrame(schema=FORGOTTEN_SCHEMA)
    with lake.fs.open(path, "rb") as fh:
        return pl.read_parquet(fh).select([pl.col(c).cast(t) for c, t in FORGOTTEN_SCHEMA.items()])


def _check_salt(lake: Lake, frame: pl.DataFrame, salt: str) -> None:
    mine = salt_fingerprint(salt)
    other = frame.filter(pl.col("salt_fingerprint") != mine)
    if other.height:
        raise ForgetListSaltError(
            f"the forget list {forget_list_url(lake)} holds {other.height:,} users forgotten "
            f"under another ARENA_USER_SALT (fingerprint {other['salt_fingerprint'][0][:12]}, "
            f"now {mine[:12]}): with this salt they would come back; set the salt they were "
            "forgotten under, or move the list aside and forget each of them again by id"
        )


def load_forgotten(lake: Lake, salt: str) -> frozenset[str]:
    """The forgotten users' hashes under ``salt``; raises ``ForgetListSaltError`` when the
    list was written under another salt."""
    frame = read_forget_list(lake)
    _check_salt(lake, frame, salt)
    return frozenset(frame["user_hash"].to_list())


def add_forgotten(lake: Lake, user_hashes: Iterable[str], salt: str) -> int:
    """Add ``user_hashes`` to the list (atomically; see the module doc); returns how many
    were not on it yet. Raises ``ForgetListSaltError`` before writing anything when the
    list was written under another salt."""
    wanted = sorted(set(user_hashes))
    added: int | None = None
    for _ in range(_WRITE_ATTEMPTS):
        frame = read_forget_list(lake)
        _check_salt(lake, frame, salt)
        new = sorted(set(wanted) - set(frame["user_hash"].to_list()))
        added = len(new) if added is None else added
        if not new:
            return added
        now = dt.datetime.now(dt.UTC)
        rows = pl.DataFrame(
            {
                "user_hash": new,
                "salt_fingerprint": [salt_fingerprint(salt)] * len(new),
                "forgotten_at": [now] * len(new),
            },
            schema=FORGOTTEN_SCHEMA,
        )
        _write(lake, pl.concat([frame, rows]).sort("user_hash"))
    frame = read_forget_list(lake)
    missing = set(wanted) - set(frame["user_hash"].to_list())
    if missing:
        raise RuntimeError(
            f"the forget list {forget_list_url(lake)} was rewritten by others "
            f"{_WRITE_ATTEMPTS} times while adding {len(missing)} users; run forget again"
        )
    return added or 0


def _write(lake: Lake, frame: pl.DataFrame) -> None:
    folder = lake.folder(FOLDER)
    lake.fs.makedirs(f"{folder}/_tmp", exist_ok=True)
    inflight.sweep(lake.fs, f"{folder}/_tmp")
    tmp = f"{folder}/_tmp/{inflight.temp_name('forgotten')}"
    try:
        with lake.fs.open(tmp, "wb") as fh:
            frame.write_parquet(fh, compression="zstd")
        lake.fs.mv(tmp, forget_list_path(lake))
    finally:
        if lake.fs.exists(tmp):
            lake.fs.rm(tmp)
