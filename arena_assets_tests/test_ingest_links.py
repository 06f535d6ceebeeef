"""Ingest of the optional served event, the identity hashes, and three bad-line kinds
(no user turn, a user turn of invisible characters, plain text named .gz).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import polars as pl
import pytest

from arena_assets.ingest import parse_lines, parse_month
from arena_assets.ingest.validate import Checker
from arena_assets_tests.test_ingest import MONTH, chat, line, vote

SERVED = {
    "event_id": "s-1",
    "type": "served",
    "tstamp": 1714694400.0 + 99,
    "user_id": "u-42",
    "anony": True,
    "models": ["model-x", "model-y"],
}


def test_served_event_is_a_row_without_conversations() -> None:
    part = parse_lines([line(SERVED), line(vote())], "2024-05/s.jsonl", MONTH, salt="s")
    assert part.rejects.height == 0
    served = part.raw_logs.filter(pl.col("type") == "served").row(0, named=True)
    assert (served["model_a"], served["model_b"]) == ("model-x", "model-y")
    assert served["conv_id_a"] is None and served["messages_a"] is None and served["anony"]
    # the voter is the same hash as on the user's votes
    assert (
        served["user_hash"] == part.raw_logs.filter(pl.col("type") == "rightvote")["user_hash"][0]
    )


@pytest.mark.parametrize(
    ("reason", "over"),
    [
        ("missing_state", {"models": None}),
        ("missing_state", {"models": ["model-x"]}),
        ("wrong_type", {"models": "model-x,model-y"}),
        ("missing_model", {"models": ["model-x", ""]}),
        ("wrong_type", {"models": ["model-x", 7]}),
        ("same_model_battle", {"models": ["model-x", "model-x"]}),
        ("wrong_type", {"device_id": 12}),
    ],
)
def test_bad_served_events_get_their_reason(reason: str, over: dict) -> None:
    event = {k: v for k, v in {**SERVED, **over}.items() if v is not None}
    part = parse_lines([line(event)], "2024-05/s.jsonl", MONTH, salt="s")
    assert part.rejects["reason"].to_list() == [reason]


def test_unknown_model_in_served_event(tmp_path: Path) -> None:
    month = tmp_path / MONTH
    month.mkdir()
    (month / "s.jsonl").write_bytes(line({**SERVED, "models": ["model-x", "nope"]}) + b"\n")
    parsed = parse_month(str(tmp_path), MONTH, salt="s", known_models={"model-x", "model-y"})
    assert parsed.rejects["reason"].to_list() == ["unknown_model"]


def test_identity_hashes() -> None:
    events = [
        chat("e-1", ip="81.2.69.160"),
        chat("e-2", ip="81.2.69.7", device_id="dev-A"),  # same /24
        chat("e-3", **{"ip": "2a02:810:d40:2b00::1", "user_id": "u-9"}),
        chat(
            "e-4", **{"ip": "2a02:810:d40:ffff::9", "user_id": "u-10", "device_id": "dev-A"}
        ),  # same /48
        chat("e-5", ip="not-an-address"),
        vote("v-1"),  # user_id only: no identity hash at all
    ]
    rows = parse_lines([line(e) for e in events], "2024-05/x.jsonl", MONTH, salt="s").raw_logs
    r = {row["event_id"]: row for row in rows.iter_rows(named=True)}
    check = Checker(MONTH, "s", None)
    assert r["e-1"]["ip_hash"] == r["e-1"]["user_hash"] == check.user_hash("81.2.69.160")
    assert r["e-1"]["net_hash"] == r["e-2"]["net_hash"] != r["e-3"]["net_hash"]
    assert r["e-3"]["net_hash"] == r["e-4"]["net_hash"]
    assert r["e-3"]["ip_hash"] == check.user_hash("2a02:810:d40:2b00::1") != r["e-3"]["user_hash"]
    assert r["e-2"]["device_hash"] == r["e-4"]["device_hash"] is not None
    assert r["e-5"]["ip_hash"] is not None and r["e-5"]["net_hash"] is None
    assert (r["v-1"]["ip_hash"], r["v-1"]["net_hash"], r["v-1"]["device_hash"]) == (
        None,
        None,
        None,
    )
    # a non-string ip beside a user_id was never read: still accepted, no link
    odd = parse_lines([line(vote("v-2", ip=12345))], "2024-05/x.jsonl", MONTH, salt="s").raw_logs
    assert odd.height == 1 and odd["ip_hash"][0] is None


@pytest.mark.parametrize(
    ("reason", "messages"),
    [
        (
            "no_user_turn",
            [{"role": "system", "content": "be brief"}, {"role": "assistant", "content": "Hi"}],
        ),
        ("no_user_turn", [["assistant", "Hello"]]),
        (
            "empty_content",
            [
                {"role": "user", "content": "\u200b\u200b\u200d"},
                {"role": "assistant", "content": "?"},
            ],
        ),
        (
            "empty_content",
            [
                {"role": "user", "content": " \ufeff\u2060 \u00ad"},
                {"role": "assistant", "content": "?"},
            ],
        ),
    ],
)
def test_decided_bad_conversations(reason: str, messages: list) -> None:
    event = chat()
    event["state"] = {**event["state"], "messages": messages}
    part = parse_lines([line(event)], "2024-05/x.jsonl", MONTH, salt="s")
    assert part.rejects["reason"].to_list() == [reason]
    # visible text next to a zero-width character is a prompt
    event["state"]["messages"] = [
        {"role": "user", "content": "\u200bhi"},
        {"role": "assistant", "content": "ok"},
    ]
    assert parse_lines([line(event)], "2024-05/x.jsonl", MONTH, salt="s").raw_logs.height == 1


def test_plain_text_named_gz_is_read_as_text(tmp_path: Path) -> None:
    month = tmp_path / MONTH
    month.mkdir()
    lines = [line(chat("e-1")), line(chat("e-2")), b"{broken"]
    (month / "plain.jsonl.gz").write_bytes(b"\n".join(lines) + b"\n")
    (month / "real.jsonl.gz").write_bytes(gzip.compress(line(chat("e-3")) + b"\n"))
    parsed = parse_month(str(tmp_path), MONTH, salt="s", known_models=None)
    assert sorted(parsed.raw_logs["event_id"].to_list()) == ["e-1", "e-2", "e-3"]
    assert parsed.rejects.select("source_file", "line_no", "reason").rows() == [
        (f"{MONTH}/plain.jsonl.gz", 3, "invalid_json")
    ]
    assert orjson.loads(lines[0])["event_id"] == "e-1"
