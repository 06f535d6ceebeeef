"""The forget list: the salted hashes of forgotten users, which every ingest keeps out.

A user removed from the lake must not come back the next time a month is ingested from
the platform's raw files (which still hold their lines until they are purged, and may be
copied back, or a release file re-downloaded). So ``forget`` adds the user's hash here
*before* it removes anything, and every parser of raw records (native events, the
public-release adapters, Copilot Arena's records) turns a line of a listed user into a
``forgotten_user`` reject with no text: only its file, line number and user hash stay, so
the counts still add up and a later forget still finds those rows.

Where: ``<lake>/_privacy/forgotten/<user_hash>.parquet``, one file per forgotten user,
beside the lake on the lake's own fsspec filesystem (a local folder or s3), so every run of
every month, and a copied or moved lake, reads the same list. The list is the union of
those files and of ``<lake>/_privacy/forgotten.parquet``, the single file lakes kept before
(read, never written again). Columns: ``user_hash``, ``salt_fingerprint``,
``forgotten_at``: never the identity itself (the hash is what the lake already stores).

The salt: a hash means a user only under the salt it was made with. A changed
``ARENA_USER_SALT`` would give every forgotten user a new hash that the list does not
hold, letting them all back in without a word. So each row carries a fingerprint of the
salt (a keyed hash of a fixed text, not the salt: like any user hash it only confirms a
guess), and reading the list under another salt stops with one line
(:class:`ForgetListSaltError`).

Why a file per user: adding a user writes a file of its own name and rewrites nothing, so
two forgets at the same moment, in two processes or on two machines, cannot drop each
other's user, on a local folder as on an object store that has no atomic
compare-and-swap. Each file is written atomically (a temporary file, then a rename, through
``Lake.write_file``: refused when the writer's run has ended), and the list is read back
after the writes: a user missing then is an error, never a silent gap.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

import polars as pl

from arena_assets.contracts import FORGOTTEN_USER
from arena_assets.errors import ArenaError

from .validate import salt_key

if TYPE_CHECKING:  # the parse workers import this module: no lake machinery at run time
    from arena_assets.storage import Lake

FOLDER = "_privacy"
LIST_FOLDER = "forgotten"  # one file per user under _privacy/
LEGACY_FILE = "forgotten.parquet"  # the single file of lakes made before: read, not written
FORGOTTEN_SCHEMA = {
    "user_hash": pl.String,
    "salt_fingerprint": pl.String,
    "forgotten_at": pl.Datetime("us", "UTC"),
}
FORGOTTEN_REASON = FORGOTTEN_USER
_FINGERPRINT_TEXT = b"arena-assets forget list"
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


class ForgetListSaltError(RuntimeError):
    """The forget list was written under another salt than the one in use."""


class ForgetListError(ArenaError, RuntimeError):
    """A user just added is not on the list when it is read back."""


def salt_fingerprint(salt: str) -> str:
    """A keyed hash of a fixed text under ``salt``: equal for equal salts, not the salt."""
    return hashlib.blake2b(_FINGERPRINT_TEXT, key=salt_key(salt), digest_size=16).hexdigest()


def forget_list_folder(lake: Lake) -> str:
    """The folder of the list's files on ``lake.fs`` (no protocol)."""
    return f"{lake.folder(FOLDER)}/{LIST_FOLDER}"


def legacy_list_path(lake: Lake) -> str:
    """The single-file list of lakes made before, on ``lake.fs``."""
    return f"{lake.folder(FOLDER)}/{LEGACY_FILE}"


def forget_list_url(lake: Lake) -> str:
    return f"{lake.root}/{FOLDER}/{LIST_FOLDER}/"


def entry_name(user_hash: str) -> str:
    """The file name of one user's entry: the hash itself (what the lake already stores),
    or a digest of it when it is not a plain file name."""
    if _PLAIN_NAME.match(user_hash):
        return f"{user_hash}.parquet"
    return f"h-{hashlib.sha256(user_hash.encode()).hexdigest()}.parquet"


def list_files(lake: Lake) -> list[str]:
    """Every file the list is read from (the legacy file first), on ``lake.fs``."""
    lake.fs.invalidate_cache()  # another process may have written since
    found = sorted(lake.fs.glob(f"{forget_list_folder(lake)}/*.parquet"))
    legacy = legacy_list_path(lake)
    return ([legacy] if lake.fs.exists(legacy) else []) + found


def read_forget_list(lake: Lake) -> pl.DataFrame:
    """Every row of the list, each user once (empty when no one was forgotten yet)."""
    paths = list_files(lake)
    if not paths:
        return pl.DataFrame(schema=FORGOTTEN_SCHEMA)
    # one request per file, concurrent on an object store (fsspec's cat of a list)
    blobs = (
        lake.fs.cat(paths, on_error="omit") if len(paths) > 1 else {paths[0]: lake.fs.cat(paths[0])}
    )
    frames = [
        pl.read_parquet(io.BytesIO(blobs[p])).select(
            [pl.col(c).cast(t) for c, t in FORGOTTEN_SCHEMA.items()]
        )
        for p in paths
        if p in blobs
    ]
    return pl.concat(frames).unique(
        ["user_hash", "salt_fingerprint"], keep="first", maintain_order=True
    )


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
    """Add ``user_hashes`` to the list, a file per user (see the module doc); returns how
    many were not on it yet. Raises ``ForgetListSaltError`` before writing anything when the
    list was written under another salt, ``ForgetListError`` when a user is not on the list
    once written."""
    wanted = sorted(set(user_hashes))
    frame = read_forget_list(lake)
    _check_salt(lake, frame, salt)
    new = sorted(set(wanted) - set(frame["user_hash"].to_list()))
    fingerprint = salt_fingerprint(salt)
    for user_hash in new:
        row = pl.DataFrame(
            {
                "user_hash": [user_hash],
                "salt_fingerprint": [fingerprint],
                "forgotten_at": [dt.datetime.now(dt.UTC)],
            },
            schema=FORGOTTEN_SCHEMA,
        )
        data = io.BytesIO()
        row.write_parquet(data, compression="zstd")
        lake.write_file(
            f"{FOLDER}/{LIST_FOLDER}/{entry_name(user_hash)}",
            data.getvalue(),
            what="the forget list",
        )
    if new:
        missing = set(wanted) - set(read_forget_list(lake)["user_hash"].to_list())
        if missing:
            raise ForgetListError(
                f"the forget list {forget_list_url(lake)} lacks {len(missing)} of the users "
                "just written to it (a storage that lost a write?); run forget again"
            )
    return len(new)
