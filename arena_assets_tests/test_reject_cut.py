"""Rejected lines are redacted whole and only then cut to REJECT_RAW_CHARS: no part of a
value that crosses the cut may survive, also when the value is glued to the text before
it. The stored text must equal the whole line's redaction cut to length, although only
the candidates that reach the kept part are validated. Lines are hand-built; the random
placements take a seed."""

from __future__ import annotations

import json
import random

import pytest

from arena_assets.clean.pii import scrub_raw_text
from arena_assets.clean.rejects import blank_reject, redact_rejects, scrub_reject
from arena_assets.contracts import PII_PLACEHOLDERS, REJECT_RAW_CHARS
from arena_assets.ingest import parse_lines

PHONE = "+44 20 7946 0958"
UNLISTED_PHONE = "+44 20 5555 0199"  # possible, not in service: still a number to redact
CARD = "4599 5872 4361 0016"
HEAD = '{"event_id": "e-1", "type": "chat", "ip": "81.2.69.160", "content": "'


def _stored(content: str) -> str:
    """What raw_rejects keeps of a line holding ``content``, through ingest itself."""
    line = (HEAD + content).encode()  # no closing quote: invalid JSON, rejected
    part = parse_lines([line], "2024-05/x.jsonl", "2024-05", salt="s")
    assert part.rejects["reason"][0] == "invalid_json"
    return part.rejects["raw"][0]


@pytest.mark.parametrize("pad", ["x", ".", "-", "é", "0"])
@pytest.mark.parametrize(("value", "kind"), [(PHONE, "phone"), (UNLISTED_PHONE, "phone")])
def test_a_phone_glued_to_padding_across_the_cut_leaves_no_fragment(
    pad: str, value: str, kind: str
) -> None:
    _check_no_fragment(pad, value, kind)


@pytest.mark.parametrize("pad", ["x", ".", "-", "é"])
def test_a_card_glued_to_padding_across_the_cut_leaves_no_fragment(pad: str) -> None:
    _check_no_fragment(pad, CARD, "card_number")


def _check_no_fragment(pad: str, value: str, kind: str) -> None:
    placeholder = PII_PLACEHOLDERS[kind]
    room = REJECT_RAW_CHARS - len(HEAD.replace("81.2.69.160", "<USER>"))
    for inside in range(1, len(value) + 1):  # how many of the value's characters lie before the cut
        raw = _stored(pad * (room - inside) + value + " then more text" + pad * 30_000)
        assert len(raw) == REJECT_RAW_CHARS
        tail = raw.split('"content": "', 1)[1].lstrip(pad)
        # the placeholder, or as much of it as fits, then the text after the value
        assert tail[: len(placeholder)] == placeholder[: len(tail)], (inside, tail)
        assert not any(c.isdigit() for c in tail), (inside, tail)


def test_the_stored_prefix_equals_the_whole_line_redaction_cut_to_length() -> None:
    """Values of every type placed across the cut, glued or spaced, behind JSON escapes or
    not, followed by long tails: the kept text is the whole line's redaction, cut."""
    rng = random.Random(20240503)
    values = [
        PHONE,
        CARD,
        "jane.roe@example.org",
        "a490:1c2f:0b3e:77d1:9e02:44aa:3f10:cdd2",
        "86.147.22.190",
        "call me at 775-3905",
        "Lindenstraße 14, 50674 Köln",
        "DE62 3704 0044 0532 0130 01",
        "536-22-8871",
        "sk-proj-Xa81kLmN20pQrStUv9wYz3Bc4De5Fg",
    ]
    pads = ["x", " ", "a ", ".", "é", "\n", "0", "ab1 "]
    for _ in range(120):
        value, pad = rng.choice(values), rng.choice(pads)
        lead = REJECT_RAW_CHARS - 40 + rng.randrange(-40, 40)
        content = (pad * lead)[:lead] + value + rng.choice(["", " ", "xyz"])
        content += rng.choice(pads) * rng.randrange(0, 40_000)
        line = '{"type": "chat", "text": ' + json.dumps(content, ensure_ascii=rng.random() < 0.5)
        _, raw, _ = scrub_reject(line, "line_too_long")
        _, blanked, _ = blank_reject(line, "")
        assert raw == scrub_raw_text(blanked)[:REJECT_RAW_CHARS], (value, pad)
        assert raw == redact_rejects([""], [blanked])[1][0]


def test_a_candidate_longer_than_any_window_is_judged_whole() -> None:
    """An e-mail whose local part runs 30,000 characters from before the cut: only the
    whole line shows its "@", so a redaction of any shorter window would keep its start."""
    content = "w " * 900 + "x" * 30_000 + "@example.org and more"
    raw = _stored(content)
    assert raw.endswith(" <EMAIL> and more") and "xxx" not in raw


def test_spans_merged_across_the_cut_are_as_in_the_whole_line() -> None:
    """An address that starts before the cut and a phone number after it, overlapping:
    the whole line merges them into one span, and so does the stored prefix."""
    lead = REJECT_RAW_CHARS - len(HEAD) - 8
    line = HEAD + "w" * lead + " Lindenstraße 14, 50674 Köln, Tel. +49 221 1234567 end"
    _, raw, _ = scrub_reject(line, "")
    _, blanked, _ = blank_reject(line, "")
    assert "Linden" not in raw and raw.endswith(
        " <STREET_ADDRESS>"[: len(raw) - raw.rindex("w") - 1]
    )
    assert raw == scrub_raw_text(blanked)[:REJECT_RAW_CHARS]
