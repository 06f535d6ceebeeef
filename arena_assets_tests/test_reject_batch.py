"""Rejected lines are scrubbed in two halves for speed (identities per line, PII once per
part): the result must equal the one-at-a-time ``scrub_reject`` on every line, including
PII past the stored length, invalid UTF-8, empty details and identity values quoted in
the detail. Lines are hand-written."""

from __future__ import annotations

from arena_assets.clean.rejects import blank_reject_line, redact_rejects, scrub_reject_line
from arena_assets.contracts import REJECT_RAW_CHARS
from arena_assets.ingest import parse_lines

LONG = 10 * REJECT_RAW_CHARS

IP = "81.2.69.160"
EMAIL = "jane.roe@example.org"
PHONE = "+1 415 555 0199"

LINES = [
    (
        b'{"type":"chat","ip":"'
        + IP.encode()
        + b'","state":{"messages":"mail '
        + EMAIL.encode()
        + b'"}}',
        f"wrong_type: ip {IP} seen",
    ),
    (b'{"type":"chat","user_id":"u-12345","note":"call ' + PHONE.encode() + b'"', ""),
    (
        b'{"type":"upvote","text":"'
        + b"x" * (REJECT_RAW_CHARS - 10)
        + b" "
        + EMAIL.encode()
        + b'"}',
        "line_too_long",
    ),
    (b'\xff\xfe{"ip":"' + IP.encode() + b'"}', "byte 0: invalid start byte"),
    (b"", ""),
    (b'{"judge":"u-judge-99","content":"nothing personal"}', "missing_type"),
    # long: an e-mail across the kept length, a phone far past it (never kept)
    (
        b'{"type":"chat","ip":"'
        + IP.encode()
        + b'","text":"'
        + b"y " * (REJECT_RAW_CHARS // 2 - 30)
        + EMAIL.encode()
        + b" "
        + b"z " * LONG
        + PHONE.encode()
        + b'"}',
        "absurd_length",
    ),
]


def test_batched_scrub_equals_one_at_a_time() -> None:
    hashed = []
    halves = [blank_reject_line(raw, detail, lambda u: f"h({u})") for raw, detail in LINES]
    details, raws = redact_rejects([h[0] for h in halves], [h[1] for h in halves])
    for (raw, detail), (d, r, h) in zip(LINES, zip(details, raws, [h[2] for h in halves])):
        assert (d, r, h) == scrub_reject_line(raw, detail, lambda u: f"h({u})")
        hashed.append(h)
        assert len(r) <= REJECT_RAW_CHARS
        assert IP not in r and EMAIL not in r and IP not in d
    assert hashed[0] == f"h({IP})" and hashed[1] == "h(u-12345)" and hashed[4] is None
    assert hashed[6] == f"h({IP})" and "<EMAIL>" in raws[6] and len(raws[6]) == REJECT_RAW_CHARS


def test_a_value_straddling_the_kept_length_is_redacted_whole_however_long_the_line() -> None:
    for tail in (0, 10, 10 * LONG):
        text = ("w " * (REJECT_RAW_CHARS // 2 - 4) + EMAIL + " " + "q" * tail).encode()
        _detail, raw, _ = scrub_reject_line(text, "line_too_long")
        assert "<EMAIL>" in raw and "jane" not in raw and "example" not in raw
        assert raw == redact_rejects([""], [text.decode()])[1][0]


def test_parsed_rejects_hold_no_identity_or_pii() -> None:
    lines = [raw for raw, _ in LINES if raw]
    part = parse_lines(lines, "2024-05/x.jsonl", "2024-05", salt="s")
    assert part.raw_logs.height == 0 and part.rejects.height == len(lines)
    text = "\n".join(part.rejects["raw"].to_list() + part.rejects["detail"].to_list())
    for secret in (IP, EMAIL, PHONE, "u-12345", "u-judge-99"):
        assert secret not in text
    assert redact_rejects([], []) == ([], [])


def test_a_line_that_shrinks_under_redaction_never_keeps_half_a_value() -> None:
    """Placeholders are shorter than the values they replace: a line full of long e-mails
    shrinks, so the kept characters come from far past the first REJECT_RAW_CHARS of the
    line, here from inside an e-mail that starts 20,000 characters in."""
    long_mail = "a" * 980 + "@example.org"
    head = " ".join([long_mail] * 19) + " "
    pad = "w" * (10 * REJECT_RAW_CHARS - len(head) - len("mail jane.roe@exa"))
    text = head + pad + "mail " + EMAIL + " and more"
    _, raw, _ = scrub_reject_line(text.encode(), "line_too_long")
    assert "jane.roe" not in raw and "aaaa@" not in raw and raw.count("<EMAIL>") == 20
    assert raw == redact_rejects([""], [text])[1][0]
