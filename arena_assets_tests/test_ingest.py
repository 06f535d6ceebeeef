"""Native event parsing: one outcome per line, every reject reason, files, duplicates."""

from __future__ import annotations

import copy
import gzip
import random
from pathlib import Path

import orjson
import polars as pl
import pytest

from arena_assets.clean.pii import scrub_raw_text
from arena_assets.cli import main as cli_main
from arena_assets.contracts import (
    MAX_LINE_BYTES,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES,
    REJECT_RAW_CHARS,
    REJECT_REASONS,
)
from arena_assets.ingest import (
    UnreadableFileError,
    iter_parsed_files,
    list_month_files,
    load_model_registry,
    parse_lines,
    parse_month,
)
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA, RAW_REJECTS_SCHEMA

MONTH = "2024-05"
MAY_3 = 1714694400.0  # 2024-05-03T00:00:00Z
IMG = "ab" * 32


def chat(eid: str = "e-1", **over: object) -> dict:
    event = {
        "event_id": eid,
        "type": "chat",
        "tstamp": MAY_3 + 12.5,
        "ip": "203.0.113.7",
        "anony": False,
        "state": {
            "conv_id": "c-1",
            "model_name": "model-x",
            "offset": 0,
            "messages": [
                {"role": "user", "content": "Hi there"},
                {"role": "assistant", "content": "Hello!"},
            ],
        },
    }
    event.update(over)
    return event


def vote(eid: str = "v-1", **over: object) -> dict:
    event = {
        "event_id": eid,
        "type": "rightvote",
        "tstamp": "2024-05-03T10:00:00+00:00",
        "user_id": "u-42",
        "anony": True,
        "models": ["", ""],
        "states": [
            {
                "conv_id": "c-a",
                "model_name": "model-x",
                "messages": [["user", "Compare"], ["assistant", "A says"]],
            },
            {
                "conv_id": "c-b",
                "model_name": "model-y",
                "messages": [
                    {"role": "user", "content": "Compare", "images": [IMG]},
                    {"role": "assistant", "content": None},
                ],
            },
        ],
    }
    event.update(over)
    return event


def line(event: object) -> bytes:
    return orjson.dumps(event)


def with_state(**fields: object) -> dict:
    event = chat()
    event["state"] = {**event["state"], **fields}
    return event


def with_message(msg: object) -> dict:
    return with_state(messages=[msg, {"role": "assistant", "content": "ok"}])


def _drop(event: dict, key: str) -> dict:
    event = copy.deepcopy(event)
    del event[key]
    return event


BAD_LINES: list[tuple[str, bytes]] = [
    ("empty_line", b""),
    ("empty_line", b"   \t\r"),
    ("line_too_long", b'{"x": "' + b"a" * (MAX_LINE_BYTES + 100_000) + b'"}'),
    ("invalid_utf8", b'\xff\xfe{"event_id": "e"}'),
    ("invalid_utf8", line(chat())[:-20] + b"\xc3\x28" + line(chat())[-18:]),
    ("invalid_json", b'{"event_id": "e-1", "type": '),
    ("invalid_json", b"{'single': 'quotes'}"),
    ("not_an_object", b"[1, 2, 3]"),
    ("not_an_object", b'"just a string"'),
    ("missing_type", line(_drop(chat(), "type"))),
    ("unknown_type", line(chat(type="upvote"))),
    ("unknown_type", line(chat(type=["chat"]))),
    ("missing_event_id", line(_drop(chat(), "event_id"))),
    ("wrong_type", line(chat(event_id=17))),
    ("missing_tstamp", line(_drop(chat(), "tstamp"))),
    ("bad_tstamp", line(chat(tstamp="yesterday"))),
    ("bad_tstamp", line(chat(tstamp=-5))),
    ("bad_tstamp", line(chat(tstamp=True))),
    ("bad_tstamp", line(chat(tstamp=1e300))),
    ("tstamp_outside_month", line(chat(tstamp=1717200000.0))),  # 2024-06-01T00:00Z
    ("tstamp_outside_month", line(chat(tstamp="2024-04-30T23:59:59Z"))),
    ("missing_user", line(_drop(chat(), "ip"))),
    ("wrong_type", line(chat(ip=12345))),
    ("missing_state", line(_drop(chat(), "state"))),
    ("missing_state", line(_drop(vote(), "states"))),
    ("missing_state", line(vote(states=[vote()["states"][0]]))),
    ("wrong_type", line(chat(state="not an object"))),
    ("wrong_type", line(vote(states={"a": 1}))),
    ("wrong_type", line(chat(anony="yes"))),
    ("wrong_type", line(with_state(messages="hello"))),
    ("missing_conv_id", line(with_state(conv_id=None))),
    ("missing_model", line(with_state(model_name=""))),
    ("same_model_battle", line(vote(states=[vote()["states"][0], vote()["states"][0]]))),
    ("empty_messages", line(with_state(messages=[]))),
    ("empty_messages", line(with_state(messages=None))),
    ("bad_message", line(with_message("just text"))),
    ("bad_message", line(with_message({"role": "user"}))),
    ("wrong_type", line(with_message({"role": "user", "content": 42}))),
    ("wrong_type", line(with_message({"role": 1, "content": "x"}))),
    ("wrong_type", line(with_message({"role": "user", "content": "x", "images": ""}))),
    ("wrong_type", line(with_message({"role": "user", "content": "x", "images": {}}))),
    ("bad_message", line(with_message(["user", "a", "b"]))),
    ("bad_role", line(with_message({"role": "robot", "content": "beep"}))),
    ("bad_role", line(with_message(["human", "hello"]))),
    ("empty_content", line(with_message({"role": "user", "content": "  \n "}))),
    ("empty_content", line(with_message(["user", None]))),
    (
        "absurd_length",
        line(with_message({"role": "user", "content": "x" * (MAX_MESSAGE_CHARS + 1)})),
    ),
    ("absurd_length", line(with_state(messages=[["user", "hi"]] * (MAX_MESSAGES + 1)))),
    (
        "bad_image_ref",
        line(with_message({"role": "user", "content": "see", "images": ["cat.png"]})),
    ),
    ("bad_image_ref", line(with_message({"role": "user", "content": "", "images": [IMG[:-1]]}))),
]


@pytest.mark.parametrize(
    ("reason", "raw"), BAD_LINES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(BAD_LINES)]
)
def test_each_malformed_line_gets_exactly_its_reason(reason: str, raw: bytes) -> None:
    part = parse_lines([raw], "2024-05/x.jsonl", MONTH, salt="s")
    assert part.raw_logs.height == 0
    assert part.rejects["reason"].to_list() == [reason], part.rejects["detail"].to_list()
    rej = part.rejects.row(0, named=True)
    assert rej["line_no"] == 1 and rej["detail"]
    # a numeric identity is blanked like a string one (clean/rejects.py)
    kept = raw.replace(b'"ip":12345', b'"ip":"<USER>"')
    # the raw text is kept, with the user's address / id and any PII blanked, scrubbed
    # whole before it is cut to length
    assert rej["raw"] == scrub_raw_text(kept.decode("utf-8", "replace"))[:REJECT_RAW_CHARS]
    assert "203.0.113.7" not in rej["raw"] and "12345" not in rej["raw"]


def test_reason_table_covers_every_native_reason() -> None:
    covered = {reason for reason, _ in BAD_LINES} | {"duplicate_event_id", "unknown_model"}
    # these reasons have their own hand-written lines in test_bad_input.py
    covered |= {"truncated_file", "models_mismatch", "shared_conv_id", "duplicate_key"}
    covered |= {"no_user_turn"}  # test_bad_input.py too
    covered |= {"forgotten_user"}  # a user on the forget list: test_forget_list.py
    # unparseable_record belongs to the adapters (test_adapters.py)
    assert covered == set(REJECT_REASONS) - {"unparseable_record"}


def test_valid_chat_and_vote_become_one_row_each() -> None:
    part = parse_lines([line(chat()), line(vote())], "2024-05/a.jsonl", MONTH, salt="pepper")
    assert part.rejects.height == 0
    assert part.raw_logs.schema == pl.Schema(RAW_LOGS_SCHEMA)
    c, v = part.raw_logs.to_dicts()
    assert (c["event_id"], c["type"], c["line_no"]) == ("e-1", "chat", 1)
    assert (c["model_a"], c["conv_id_a"]) == ("model-x", "c-1")
    assert c["tstamp"].timestamp() == MAY_3 + 12.5
    assert c["messages_a"] == [
        {"role": "user", "content": "Hi there", "images": []},
        {"role": "assistant", "content": "Hello!", "images": []},
    ]
    assert c["conv_id_b"] is None and c["model_b"] is None and c["messages_b"] is None
    assert (v["type"], v["anony"], v["model_a"], v["model_b"]) == (
        "rightvote",
        True,
        "model-x",
        "model-y",
    )
    assert v["messages_a"][0] == {
        "role": "user",
        "content": "Compare",
        "images": [],
    }  # FastChat pair
    assert v["messages_b"][0]["images"] == [IMG]
    assert v["messages_b"][1] == {"role": "assistant", "content": "", "images": []}  # null -> ""
    assert c["source_format"] == v["source_format"] == "native"
    assert c["month"] == MONTH and c["source_file"] == "2024-05/a.jsonl"


def test_user_hash_is_salted_and_never_the_raw_value() -> None:
    lines = [line(chat("a")), line(chat("b")), line(chat("c", ip="198.51.100.1"))]
    one = parse_lines(lines, "f", MONTH, salt="one").raw_logs["user_hash"].to_list()
    two = parse_lines(lines, "f", MONTH, salt="two").raw_logs["user_hash"].to_list()
    assert one[0] == one[1] != one[2]
    assert one[0] != two[0]
    assert all(16 <= len(h) <= 24 and "203.0" not in h for h in one)


def test_month_bounds_are_half_open() -> None:
    starts = [
        chat("a", tstamp=1714521600),
        chat("b", tstamp=1717199999.9999),
        chat("c", tstamp=1717200000),
        chat("d", tstamp="2024-05-01T00:00:00"),
    ]
    part = parse_lines(map(line, starts), "f", MONTH, salt="s")
    assert part.raw_logs["event_id"].to_list() == ["a", "b", "d"]
    assert part.rejects["reason"].to_list() == ["tstamp_outside_month"]


def test_offset_drops_few_shot_messages() -> None:
    event = with_state(offset=2, messages=[["user", "ex"], ["assistant", "ex"], ["USER", "real"]])
    msgs = parse_lines([line(event)], "f", MONTH, salt="s").raw_logs["messages_a"][0].to_list()
    assert msgs == [{"role": "user", "content": "real", "images": []}]


def test_duplicate_event_ids_keep_the_first() -> None:
    lines = [
        line(chat("x", ip="1.1.1.1")),
        line(chat("y")),
        line(chat("x", ip="2.2.2.2")),
        line(chat("z", tstamp=0)),
        line(chat("z")),
    ]
    part = parse_lines(lines, "f", MONTH, salt="s")
    assert part.raw_logs["event_id"].to_list() == ["x", "y", "z"]
    assert part.raw_logs["line_no"].to_list() == [1, 2, 5]  # the invalid first "z" is no owner
    assert part.rejects.select("line_no", "reason").rows() == [
        (3, "duplicate_event_id"),
        (4, "tstamp_outside_month"),
    ]


def test_unknown_model_only_with_a_registry(tmp_path: Path) -> None:
    (tmp_path / "models.json").write_bytes(orjson.dumps([{"name": "model-x", "vision": False}]))
    known = load_model_registry(str(tmp_path))
    assert known == {"model-x"}
    assert load_model_registry(str(tmp_path / "nowhere")) is None
    lines = [line(chat()), line(vote())]
    assert parse_lines(lines, "f", MONTH, salt="s").raw_logs.height == 2
    part = parse_lines(lines, "f", MONTH, salt="s", known_models=known)
    assert part.raw_logs["event_id"].to_list() == ["e-1"]
    assert part.rejects["reason"].to_list() == ["unknown_model"]
    assert "model-y" in part.rejects["detail"][0]


def _mutate(raw: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:  # flip random bytes
        buf = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        return bytes(buf)
    if kind == 1:  # truncate
        return raw[: rng.randrange(len(raw))]
    if kind == 2:  # splice two lines
        cut = rng.randrange(len(raw))
        return raw[:cut] + raw[rng.randrange(len(raw)) :]
    event = orjson.loads(raw)
    node: object = event
    for _ in range(rng.randint(1, 5)):  # walk down, then replace a value with junk
        if isinstance(node, dict) and node:
            key = rng.choice(list(node))
            if kind == 3 or not isinstance(node[key], dict | list):
                node[key] = rng.choice([None, 0, -1.5, "", "x", [], {}, [["user"]], True, 1e300])
                break
            node = node[key]
        elif isinstance(node, list) and node:
            i = rng.randrange(len(node))
            if not isinstance(node[i], dict | list):
                node[i] = rng.choice([None, 7, {"role": "user"}, ["assistant", 3]])
                break
            node = node[i]
    return orjson.dumps(event)


def test_conservation_on_random_garbage() -> None:
    rng = random.Random(20240501)
    valid = [line(chat(f"e-{i}") if i % 2 else vote(f"v-{i}")) for i in range(3000)]
    valid += valid[:100]  # some plain duplicates too
    lines = [_mutate(raw, rng) if rng.random() < 0.8 else raw for raw in valid]
    lines += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 60))) for _ in range(300)]
    rng.shuffle(lines)
    part = parse_lines(lines, "f", MONTH, salt="s")
    assert part.raw_logs.height + part.rejects.height == len(lines)
    outcomes = part.raw_logs["line_no"].to_list() + part.rejects["line_no"].to_list()
    assert sorted(outcomes) == list(range(1, len(lines) + 1))
    assert set(part.rejects["reason"].unique()) <= set(REJECT_REASONS)
    assert not part.rejects.filter(pl.col("detail").str.starts_with("internal error")).height
    assert part.raw_logs["event_id"].is_unique().all()
    assert part.rejects.schema == pl.Schema(RAW_REJECTS_SCHEMA)
    assert part.rejects["reason"].n_unique() >= 12  # the mutator reaches many checks


def _write_month(root: Path, events_by_file: dict[str, list[bytes]]) -> None:
    for name, lines in events_by_file.items():
        path = root / MONTH / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = b"\n".join(lines) + b"\n"
        if name.endswith(".gz"):
            data = gzip.compress(data)
        if name.endswith(".parquet"):  # nested fields as JSON strings, as the contract allows
            records = [orjson.loads(x) for x in lines]
            pl.DataFrame(
                [
                    {
                        k: orjson.dumps(v).decode() if k in ("state", "states", "models") else v
                        for k, v in r.items()
                    }
                    for r in records
                ]
            ).write_parquet(path)
        else:
            path.write_bytes(data)


def test_month_listing_skips_hidden_truth_and_other_files(tmp_path: Path) -> None:
    for rel in (
        "a.jsonl",
        "b.jsonl.gz",
        "c.json",
        "d.parquet",
        "day-02/e.jsonl",
        "notes.txt",
        ".hidden.jsonl",
        "_truth/battles.parquet",
        "x.jsonl.tmp",
    ):
        (tmp_path / MONTH / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / MONTH / rel).write_bytes(b"")
    found = [
        Path(p).relative_to(tmp_path / MONTH).as_posix()
        for p in list_month_files(str(tmp_path), MONTH)
    ]
    assert found == ["a.jsonl", "b.jsonl.gz", "c.json", "d.parquet", "day-02/e.jsonl"]
    assert list_month_files(str(tmp_path), "2023-01") == []
    with pytest.raises(ValueError):
        list_month_files(str(tmp_path), "May 2024")


def test_gz_parquet_and_cross_file_duplicates(tmp_path: Path) -> None:
    rows = [chat(f"e-{i}", ip=f"10.0.0.{i}") for i in range(5)]
    chats = [line(e) for e in rows]
    votes = [line(vote(f"v-{i}", tstamp=MAY_3 + i)) for i in range(3)]  # one tstamp type per column
    _write_month(
        tmp_path,
        {
            "a.jsonl": chats[:3] + [b"not json"],
            "b.jsonl.gz": chats[3:] + [chats[0]] + [b""],  # e-0 again: a cross-file duplicate
            "c.parquet": votes + [line(chat("e-9"))],
        },
    )
    parsed = parse_month(str(tmp_path), MONTH, salt="s", known_models=None)
    assert parsed.lines_read == 4 + 4 + 4 == parsed.raw_logs.height + parsed.rejects.height
    assert parsed.raw_logs["event_id"].to_list() == [
        "e-0",
        "e-1",
        "e-2",
        "e-3",
        "e-4",
        "v-0",
        "v-1",
        "v-2",
        "e-9",
    ]
    assert parsed.rejects.select("source_file", "line_no", "reason").rows() == [
        ("2024-05/a.jsonl", 4, "invalid_json"),
        ("2024-05/b.jsonl.gz", 3, "duplicate_event_id"),
        ("2024-05/b.jsonl.gz", 4, "empty_line"),
    ]
    assert orjson.loads(parsed.rejects["raw"][1])["event_id"] == "e-0"
    assert {(f.source_file, f.lines_read, f.accepted) for f in parsed.files} == {
        ("2024-05/a.jsonl", 4, 3),
        ("2024-05/b.jsonl.gz", 4, 2),
        ("2024-05/c.parquet", 4, 4),
    }
    pq_votes = parsed.raw_logs.filter(pl.col("source_file") == "2024-05/c.parquet")
    assert pq_votes["line_no"].to_list() == [1, 2, 3, 4]
    assert pq_votes["messages_b"][0].to_list()[0]["images"] == [IMG]
    # two worker processes give the same frames (and find the same cross-file duplicate)
    pooled = parse_month(str(tmp_path), MONTH, salt="s", known_models=None, workers=2)
    assert pooled.raw_logs.equals(parsed.raw_logs)
    assert pooled.rejects.equals(parsed.rejects)


def test_line_endings_bom_and_unreadable_files(tmp_path: Path) -> None:
    folder = tmp_path / MONTH
    folder.mkdir()
    bom = b"\xef\xbb\xbf"
    (folder / "a.jsonl").write_bytes(
        bom + line(chat("a")) + b"\r\n" + line(chat("b")) + b"\r\n\r\n"
    )
    parsed = parse_month(str(tmp_path), MONTH, salt="s", known_models=None)
    assert parsed.raw_logs["event_id"].to_list() == ["a", "b"]
    assert parsed.rejects.select("line_no", "reason").rows() == [(3, "empty_line")]
    # a corrupt Parquet file has no lines to account for: the month stops, naming the file
    # (a truncated gzip keeps its lines before the break: test_bad_input.py)
    (folder / "c.parquet").write_bytes(b"PAR1 not really parquet")
    with pytest.raises(UnreadableFileError, match=r"c\.parquet"):
        parse_month(str(tmp_path), MONTH, salt="s", known_models=None)


def test_chunked_parts_equal_the_whole(tmp_path: Path) -> None:
    lines = [line(chat(f"e-{i % 450}")) if i % 7 else b"{}" for i in range(1000)]
    _write_month(tmp_path, {"a.jsonl": lines[:600], "b.jsonl": lines[600:]})
    parts = list(
        iter_parsed_files(str(tmp_path), MONTH, salt="s", known_models=None, chunk_lines=128)
    )
    assert len(parts) > 8 and all(p.lines_read <= 128 + 1 for p in parts[:-1])
    whole = parse_month(str(tmp_path), MONTH, salt="s", known_models=None)
    assert pl.concat([p.raw_logs for p in parts]).equals(whole.raw_logs)
    assert pl.concat([p.rejects for p in parts]).equals(whole.rejects)
    pooled = list(
        iter_parsed_files(
            str(tmp_path), MONTH, salt="s", known_models=None, chunk_lines=128, workers=2
        )
    )
    assert [p.lines_read for p in pooled] == [p.lines_read for p in parts]
    assert pl.concat([p.rejects for p in pooled]).equals(whole.rejects)  # b's ids repeat a's
    valid_ids = [i % 450 for i in range(1000) if i % 7]
    assert whole.reason_counts()["duplicate_event_id"] == len(valid_ids) - len(set(valid_ids))
    assert whole.reason_counts()["missing_type"] == 1000 - len(valid_ids)


def test_cli_writes_both_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write_month(tmp_path / "raw", {"a.jsonl": [line(chat()), line(vote()), b"[]"]})
    out = tmp_path / "out"
    argv = ["ingest", str(tmp_path / "raw"), "--month", MONTH, "--out", str(out), "--salt", "s"]
    assert cli_main(argv) == 0
    # the same month step as the raw_logs asset: the lake layout <asset>/<month>.parquet
    logs = pl.read_parquet(out / "raw_logs" / f"{MONTH}.parquet")
    rejects = pl.read_parquet(out / "raw_rejects" / f"{MONTH}.parquet")
    assert logs.height == 2 and logs.schema == pl.Schema(RAW_LOGS_SCHEMA)
    assert rejects["reason"].to_list() == ["not_an_object"]
    printed = capsys.readouterr().out
    assert "not_an_object" in printed and "3 lines" in printed
    assert not list((out / "raw_logs" / "_tmp").iterdir())  # nothing left in flight


def test_simulated_month_rejects_exactly_the_planted_lines(tmp_path: Path) -> None:
    from arena_assets.simulator import api as simulator
    from arena_assets.simulator.config import WorldConfig
    from arena_assets.simulator.truth import load_truth

    summary = simulator.simulate_months(
        tmp_path, [MONTH], 1500, seed=3, config=WorldConfig(malformed_rate=0.03), compress=True
    )
    parsed = parse_month(
        str(tmp_path), MONTH, salt="s", known_models=load_model_registry(str(tmp_path))
    )
    planted = load_truth(tmp_path)["malformed"]
    assert parsed.lines_read == summary.events + summary.malformed
    assert parsed.rejects.height == planted.height == summary.malformed
    got = parsed.rejects.join(planted, on=["source_file", "line_no"], how="left")
    assert got.filter(pl.col("reason") != pl.col("expected_reason")).height == 0, (
        got.filter(pl.col("reason") != pl.col("expected_reason"))
        .select("kind", "reason", "detail")
        .rows()
    )
    # every reason a native log can carry, except the 1 MB lines the simulator does not plant
    # (and the extra kinds, which the simulator plants only when asked:
    # simulator.malformed.EXTRA_MALFORMED_KINDS, test_bad_input.py)
    assert set(planted["expected_reason"]) == set(REJECT_REASONS) - {
        "unparseable_record",
        "line_too_long",
        "truncated_file",
        "models_mismatch",
        "shared_conv_id",
        "duplicate_key",
        "no_user_turn",
        "forgotten_user",
    }  # the last two: hand-written lines only, not planted


def test_any_fsspec_url_works_like_a_folder() -> None:
    # fsspec's in-memory filesystem stands in for a remote one (same non-local code path
    # as s3://: protocol kept in URLs, relative source_file names, compression inferred)
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"memory://ingest-test-{random.Random().getrandbits(32):x}"
    fs.pipe(f"{root}/{MONTH}/a.jsonl.gz", gzip.compress(line(chat()) + b"\n" + line(vote())))
    fs.pipe(f"{root}/{MONTH}/_truth/t.jsonl", line(chat("hidden")))
    fs.pipe(f"{root}/models.json", orjson.dumps(["model-x"]))
    assert list_month_files(root, MONTH, storage_options={}) == [
        f"{root.replace('://', ':///')}/{MONTH}/a.jsonl.gz"
    ]
    known = load_model_registry(root)
    parsed = parse_month(root, MONTH, salt="s", known_models=known, storage_options={})
    assert parsed.raw_logs.select("source_file", "event_id").rows() == [
        (f"{MONTH}/a.jsonl.gz", "e-1")
    ]
    assert parsed.rejects["reason"].to_list() == ["unknown_model"]
