"""Forgetting a user deletes the LLM answers computed from their prompts alone: the
labelling and over_refusal steps index the cache keys of every request by the
conversations it came from, forget deletes the entries only the user's rows name, keeps
the entry of a request another user made too, and a re-materialization brings neither
their labels nor their entries back."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest

from arena_assets.cli import main as cli_main
from arena_assets.ingest import load_model_registry
from arena_assets.llm import LLMTask, ResponseCache
from arena_assets.pipeline.clean import clean_month
from arena_assets.pipeline.evaluators import OVER_REFUSAL_CACHE, over_refusal_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.pipeline.topics import topic_labels_month
from arena_assets.privacy.cache_keys import index_partitions
from arena_assets.privacy.forget import user_hash_of
from arena_assets.simulator import simulate_months
from arena_assets.storage import Lake

MONTH = "2024-02"
PLANTED = "planted-conv"


def _chats(raw: Path) -> dict[str, list[dict]]:
    """identity -> the user's well-formed chat events."""
    out: dict[str, list[dict]] = {}
    for path in sorted((raw / MONTH).glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(event, dict) and event.get("type") == "chat":
                who = event.get("user_id") or event.get("ip")
                if isinstance(who, str) and isinstance(event.get("state"), dict):
                    out.setdefault(who, []).append(event)
    return out


def _plant_shared_prompt(raw: Path) -> tuple[str, str]:
    """(user, other): the user with most chats also sends, word for word, a conversation
    of another user (the same prompt and answer: the same label requests)."""
    chats = _chats(raw)
    user, other = sorted(chats, key=lambda who: (-len(chats[who]), who))[:2]
    first = chats[other][0]["state"].get("conv_id")  # its last state: the whole conversation
    copy = dict([e for e in chats[other] if e["state"].get("conv_id") == first][-1])
    copy.pop("ip", None)
    copy.update(event_id="planted-event", user_id=user)
    copy["state"] = {**copy["state"], "conv_id": PLANTED}
    path = sorted((raw / MONTH).glob("*.jsonl"))[0]
    path.write_bytes(path.read_bytes().rstrip(b"\n") + b"\n" + orjson.dumps(copy) + b"\n")
    return user, other


def _index(lake: Lake) -> pl.DataFrame:
    parts = [lake.read(table, month) for table, month in index_partitions(lake)]
    return pl.concat(parts) if parts else pl.DataFrame()


def _cached(root: str, rows: pl.DataFrame) -> set[tuple[str, str]]:
    """The (namespace, key) of ``rows`` that have an answer in the cache (read afresh)."""
    out = set()
    for (ns,), part in rows.group_by(["namespace"]):
        found = ResponseCache(root, ns).values(part["key"].to_list(), "key")
        out |= {(ns, k) for k in found}
    return out


def _label(lake: Lake, task: LLMTask, cache_root: str) -> None:
    topic_labels_month(lake, MONTH, task, cache_root=cache_root)
    risk = ResponseCache(cache_root, OVER_REFUSAL_CACHE)
    over_refusal_month(lake, MONTH, task, cache=risk)


def test_forget_deletes_the_cached_answers_of_the_users_prompts(
    arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    simulate_months(raw, [MONTH], 250, seed=8)
    identity, other = _plant_shared_prompt(raw)
    cache_root = str(Path(arena_env["ARENA_LAKE_ROOT"]).parent / "llm-cache")
    monkeypatch.setenv("ARENA_LLM_CACHE_ROOT", cache_root)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    salt = arena_env["ARENA_USER_SALT"]
    target, theirs = user_hash_of(identity, salt), user_hash_of(other, salt)
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    models = load_model_registry(str(raw))
    task = LLMTask(
        model="sim-labeler-large", base_url=arena_env["ARENA_SIM_BASE_URL"], api_key="sim"
    )
    ingest_month(lake, str(raw), MONTH, salt=salt, known_models=models)
    clean_month(lake, MONTH, threads=1)
    _label(lake, task, cache_root)

    index = _index(lake)
    mine = index.filter(pl.col("user_hash") == target)
    assert {t.split("/")[-1] for t, _ in index_partitions(lake)} >= {
        "topic_labels",
        "over_refusal",
    }
    assert set(mine["namespace"]) >= {OVER_REFUSAL_CACHE} and any(
        ns.startswith("labels/") for ns in mine["namespace"]
    )
    # the planted copy asks exactly what the other user's conversation asked
    planted = set(mine.filter(pl.col("conv_id") == PLANTED).select("namespace", "key").rows())
    others = index.filter(pl.col("user_hash") != target)
    shared = set(others.select("namespace", "key").rows()) & set(
        mine.select("namespace", "key").rows()
    )
    assert planted and planted <= shared
    assert set(others.filter(pl.col("user_hash") == theirs).select("namespace", "key").rows()) >= (
        planted
    )
    own = set(mine.select("namespace", "key").rows()) - shared
    present = _cached(
        cache_root, pl.DataFrame(list(own), schema=["namespace", "key"], orient="row")
    )
    assert len(present) > 10  # the user's own prompts' answers are in the cache
    kept = _cached(
        cache_root, pl.DataFrame(list(shared), schema=["namespace", "key"], orient="row")
    )
    assert kept

    capsys.readouterr()
    assert cli_main(["forget", "--user", identity]) == 0
    out = capsys.readouterr().out
    assert f"LLM answer cache: deleted {len(present)} entries" in out
    assert "kept: the same request of another user" in out
    own_rows = pl.DataFrame(list(own), schema=["namespace", "key"], orient="row")
    assert _cached(cache_root, own_rows) == set()
    shared_rows = pl.DataFrame(list(shared), schema=["namespace", "key"], orient="row")
    assert _cached(cache_root, shared_rows) == kept  # a shared request stays answered
    assert _index(lake).filter(pl.col("user_hash") == target).height == 0

    # the same raw files again: neither the user's labels nor their answers come back
    ingest_month(lake, str(raw), MONTH, salt=salt, known_models=models)
    clean_month(lake, MONTH, threads=1)
    _label(lake, task, cache_root)
    convs = set(mine["conv_id"])
    assert not set(lake.read("topic_labels", MONTH)["conv_id"]) & convs
    assert _cached(cache_root, own_rows) == set()
    assert _index(lake).filter(pl.col("user_hash") == target).height == 0
    assert _index(lake).filter(pl.col("user_hash") == theirs).height > 0


def test_removing_keys_rewrites_only_the_chunks_that_hold_them(tmp_path: Path) -> None:
    cache = ResponseCache(str(tmp_path), "labels/x", chunk_size=2)
    for key in ("a", "b", "c", "d", "e"):
        cache.put(key, model="m", prompt_version="v", content=f"answer {key}")
    cache.flush()
    chunks = sorted(Path(cache.dir).glob("chunk-*.parquet"))
    assert len(chunks) == 3
    assert cache.remove(["b", "zz"], dry_run=True) == 1  # counted, nothing changed
    assert sorted(Path(cache.dir).glob("chunk-*.parquet")) == chunks
    holds = {c: set(pl.read_parquet(c)["key"]) for c in chunks}
    assert cache.remove(["b", "e", "zz"]) == 2
    fresh = ResponseCache(str(tmp_path), "labels/x")
    assert {k: (fresh.get(k) or {}).get("content") for k in "abcde"} == {
        "a": "answer a",
        "b": None,
        "c": "answer c",
        "d": "answer d",
        "e": None,
    }
    left = set(Path(cache.dir).glob("chunk-*.parquet"))
    untouched = {c for c, keys in holds.items() if keys == {"c", "d"}}
    assert len(untouched) == 1 and untouched <= left  # the chunk without b or e stays
    assert not (set(chunks) - untouched) & left  # the others were replaced
    assert cache.get("b") is None and cache.remove(["b"]) == 0


def test_item_ids_name_their_owner_by_their_head() -> None:
    from arena_assets.privacy.cache_keys import key_index

    log = pl.DataFrame(
        {
            "namespace": ["judge", "judge", "reward", "labels", "answers", "names"],
            "item_id": ["b1|1", "b1|2", "b1|a", "c9\x1f0", "q7|m|2", "orphan"],
            "key": ["k1", "k2", "k3", "k4", "k5", "k6"],
        }
    )
    owners = pl.DataFrame(
        {
            "item": ["b1", "b1", "c9", "q7", "q7"],
            "conv_id": ["c1a", "c1b", "c9", "c7", "c8"],
            "user_hash": ["u1", "u1", "u9", "u7", "u8"],
        }
    )
    index = key_index(log, owners)
    assert set(index.select("key", "conv_id").rows()) == {
        ("k1", "c1a"),
        ("k1", "c1b"),
        ("k2", "c1a"),
        ("k2", "c1b"),
        ("k3", "c1a"),
        ("k3", "c1b"),
        ("k4", "c9"),
        ("k5", "c7"),
        ("k5", "c8"),
    }  # an item nobody owns (k6) is not indexed
