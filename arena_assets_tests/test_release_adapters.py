"""The public preference releases as input: small files written to each release's schema
(the 55k CSV, the 100k Parquet with the columns of its dataset card, the 140k Parquet,
VisionArena-Battle, Search Arena), detected per file,
every record accounted for, a clear reject for anything else; and LMArena's own
category_tag carried from the real FastChat file through raw_logs into battles."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
from pathlib import Path

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from arena_assets.contracts import WINNER_OF_VOTE
from arena_assets.ingest import parse_month
from arena_assets.ingest.adapters import detect_format
from arena_assets.ingest.releases import (
    ARENA_55K,
    ARENA_100K,
    ARENA_PREFERENCE,
    SEARCH_ARENA,
    VISION_BATTLE,
)
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA

MONTH = "2024-07"
JULY_3 = dt.datetime(2024, 7, 3, 12, 0, tzinfo=dt.UTC)
TAG = {
    "criteria_v0.1": {
        "specificity": True,
        "domain_knowledge": True,
        "complexity": False,
        "problem_solving": True,
        "creativity": False,
        "technical_accuracy": True,
        "real_world": True,
    },
    "if_v0.1": {"if": False, "score": 1},
    "math_v0.1": {"math": False},
    "creative_writing_v0.1": {"creative_writing": False, "score": "no"},
}


def month_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "raw" / MONTH
    folder.mkdir(parents=True)
    return folder


def parse(tmp_path: Path):
    parsed = parse_month(str(tmp_path / "raw"), MONTH, salt="s", known_models=None)
    assert parsed.lines_read == parsed.raw_logs.height + parsed.rejects.height
    assert parsed.raw_logs.schema == pl.Schema(RAW_LOGS_SCHEMA)
    return parsed


def write_55k(path: Path, rows: list[dict]) -> None:
    fields = [
        "id",
        "model_a",
        "model_b",
        "prompt",
        "response_a",
        "response_b",
        "winner_model_a",
        "winner_model_b",
        "winner_tie",
    ]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fields, quoting=csv.QUOTE_MINIMAL)
        writer.writeheader()
        writer.writerows(rows)


def row_55k(rid: int, winner: str = "a", **over: object) -> dict:
    flags = {"a": (1, 0, 0), "b": (0, 1, 0), "tie": (0, 0, 1)}[winner]
    row = {
        "id": rid,
        "model_a": "gpt-4-1106-preview",
        "model_b": "llama-2-70b-chat",
        # quoted fields spanning lines, commas and quotes inside, as the release has them
        "prompt": json.dumps(['Write a haiku,\nthen explain "kigo".', "Shorter please"]),
        "response_a": json.dumps(["Autumn moon rises,\n...", None]),
        "response_b": json.dumps(['Cold wind, "kigo" here', "Moon."]),
        "winner_model_a": flags[0],
        "winner_model_b": flags[1],
        "winner_tie": flags[2],
    }
    row.update(over)
    return row


def test_55k_csv(tmp_path: Path) -> None:
    folder = month_dir(tmp_path)
    write_55k(
        folder / "train.csv",
        [
            row_55k(30192, "a"),
            row_55k(53567, "b"),
            row_55k(65089, "tie"),
            row_55k(1, "a", winner_model_b=1),  # two winners
            row_55k(2, "a", response_b=json.dumps(["only one"])),  # turns do not line up
            row_55k(3, "a", prompt="not json"),
            row_55k(4, "a", model_b="gpt-4-1106-preview"),
        ],
    )
    parsed = parse(tmp_path)
    logs = parsed.raw_logs.sort("line_no")
    assert logs["source_format"].unique().to_list() == [ARENA_55K]
    assert [WINNER_OF_VOTE[t] for t in logs["type"]] == ["model_a", "model_b", "tie"]
    assert logs["event_id"].to_list() == ["30192", "53567", "65089"]
    assert logs["anony"].all()  # the leaderboard's anonymous battles
    # no timestamp in this release: the month's first instant
    assert logs["tstamp"].dt.strftime("%Y-%m-%d %H:%M").unique().to_list() == ["2024-07-01 00:00"]
    first = logs.row(0, named=True)
    assert [m["role"] for m in first["messages_a"]] == ["user", "assistant"] * 2
    assert first["messages_a"][0]["content"] == 'Write a haiku,\nthen explain "kigo".'
    assert first["messages_a"][3]["content"] == ""  # a null response: an empty answer
    assert first["messages_b"][3]["content"] == "Moon."
    assert first["category_tag"] is None and first["release_tags"] is None
    reasons = dict(zip(parsed.rejects["line_no"], parsed.rejects["reason"]))
    assert reasons == {
        4: "unparseable_record",
        5: "unparseable_record",
        6: "invalid_json",
        7: "same_model_battle",
    }


def test_55k_lone_surrogate_escapes_are_read(tmp_path: Path) -> None:
    """Python wrote the 55k's JSON lists: an emoji cut in half is a lone surrogate escape
    orjson refuses; the row is read, the half character replaced by U+FFFD."""
    folder = month_dir(tmp_path)
    write_55k(
        folder / "train.csv",
        [
            row_55k(7, "a", prompt=json.dumps(["Summarise \ud83d this", "and \ud83d\ude00 this"])),
            row_55k(8, "b", response_b=json.dumps(["\udca9 broken", "fine"])),
        ],
    )
    parsed = parse(tmp_path)
    assert parsed.rejects.height == 0 and parsed.raw_logs.height == 2
    logs = parsed.raw_logs.sort("line_no")
    first = logs.row(0, named=True)["messages_a"]
    assert (
        first[0]["content"] == "Summarise \ufffd this"
        and first[2]["content"] == "and \U0001f600 this"
    )
    assert logs.row(1, named=True)["messages_b"][1]["content"] == "\ufffd broken"


def preference_record(rid: str, winner: str, **over: object) -> dict:
    rec = {
        "id": rid,
        "model_a": "chatgpt-4o-latest",
        "model_b": "gemma-2-27b-it",
        "winner": winner,
        "evaluation_order": 1,
        "language": "English",
        "is_code": False,
        "category_tag": TAG,
        "conv_metadata": {"sum_assistant_a_tokens": 120, "bold_count_a": {"**": 2}},
        "timestamp": JULY_3,
        "conversation_a": [
            {"role": "user", "content": "Explain BT models"},
            {"role": "assistant", "content": "Bradley-Terry ..."},
        ],
        "conversation_b": [
            {"role": "user", "content": "Explain BT models"},
            {"role": "assistant", "content": "A model of pairs ..."},
        ],
    }
    rec.update(over)
    return rec


def test_140k_parquet(tmp_path: Path) -> None:
    """The 140k layout (``id``, ``timestamp``, struct columns), with string contents in one
    file and part-list contents plus ``evaluation_session_id`` in the other."""
    folder = month_dir(tmp_path)
    pq.write_table(
        pa.Table.from_pylist(
            [
                preference_record("a1", "model_a"),
                preference_record("a2", "tie (bothbad)"),
                preference_record("a3", "model_c"),  # not a winner
            ]
        ),
        folder / "arena-140k-strings.parquet",
    )
    parts = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in it?", "image": None, "mimeType": None}
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "A plot.", "image": None, "mimeType": None}],
        },
    ]
    pq.write_table(
        pa.Table.from_pylist(
            [
                preference_record(
                    "b1",
                    "both_bad",
                    evaluation_session_id="sess-9",
                    conversation_a=parts,
                    conversation_b=parts,
                ),
                preference_record(
                    "b2",
                    "model_b",
                    evaluation_session_id="sess-9",
                    conversation_a=parts,
                    conversation_b=parts,
                    timestamp=dt.datetime(2024, 8, 1, tzinfo=dt.UTC),
                ),  # next month
            ]
        ),
        folder / "arena-140k-parts.parquet",
    )
    parsed = parse(tmp_path)
    logs = parsed.raw_logs.sort("event_id")
    assert logs["source_format"].unique().to_list() == [ARENA_PREFERENCE]
    assert logs["event_id"].to_list() == ["a1", "a2", "b1"]
    assert [WINNER_OF_VOTE[t] for t in logs["type"]] == [
        "model_a",
        "tie (bothbad)",
        "tie (bothbad)",
    ]
    assert logs["tstamp"][0] == JULY_3
    assert json.loads(logs["category_tag"][0]) == TAG  # as published, untouched
    tags = json.loads(logs["release_tags"][0])
    assert (
        tags["language"] == "English" and tags["evaluation_order"] == 1 and tags["is_code"] is False
    )
    b1 = logs.row(2, named=True)
    assert (
        b1["messages_a"][0]["content"] == "What is in it?"
        and b1["messages_a"][1]["content"] == "A plot."
    )
    # the session is the pseudo-voter of its battles
    assert b1["user_hash"] != logs["user_hash"][0]
    reasons = parsed.rejects.select("source_file", "reason").rows()
    assert sorted(reasons) == [
        (f"{MONTH}/arena-140k-parts.parquet", "tstamp_outside_month"),
        (f"{MONTH}/arena-140k-strings.parquet", "unparseable_record"),
    ]


def record_100k(qid: str, winner: str, judge: str, **over: object) -> dict:
    """A row with the columns of the lmarena-ai/arena-human-preference-100k card: the
    conversations, conv_metadata and category_tag as JSON strings, tstamp in seconds."""
    conv = lambda answer: json.dumps(
        [
            {"role": "user", "content": "Name a prime", "num_tokens": 3},
            {"role": "assistant", "content": answer, "num_tokens": 4},
        ]
    )
    rec = {
        "question_id": qid,
        "model_a": "gpt-4o-2024-05-13",
        "model_b": "llama-3-70b-instruct",
        "winner": winner,
        "judge_hash": judge,
        "conversation_a": conv("Seven."),
        "conversation_b": conv("2 is the smallest."),
        "turn": 1,
        "anony": True,
        "language": "English",
        "tstamp": JULY_3.timestamp(),
        "conv_metadata": json.dumps(
            {
                "sum_user_tokens": 3,
                "sum_assistant_a_tokens": 4,
                "sum_assistant_b_tokens": 6,
                "context_a_tokens": 3,
                "context_b_tokens": 3,
                "turns": 1,
            }
        ),
        "is_code": False,
        "is_refusal": False,
        "dedup_tag": {"high_freq": False, "sampled": True},
        "category_tag": json.dumps(TAG),
    }
    rec.update(over)
    return rec


def test_100k_parquet_as_published(tmp_path: Path) -> None:
    """The 100k release's own columns: detected as such (not as a FastChat clean_battle
    file), JSON-string columns parsed, judge_hash the voter (one voter, one user_hash)."""
    folder = month_dir(tmp_path)
    emoji = json.dumps(
        [{"role": "user", "content": "Hi \ud83d"}, {"role": "assistant", "content": "Hello"}]
    )
    pq.write_table(
        pa.Table.from_pylist(
            [
                record_100k("q1", "model_a", "judge-aaa"),
                record_100k("q2", "tie (bothbad)", "judge-aaa"),
                record_100k("q3", "model_b", "judge-bbb", is_refusal=True),
                record_100k("q4", "model_a", "judge-bbb", conversation_a=emoji),  # a lone surrogate
                record_100k("q5", "model_a", "judge-ccc", conversation_b="[not json"),
            ]
        ),
        folder / "train-00000-of-00001.parquet",
    )
    assert detect_format(record_100k("q", "model_a", "j")) == ARENA_100K
    parsed = parse(tmp_path)
    logs = parsed.raw_logs.sort("event_id")
    assert logs["source_format"].unique().to_list() == [ARENA_100K]
    assert logs["event_id"].to_list() == ["q1", "q2", "q3", "q4"]
    assert [WINNER_OF_VOTE[t] for t in logs["type"]] == [
        "model_a",
        "tie (bothbad)",
        "model_b",
        "model_a",
    ]
    first = logs.row(0, named=True)
    assert [m["content"] for m in first["messages_a"]] == ["Name a prime", "Seven."]
    assert first["messages_b"][1]["content"] == "2 is the smallest." and first["anony"]
    assert logs.row(3, named=True)["messages_a"][0]["content"] == "Hi \ufffd"
    users = logs["user_hash"].to_list()
    assert users[0] == users[1] != users[2] == users[3]  # the voter is judge_hash
    assert json.loads(first["category_tag"]) == TAG
    tags = json.loads(first["release_tags"])
    assert tags["conv_metadata"]["sum_user_tokens"] == 3  # parsed, not a string
    assert (
        tags["dedup_tag"] == {"high_freq": False, "sampled": True} and tags["is_refusal"] is False
    )
    assert parsed.rejects.select("line_no", "reason").rows() == [(5, "invalid_json")]


def test_vision_battle_images_as_bytes(tmp_path: Path) -> None:
    folder = month_dir(tmp_path)
    png = b"\x89PNG\r\n\x1a\n" + b"pixels" * 10
    rec = {
        "question_id": "v1",
        "model_a": "gpt-4o",
        "model_b": "llava-v1.6",
        "winner": "model_b",
        "judge": "arena_user_3",
        "turn": 1,
        "anony": True,
        "language": "English",
        "tstamp": JULY_3.timestamp(),
        "category_tag": {"vision_v0.1": {"ocr": True}},
        "conversation_a": [
            {"role": "user", "content": "Read the sign"},
            {"role": "assistant", "content": "It says STOP."},
        ],
        "conversation_b": [
            {"role": "user", "content": "Read the sign"},
            {"role": "assistant", "content": "STOP"},
        ],
        "images": [{"bytes": png, "path": None}],
    }
    bad = {**rec, "question_id": "v2", "images": [{"bytes": None, "path": "lost.png"}]}
    pq.write_table(pa.Table.from_pylist([rec, bad]), folder / "vision-battle.parquet")
    parsed = parse(tmp_path)
    assert parsed.raw_logs["source_format"].to_list() == [VISION_BATTLE]
    row = parsed.raw_logs.row(0, named=True)
    digest = hashlib.sha256(png).hexdigest()
    assert row["messages_a"][0]["images"] == [digest] and row["messages_b"][0]["images"] == [digest]
    assert row["messages_a"][1]["images"] == []
    assert json.loads(row["category_tag"]) == {"vision_v0.1": {"ocr": True}}
    assert parsed.rejects["reason"].to_list() == ["bad_image_ref"]  # an image without its bytes


def test_search_arena_with_and_without_ids(tmp_path: Path) -> None:
    folder = month_dir(tmp_path)
    base = {
        "model_a": "gemini-2.5-pro-grounding",
        "model_b": "sonar-pro",
        "winner": "model_a",
        "judge": "arena_user_11",
        "turn": 1,
        "anony": True,
        "language": "English",
        "tstamp": JULY_3.timestamp(),
        "primary_intent": "Info Seeking",
        "messages_a": [
            {"role": "user", "content": "Latest Rust release?"},
            {"role": "assistant", "content": "Rust 1.80 [1]"},
        ],
        "messages_b": [
            {"role": "user", "content": "Latest Rust release?"},
            {"role": "assistant", "content": "1.80"},
        ],
        "system_a_metadata": {"citations": ["https://blog.rust-lang.org"] * 3},
    }
    records = [base, {**base, "question_id": "s2"}, base]  # the third repeats the first
    (folder / "search.jsonl").write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
    parsed = parse(tmp_path)
    logs = parsed.raw_logs
    assert logs["source_format"].unique().to_list() == [SEARCH_ARENA]
    assert logs.height == 2 and logs["event_id"][1] == "s2"
    assert logs["event_id"][0].startswith("sa-")  # derived, so a repeat is a duplicate
    assert parsed.rejects["reason"].to_list() == ["duplicate_event_id"]
    assert json.loads(logs["release_tags"][0])["primary_intent"] == "Info Seeking"
    assert "citations" not in logs["release_tags"][0]  # the search traces are not kept


def test_anything_else_is_a_clear_reject(tmp_path: Path) -> None:
    folder = month_dir(tmp_path)
    write_55k(folder / "other.csv", [])  # an empty release: a header and no row
    with open(folder / "scores.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["model", "score"], ["gpt-4", "1250"], ["llama", "1100"]])
    pq.write_table(
        pa.Table.from_pylist([{"prompt": "hi", "chosen": "a", "rejected": "b"}]),
        folder / "dpo.parquet",
    )
    parsed = parse(tmp_path)
    assert parsed.raw_logs.height == 0 and parsed.lines_read == 3
    assert parsed.rejects["reason"].unique().to_list() == ["missing_type"]
    detail = parsed.rejects.filter(pl.col("source_file").str.ends_with("dpo.parquet"))["detail"][0]
    assert "matches no known layout" in detail and "'chosen'" in detail and "arena_55k" in detail
    # a native file whose first line lost its type keeps its other lines
    assert detect_format({"event_id": "e", "tstamp": 1.0}) == "native"


def test_detection_prefers_each_release_by_its_keys() -> None:
    assert detect_format(row_55k(1)) == ARENA_55K
    assert detect_format(preference_record("x", "model_a")) == ARENA_PREFERENCE
    assert detect_format(record_100k("q", "model_a", "j")) == ARENA_100K
    # FastChat's clean_battle after its dedup step: dedup_tag, but list conversations
    fastchat = {k: v for k, v in record_100k("q", "model_a", "j").items() if k != "judge_hash"}
    assert detect_format(fastchat | {"conversation_a": [], "conversation_b": []}) == "clean_battle"
    assert (
        detect_format({"model_a": "m", "winner": "tie", "messages_a": [], "messages_b": []})
        == SEARCH_ARENA
    )
    clean = {
        "question_id": "q",
        "model_a": "m",
        "model_b": "n",
        "winner": "tie",
        "tstamp": 1.0,
        "conversation_a": [],
        "conversation_b": [],
    }
    assert detect_format(clean) == "clean_battle"
    assert detect_format({**clean, "images": []}) == VISION_BATTLE


def test_real_clean_battles_carry_category_tag(real_data: Path, tmp_path: Path) -> None:
    """The real FastChat file (100 battles with LMArena's category_tag) keeps its tags,
    byte for byte as JSON values, on every accepted vote."""
    src = real_data / "battles" / "clean_battles_2024_full_conversations.jsonl"
    records = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    months = sorted(
        {dt.datetime.fromtimestamp(r["tstamp"], dt.UTC).strftime("%Y-%m") for r in records}
    )
    month = max(
        months,
        key=lambda m: sum(
            dt.datetime.fromtimestamp(r["tstamp"], dt.UTC).strftime("%Y-%m") == m for r in records
        ),
    )
    folder = tmp_path / "raw" / month
    folder.mkdir(parents=True)
    (folder / src.name).write_bytes(src.read_bytes())
    parsed = parse_month(str(tmp_path / "raw"), month, salt="s", known_models=None)
    assert parsed.lines_read == parsed.raw_logs.height + parsed.rejects.height == len(records)
    by_id = {str(r["question_id"]): r for r in records}
    assert parsed.raw_logs.height > 10
    for eid, tag, extra in parsed.raw_logs.select(
        "event_id", "category_tag", "release_tags"
    ).iter_rows():
        assert json.loads(tag) == by_id[eid]["category_tag"]
        assert json.loads(extra)["is_refusal"] == by_id[eid]["is_refusal"]
    assert set(parsed.rejects["reason"]) <= {"tstamp_outside_month"}


def test_release_tags_reach_battles(tmp_path: Path) -> None:
    from arena_assets.battles.build import build_battles

    folder = month_dir(tmp_path)
    pq.write_table(
        pa.Table.from_pylist([preference_record("a1", "model_a")]), folder / "arena-140k.parquet"
    )
    parsed = parse(tmp_path)
    conv = pl.DataFrame(
        {"conv_id": ["a1-a"], "language": ["en"], "dedup_key": ["k"], "tstamp": [JULY_3]}
    )
    battles = build_battles(parsed.raw_logs, conv).battles
    assert json.loads(battles["category_tag"][0]) == TAG
    assert json.loads(battles["release_tags"][0])["evaluation_order"] == 1


def test_release_category_tags_feed_the_boards_without_a_labeller(arena_env) -> None:
    """A 140k-layout release through Dagster: its conversations are not sent to the topic
    labeller, and the category boards hold exactly the battles LMArena's own tags put there
    (labels.tags' rules: math_v0.1.math, 6 of 7 criteria for hard_6); its tags carry no
    refusal, so no_refusal holds the battles whose release says is_refusal false."""
    import numpy as np

    from arena_assets.labels.tags import CRITERIA
    from arena_assets.simulator.shared import simulated_endpoint
    from arena_assets.storage import Lake
    from arena_assets_tests.harness import materialize

    rng = np.random.default_rng(5)
    skill = {f"model-{k}": 200.0 * k for k in range(5)}
    records = []
    for i in range(600):
        a, b = rng.choice(list(skill), 2, replace=False)
        p = 1 / (1 + 10 ** ((skill[b] - skill[a]) / 400))
        tag = {
            "criteria_v0.1": dict.fromkeys(CRITERIA, bool(i % 3 == 0)),
            "math_v0.1": {"math": bool(i % 2 == 0)},
            "if_v0.1": {"if": False, "score": 1},
            "creative_writing_v0.1": {"creative_writing": False, "score": "no"},
        }
        records.append(
            preference_record(
                f"r{i}",
                "model_a" if rng.random() < p else "model_b",
                model_a=a,
                model_b=b,
                category_tag=tag,
                timestamp=JULY_3 + dt.timedelta(minutes=i),
                is_refusal=i % 5 == 0,
                conversation_a=[
                    {"role": "user", "content": f"Question number {i}: solve x+{i}=0"},
                    {"role": "assistant", "content": f"x = -{i}"},
                ],
                conversation_b=[
                    {"role": "user", "content": f"Question number {i}: solve x+{i}=0"},
                    {"role": "assistant", "content": f"The answer is -{i}."},
                ],
            )
        )
    folder = Path(arena_env["ARENA_RAW_ROOT"]) / MONTH
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(records), folder / "arena-140k.parquet")
    ep = simulated_endpoint(
        f"{arena_env['ARENA_RAW_ROOT']}/_truth", int(arena_env["ARENA_SIM_WORLD_SEED"]), 0.0
    )
    before = ep.call_count(route="chat/completions")
    assert materialize(
        MONTH,
        "raw_logs,raw_rejects,conversations,topic_labels,battles,battle_cells,arena_leaderboard",
    ).success
    assert ep.call_count(route="chat/completions") == before  # no labelling call
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    assert lake.read("topic_labels", MONTH).height == 0
    battles = lake.read("battles", MONTH)
    kept = battles.filter(pl.col("keep"))
    assert kept.height > 500 and battles["category_tag"].is_not_null().all()
    board = lake.read("arena_leaderboard", MONTH)
    counts = dict(board.group_by("board").agg(pl.col("battles").sum() // 2).iter_rows())
    math_ids = {f"r{i}" for i in range(0, 600, 2)}
    hard_ids = {f"r{i}" for i in range(0, 600, 3)}
    assert counts["math"] == kept.filter(pl.col("battle_id").is_in(math_ids)).height
    assert counts["hard_6"] == kept.filter(pl.col("battle_id").is_in(hard_ids)).height
    refused = {f"r{i}" for i in range(0, 600, 5)}
    assert counts["no_refusal"] == kept.filter(~pl.col("battle_id").is_in(refused)).height
    assert "creative_writing" not in counts  # no battle of the release is tagged so
