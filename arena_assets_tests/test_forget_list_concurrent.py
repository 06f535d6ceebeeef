"""Forgets at the same moment keep every user on the forget list: threads released together
by a barrier each add users to the same lake, on a local folder and on an S3 server (moto
over HTTP), and every user is on the list afterwards. A lake whose list is the single
``forgotten.parquet`` of before still keeps its users out, and its salt is still checked."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import polars as pl
import pytest

from arena_assets.ingest.forgotten import (
    FORGOTTEN_SCHEMA,
    ForgetListSaltError,
    add_forgotten,
    legacy_list_path,
    load_forgotten,
    salt_fingerprint,
)
from arena_assets.storage import Lake
from arena_assets_tests.harness import s3_bucket

SALT = "a-test-salt"
THREADS = 8
ROUNDS = 4


def _forget_at_once(lake: Lake, batches: list[list[str]]) -> list[BaseException]:
    """Each batch added by its own thread, all released at the same instant."""
    start = threading.Barrier(len(batches))
    failures: list[BaseException] = []

    def forget(users: list[str]) -> None:
        start.wait()
        try:
            add_forgotten(lake, users, SALT)
        except BaseException as exc:  # reported by the test, not lost in the thread
            failures.append(exc)

    threads = [threading.Thread(target=forget, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def _rounds(lake: Lake, rounds: int = ROUNDS, threads: int = THREADS) -> None:
    wanted: set[str] = set()
    for r in range(rounds):
        batches = [[f"user{r}x{t}a", f"user{r}x{t}b"] for t in range(threads)]
        assert _forget_at_once(lake, batches) == []
        wanted |= {u for b in batches for u in b}
        assert load_forgotten(lake, SALT) == wanted, f"round {r} lost a user"


def test_concurrent_forgets_keep_every_user_on_a_local_lake(tmp_path: Path) -> None:
    _rounds(Lake(str(tmp_path / "lake")))


def test_concurrent_forgets_keep_every_user_on_s3(s3_endpoint: str) -> None:
    options = s3_bucket(s3_endpoint, "forget-list")
    # fewer: each write is several requests to the server
    _rounds(Lake("s3://forget-list/lake", options), rounds=2, threads=4)


def test_the_single_file_list_of_older_lakes_is_still_read(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    old = pl.DataFrame(
        {
            "user_hash": ["old1", "old2"],
            "salt_fingerprint": [salt_fingerprint(SALT)] * 2,
            "forgotten_at": [dt.datetime(2024, 1, 5, tzinfo=dt.UTC)] * 2,
        },
        schema=FORGOTTEN_SCHEMA,
    )
    Path(legacy_list_path(lake)).parent.mkdir(parents=True)
    old.write_parquet(legacy_list_path(lake))
    assert load_forgotten(lake, SALT) == {"old1", "old2"}
    assert add_forgotten(lake, ["old2", "new1"], SALT) == 1  # old2 was on it already
    assert load_forgotten(lake, SALT) == {"old1", "old2", "new1"}
    assert pl.read_parquet(legacy_list_path(lake)).height == 2  # never rewritten
    with pytest.raises(ForgetListSaltError, match="3 users forgotten under another"):
        load_forgotten(lake, "another-salt")
    with pytest.raises(ForgetListSaltError):
        add_forgotten(lake, ["new2"], "another-salt")
    assert load_forgotten(lake, SALT) == {"old1", "old2", "new1"}  # nothing was written
