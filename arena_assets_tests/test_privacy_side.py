"""Nothing raw leaks on the side: reject rows, Dagster metadata and
logs, and raw_logs retention. Lines are hand-written; the identity and PII values are
chosen so that a leak anywhere is a plain substring match."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import orjson
import polars as pl
import pytest

from arena_assets.clean.rejects import blank_identities, scrub_reject
from arena_assets.contracts import REJECT_RAW_CHARS
from arena_assets.ingest import parse_lines
from arena_assets.privacy.preview import safe_preview
from arena_assets.privacy.retention import apply_retention, oldest_kept_month
from arena_assets.storage import Lake
from arena_assets_tests.test_ingest import MONTH, chat, line

IP = "81.2.69.160"  # a routable address: documentation ranges (RFC 5737) are kept on purpose
USER = "u-leaky-4711"
EMAIL = "jane.roe@example.org"


def rejects_of(*lines: bytes) -> pl.DataFrame:
    return parse_lines(list(lines), "2024-05/x.jsonl", MONTH, salt="s").rejects


def accepted_hash(**identity: object) -> str:
    event = chat("ok", **identity)
    return parse_lines([line(event)], "2024-05/x.jsonl", MONTH, salt="s").raw_logs["user_hash"][0]


@pytest.mark.parametrize(
    "raw",
    [
        # escaped keys, any case of the hex digits
        b'{"type":"upvote","user\\u005fid":"' + USER.encode() + b'","event_id":"e"}',
        b'{"type":"upvote","user\\u005Fid":"' + USER.encode() + b'","event_id":"e"}',
        b'{"type":"upvote","\\u0069p":"' + IP.encode() + b'","event_id":"e"}',
        b'{"type":"upvote","\\u0069\\u0070" : "' + IP.encode() + b'","event_id":"e"}',
        # non-string values
        b'{"type":"chat","ip":19851100023,"event_id":"e"}',
        b'{"type":"chat","ip":["' + IP.encode() + b'", 1],"event_id":"e"}',
        b'{"type":"chat","user_id":{"id":"' + USER.encode() + b'","ip":"' + IP.encode() + b'"}}',
        # cut off inside the value (invalid JSON)
        b'{"type":"chat","event_id":"e","ip":"' + IP.encode(),
        b'{"type":"chat","event_id":"e","user_id":["' + USER.encode(),
    ],
)
def test_identity_fields_are_blanked_whatever_their_form(raw: bytes) -> None:
    rej = rejects_of(raw).row(0, named=True)
    for secret in (IP, USER, "19851100023"):
        assert secret not in rej["raw"] and secret not in rej["detail"]
    assert '"<USER>"' in rej["raw"]


def test_identity_values_are_blanked_elsewhere_in_the_line_and_in_the_detail() -> None:
    # the address repeated inside a message, and a detail that quotes an offending value
    event = chat(ip=IP, type=f"vote from {IP}")
    event["state"]["messages"][0]["content"] = f"my ip is {IP}, mail {EMAIL}"
    rej = rejects_of(line(event)).row(0, named=True)
    assert rej["reason"] == "unknown_type"
    assert IP not in rej["raw"] and IP not in rej["detail"] and EMAIL not in rej["raw"]
    bad_message = chat()
    bad_message["state"]["messages"][0] = f"write to {EMAIL} or call +44 20 7946 0958"
    rej = rejects_of(line(bad_message)).row(0, named=True)
    assert rej["reason"] == "bad_message"
    assert EMAIL not in rej["detail"] and "7946 0958" not in rej["detail"]


def test_a_value_cut_at_the_length_limit_does_not_survive() -> None:
    # put the e-mail across the REJECT_RAW_CHARS boundary of the kept text
    head = '{"type":"upvote","event_id":"e","ip":"' + IP + '","note":"'
    pad = "x" * (REJECT_RAW_CHARS - len(head) - len('"<USER>"') + len(f'"{IP}"') - 8)
    text = head + pad + " " + EMAIL + ' tail"}'
    # cut first, the first half of the address would be left: no pattern matches "jane.ro"
    assert EMAIL[:7] in (head + pad + " " + EMAIL)[: REJECT_RAW_CHARS + len(IP)]
    rej = rejects_of(text.encode()).row(0, named=True)
    assert len(rej["raw"]) <= REJECT_RAW_CHARS
    assert "jane" not in rej["raw"] and "example" not in rej["raw"]
    _detail, raw, _ = scrub_reject(text, "")
    assert raw == rej["raw"]


def test_rejects_carry_the_same_user_hash_as_accepted_rows() -> None:
    rejects = rejects_of(
        line(chat(ip=IP, type="upvote")),
        b'{"type":"chat","\\u0069p":"' + IP.encode() + b'",',
        line(chat(user_id=USER, ip=IP, type="share")),
        b"not json at all",
    )
    assert rejects["user_hash"].to_list() == [
        accepted_hash(ip=IP),
        accepted_hash(ip=IP),
        accepted_hash(user_id=USER),
        None,
    ]


def test_blank_identities_reports_what_it_found() -> None:
    text, found = blank_identities('{"IP": "1.2.3.4", "judge": "arena_user_1", "x": {"ip": 5}}')
    assert found == {"ip": ["1.2.3.4", "5"], "judge": ["arena_user_1"]}
    assert "1.2.3.4" not in text and "arena_user_1" not in text


# -- Dagster metadata and logs --------------------------------------------------------------
def test_previews_show_no_text_and_no_identity() -> None:
    frame = pl.DataFrame(
        {
            "event_id": ["e-1"],
            "user_hash": ["0123456789abcdef0123"],
            "ip": [IP],
            "messages": [[{"role": "user", "content": f"mail {EMAIL}"}]],
            "first_prompt": [f"reach me at {EMAIL} " + "y" * 500],
            "detail": [f"from {IP}"],
        }
    )
    preview = safe_preview(frame)
    assert preview.columns == ["event_id", "user_hash", "first_prompt", "detail"]
    text = str(preview.rows())
    assert EMAIL not in text and IP not in text and "0123456789abcdef0123" in text
    assert len(preview["first_prompt"][0]) <= 120


def test_dagster_events_and_logs_hold_no_raw_identity_or_text(arena_env: dict[str, str]) -> None:
    from arena_assets.definitions import defs as load_defs

    folder = Path(arena_env["ARENA_RAW_ROOT"]) / MONTH
    folder.mkdir(parents=True)
    good = chat("e-1", ip=IP)
    good["state"]["messages"][0]["content"] = f"hello, write to {EMAIL}"
    bad = chat("e-2", user_id=USER, type="share")
    bad["state"]["messages"][0]["content"] = f"{EMAIL} again"
    (folder / "a.jsonl").write_bytes(
        line(good) + b"\n" + line(bad) + b"\n" + b'{"\\u0069p":"' + IP.encode() + b'", "broken"\n'
    )
    (folder / "notes.txt").write_text("operator notes, not logs")
    instance = dg.DagsterInstance.ephemeral()
    defs = load_defs()
    result = dg.materialize(
        assets=list(defs.assets or []),
        resources=defs.resources,
        partition_key=MONTH,
        instance=instance,
        selection=dg.AssetSelection.assets("raw_logs", "raw_rejects", "conversations"),
    )
    assert result.success
    texts = [str(e) for e in result.all_events]
    texts += [
        orjson.dumps(r.event_log_entry.to_json()).decode()
        for r in instance.get_records_for_run(result.run_id).records
    ]
    blob = "\n".join(texts)
    assert "notes.txt" in blob  # the skipped file is named in the run's log / metadata
    # redacted text (a conversation's first prompt) may show; the raw values never
    for secret in (IP, USER, EMAIL):
        assert secret not in blob, secret


# -- retention -------------------------------------------------------------------------------
def test_retention_deletes_old_raw_logs_months_only(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    months = ["2023-10", "2023-11", "2023-12", "2024-01", "2024-02", "2024-03"]
    for month in months:
        lake.write("raw_logs", month, pl.DataFrame({"x": [1]}))
        lake.write("conversations", month, pl.DataFrame({"x": [1]}))
    assert oldest_kept_month(3, "2024-03") == "2024-01"
    assert oldest_kept_month(14, "2024-03") == "2023-02"
    assert oldest_kept_month(0, "2024-03") is None
    assert apply_retention(lake, 0, "2024-03").deleted == {}
    dry = apply_retention(lake, 3, "2024-03", dry_run=True)
    assert dry.deleted == {"raw_logs": months[:3]} and lake.months("raw_logs") == months
    done = apply_retention(lake, 3, "2024-03", protect="2023-11")
    assert done.deleted == {"raw_logs": ["2023-10", "2023-12"]}
    assert lake.months("raw_logs") == ["2023-11", "2024-01", "2024-02", "2024-03"]
    assert lake.months("conversations") == months  # only raw_logs has a retention
