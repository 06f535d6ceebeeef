"""Adapters: FastChat clean_battle records and conversation dumps, real files included."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter, defaultdict
from pathlib import Path

import orjson
import polars as pl
import pytest

from arena_assets.contracts import WINNER_OF_VOTE
from arena_assets.ingest import (
    CLEAN_BATTLE,
    CONVERSATION_DUMP,
    NATIVE,
    detect_format,
    parse_lines,
    parse_month,
)
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA

MONTH = "2024-07"
JULY_2 = 1719878400.0  # 2024-07-02T00:00:00Z
IMG = "0f" * 32
REAL_BATTLES = (
    "clean_battles_2024_full_conversations.jsonl",
    "votes_2023_hard_english_with_prompts.jsonl",
)


def battle(qid: str = "q1", **over: object) -> dict:
    record = {
        "question_id": qid,
        "model_a": "gpt-4",
        "model_b": "vicuna-13b",
        "winner": "model_a",
        "judge": "arena_user_7",
        "turn": 1,
        "anony": True,
        "language": "English",
        "tstamp": JULY_2,
        "conversation_a": [
            {"role": "user", "content": "Hi", "num_tokens": 1},
            {"role": "assistant", "content": "Hello", "num_tokens": 1},
        ],
        "conversation_b": [
            {"role": "user", "content": "Hi", "num_tokens": 1},
            {"role": "assistant", "content": "Hey", "num_tokens": 1},
        ],
    }
    record.update(over)
    return record


def dump(cid: str = "conv-1", **over: object) -> dict:
    record = {
        "conversation_id": cid,
        "model": "llava-v1.6",
        "language": "English",
        "turn": 1,
        "conversation": [
            {"role": "user", "content": "What is this?"},
            {"role": "assistant", "content": "A cat."},
        ],
    }
    record.update(over)
    return record


def lines(records: list[dict]) -> list[bytes]:
    return [orjson.dumps(r) for r in records]


def test_detection_by_first_record_keys() -> None:
    assert detect_format({"type": "chat"}) == NATIVE
    assert detect_format(battle()) == CLEAN_BATTLE
    assert detect_format(dump()) == CONVERSATION_DUMP
    assert detect_format({"something": 1}) == NATIVE
    # junk before the first object does not decide the format
    part = parse_lines([b"", b"[1]", *lines([battle()])], "f", MONTH, salt="s")
    assert part.source_format == CLEAN_BATTLE
    assert part.raw_logs["source_format"].to_list() == [CLEAN_BATTLE]
    assert part.rejects["reason"].to_list() == ["empty_line", "not_an_object"]


def test_clean_battle_maps_winner_ids_and_messages() -> None:
    winners = list(WINNER_OF_VOTE.values())
    records = [battle(f"q{i}", winner=w) for i, w in enumerate(winners)]
    part = parse_lines(lines(records), "f", MONTH, salt="s")
    assert part.rejects.height == 0
    logs = part.raw_logs
    assert logs.schema == pl.Schema(RAW_LOGS_SCHEMA)
    assert [WINNER_OF_VOTE[t] for t in logs["type"]] == winners
    row = logs.row(0, named=True)
    assert (row["event_id"], row["conv_id_a"], row["conv_id_b"]) == ("q0", "q0-a", "q0-b")
    assert (row["model_a"], row["model_b"], row["anony"]) == ("gpt-4", "vicuna-13b", True)
    assert row["messages_b"][1] == {"role": "assistant", "content": "Hey", "images": []}
    judge_hash = row["user_hash"]
    other = parse_lines(lines([battle("q9", judge="arena_user_8")]), "f", MONTH, salt="s")
    assert other.raw_logs["user_hash"][0] != judge_hash
    assert logs["user_hash"].n_unique() == 1  # same judge, same hash


def test_clean_battle_prompts_only_and_rejects() -> None:
    prompts_only = battle("p1", turns=["first", "second"])
    del prompts_only["conversation_a"], prompts_only["conversation_b"]
    no_winner = battle("p2")
    del no_winner["winner"]
    records = [
        prompts_only,
        no_winner,
        battle("p3", winner="model_c"),
        battle("p4", model_b="gpt-4"),
        battle("p5", tstamp=JULY_2 - 10 * 86400),
        battle("p1"),
        battle("p6", conversation_a=[]),
    ]
    part = parse_lines(lines(records), "f", MONTH, salt="s")
    row = part.raw_logs.row(0, named=True)
    assert [m["content"] for m in row["messages_a"]] == ["first", "second"]
    assert row["messages_a"] == row["messages_b"] and {m["role"] for m in row["messages_a"]} == {
        "user"
    }
    assert part.rejects["reason"].to_list() == [
        "unparseable_record",
        "unparseable_record",
        "same_model_battle",
        "tstamp_outside_month",
        "duplicate_event_id",
        "empty_messages",
    ]
    assert "winner" in part.rejects["detail"][0] and "model_c" in part.rejects["detail"][1]


def test_clean_battle_json_list_file(tmp_path: Path) -> None:
    folder = tmp_path / MONTH
    folder.mkdir()
    records = [battle(f"q{i}", winner=list(WINNER_OF_VOTE.values())[i % 4]) for i in range(10)]
    records.append({"question_id": "broken"})
    (folder / "clean_battle_20240702.json").write_bytes(orjson.dumps(records))
    (tmp_path / "models.json").write_bytes(orjson.dumps([{"name": "gpt-4"}]))
    parsed = parse_month(str(tmp_path), MONTH, salt="s", known_models=None)
    assert parsed.lines_read == 11 and parsed.raw_logs.height == 10
    assert parsed.raw_logs["line_no"].to_list() == list(range(1, 11))
    assert parsed.rejects["reason"].to_list() == ["unparseable_record"]
    assert parsed.files[0].source_format == CLEAN_BATTLE
    strict = parse_month(str(tmp_path), MONTH, salt="s", known_models={"gpt-4"})
    assert strict.reason_counts() == {"unknown_model": 10, "unparseable_record": 1}


def test_conversation_dump_jsonl_and_parquet(tmp_path: Path) -> None:
    png = b"\x89PNG fake bytes"
    records = [
        dump("c1"),  # no tstamp: the month's first instant
        dump(
            "c2",
            tstamp=JULY_2 + 60,
            user_id="u-5",
            conversation=[
                [{"role": "user", "content": "turn one"}, {"role": "assistant", "content": "a"}],
                [{"role": "user", "content": "turn two"}, {"role": "assistant", "content": "b"}],
            ],
        ),
        dump("c3", images=[IMG]),
        dump("c4", model=None),
        dump("c1"),
    ]
    part = parse_lines(lines(records), "f", MONTH, salt="s")
    logs = part.raw_logs
    assert logs["event_id"].to_list() == ["c1", "c2", "c3"] == logs["conv_id_a"].to_list()
    assert set(logs["type"]) == {"chat"} and logs["model_b"].null_count() == 3
    assert logs["tstamp"][0] == dt.datetime(2024, 7, 1, tzinfo=dt.UTC)
    assert [m["content"] for m in logs["messages_a"][1]] == ["turn one", "a", "turn two", "b"]
    assert logs["messages_a"][2].to_list()[0]["images"] == [IMG]
    assert part.rejects["reason"].to_list() == ["unparseable_record", "duplicate_event_id"]
    # Parquet: conversation as list<struct>, images as structs with bytes (VisionArena style)
    folder = tmp_path / MONTH
    folder.mkdir()
    pl.DataFrame(
        {
            "conversation_id": ["v1", "v2"],
            "model": ["llava", "gpt-4o"],
            "conversation": [
                [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}],
                [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}],
            ],
            "images": [[{"bytes": png, "path": None}], []],
        }
    ).write_parquet(folder / "vision.parquet")
    parsed = parse_month(str(tmp_path), MONTH, salt="s", known_models=None)
    assert parsed.rejects.height == 0 and parsed.lines_read == 2
    first = parsed.raw_logs["messages_a"][0].to_list()[0]
    assert first["images"] == [hashlib.sha256(png).hexdigest()]
    assert parsed.files[0].source_format == CONVERSATION_DUMP


@pytest.mark.parametrize("name", REAL_BATTLES)
def test_real_battles_parse_completely(real_data: Path, name: str) -> None:
    path = real_data / "battles" / name
    raw = path.read_bytes().splitlines()
    records = [orjson.loads(x) for x in raw]
    by_month: dict[str, list[bytes]] = defaultdict(list)
    for line, rec in zip(raw, records, strict=True):
        by_month[dt.datetime.fromtimestamp(rec["tstamp"], dt.UTC).strftime("%Y-%m")].append(line)
    assert len(by_month) >= 3  # the files span several months
    types: Counter[str] = Counter()
    for month, month_lines in by_month.items():
        part = parse_lines(month_lines, f"battles/{name}", month, salt="s")
        assert part.rejects.height == 0, part.rejects["detail"].to_list()
        assert part.raw_logs.height == len(month_lines)
        types.update(part.raw_logs["type"].to_list())
        expected = [r["winner"] for r in map(orjson.loads, month_lines)]
        assert [WINNER_OF_VOTE[t] for t in part.raw_logs["type"]] == expected
        assert part.raw_logs["model_a"].to_list() == [
            orjson.loads(x)["model_a"] for x in month_lines
        ]
    assert sum(types.values()) == len(records)
    assert types == Counter(
        {v: c for v, w in WINNER_OF_VOTE.items() if (c := sum(r["winner"] == w for r in records))}
    )
    # one month window over the whole file: every record is accounted for, most outside it
    month = max(by_month, key=lambda m: len(by_month[m]))
    whole = parse_lines(raw, f"battles/{name}", month, salt="s")
    assert whole.raw_logs.height == len(by_month[month])
    assert whole.reason_counts() == {"tstamp_outside_month": len(raw) - len(by_month[month])}


def test_real_prompts_only_votes_use_judge_and_turns(real_data: Path) -> None:
    raw = (real_data / "battles" / REAL_BATTLES[1]).read_bytes().splitlines()
    first = orjson.loads(raw[0])
    month = dt.datetime.fromtimestamp(first["tstamp"], dt.UTC).strftime("%Y-%m")
    part = parse_lines(raw, "f", month, salt="s")
    row = part.raw_logs.row(0, named=True)
    assert [m["content"] for m in row["messages_a"]] == first["turns"]
    records = [orjson.loads(x) for x in raw]
    judges = {
        r["judge"]
        for r in records
        if dt.datetime.fromtimestamp(r["tstamp"], dt.UTC).strftime("%Y-%m") == month
    }
    assert part.raw_logs["user_hash"].n_unique() == len(judges)
