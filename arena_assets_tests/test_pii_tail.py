"""The PII tail, hand-written (no simulator): the formats of independently written corpora
that the patterns must catch (IPv6 written in full with no label, 7-digit local numbers
told by the words around them, numbers glued to the text before them), their look-alikes
that they must leave alone, passports, and PII inside the raw text of rejected lines,
where JSON escapes hide it from the patterns."""

from __future__ import annotations

import json

import pytest

from arena_assets.clean.pii import find_pii, redact_text
from arena_assets.clean.pii_check import find_raw_pii
from arena_assets.clean.pii_json import redact_escaped, unescaped_view
from arena_assets.ingest import parse_lines


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ("Karte No.4736150721484000 belasten", "4736150721484000", "card_number"),
        ("card nr.4532015112830366 declined", "4532015112830366", "card_number"),
        (
            "IPv6:2a02:0810:0d40:2b00:0000:0000:0000:0001",
            "2a02:0810:0d40:2b00:0000:0000:0000:0001",
            "ip_address",
        ),
        (
            "addr:2001:4860:4860:0000:0000:0000:0000:8888 flaps",
            "2001:4860:4860:0000:0000:0000:0000:8888",
            "ip_address",
        ),
        # written in full with no label word, in a range IANA keeps reserved
        (
            "My server at a490:1c2f:0b3e:77d1:9e02:44aa:3f10:cdd2",
            "a490:1c2f:0b3e:77d1:9e02:44aa:3f10:cdd2",
            "ip_address",
        ),
        (
            "ip:c2d9:4f81:07ae:b3c6:9d25:e014:6f7a:82b3",
            "c2d9:4f81:07ae:b3c6:9d25:e014:6f7a:82b3",
            "ip_address",
        ),
        ("Is 775-3905 a scam number?", "775-3905", "phone"),  # the phone word after it
        ("Who owns 629-4417? They keep texting me.", "629-4417", "phone"),
        ("Мне звонили с 775-3905, это мошенники?", "775-3905", "phone"),
        ("Is 775-3905 part of a scam?", "775-3905", "phone"),  # "part": no id word here
        ("WhatsApp+44 20 7946 0958 is my work line", "+44 20 7946 0958", "phone"),  # glued
        ("pay with card4024 0071 2239 1021 tonight", "4024 0071 2239 1021", "card_number"),
        ("call me at 538-2701 tonight", "538-2701", "phone"),
        ("my number is 744.3390", "744.3390", "phone"),
        ("Tel.030123456", "030123456", "phone"),
        ("passport number 533380006", "533380006", "national_id"),
        ("Reisepass: C01X00T47", "C01X00T47", "national_id"),
    ],
)
def test_tail_formats_are_redacted(text: str, value: str, kind: str) -> None:
    spans = find_pii(text)
    start = text.index(value)
    assert [(k, text[s:e]) for k, s, e in spans] == [(kind, value)], spans
    assert start == spans[0][1]


@pytest.mark.parametrize(
    "text",
    [
        "Sort ascending: 42 17 8 99 23",
        "my numbers: 42 17 8 99 23",
        "order No.12345678 shipped",
        "Artikel Nr.4006381333931",  # an EAN-13 after Nr.
        "a 0:1:2:3:4:5:6:7:8 hex run",
        "RFC example 2001:0db8:0000:0000:0000:ff00:0042:8329",  # documentation range, kept on purpose
        "passport photo size 35x45 mm",
        "pi is 3.1415926",
        # 3-4 digit groups that are no local number: arithmetic, order numbers, postcodes
        "What is 775-3905?",
        "Is 775-3905 a negative number?",
        "Your order number is 775-3905",
        "Call the store about order 392-6618",
        "Bestellnummer 483-2291",
        "Номер заказа 356-9018, где посылка?",
        "郵便番号 150-0002",
        "ZIP code 90210-3301",
        "The speed of light is 299 792 458 m/s",
        # colon-joined hex that is no address: bytes, a netmask, loopback written in full
        "WWN 50:01:43:80:12:34:56:78 of the disk",
        "MASK = ffff:ffff:ffff:ffff:0000:0000:0000:0000",
        "loopback 0000:0000:0000:0000:0000:0000:0000:0001",
        "std::chrono::seconds and a::b::c::d",
        "the RFC 9637 example 3fff:0:0:0:0:0:0:1",
    ],
)
def test_decoys_stay(text: str) -> None:
    assert find_pii(text) == []


@pytest.mark.parametrize(
    "text", ["RFC 3849: 2001:db8:85a3:0:0:8a2e:370:7334", "RFC 9637: 3fff:0:0:0:0:0:0:1"]
)
def test_documentation_ranges_stay_for_the_redactor_and_the_scanner_alike(text: str) -> None:
    # assigned to nobody; were the scanner to flag what the redactor keeps, the blocking
    # no_raw_pii check would fail on every conversation that quotes an RFC example
    assert find_pii(text) == [] and find_raw_pii(text) == []


def test_unescaped_view_maps_back_to_raw_characters() -> None:
    raw = r'"Stra\u00dfe 5 \ud83d\ude00\n\"x\" \q"'
    text, starts = unescaped_view(raw)
    assert text == '"Straße 5 \U0001f600\n"x" \\q"'
    assert [raw[starts[i] : starts[i + 1]] for i in range(len(text))][4:7] == ["a", r"\u00df", "e"]
    assert starts[-1] == len(raw)
    spans = [("street_address", text.index("Stra"), text.index(" \U0001f600"))]
    assert (
        redact_escaped(raw, (text, starts), spans) == r'"<STREET_ADDRESS> \ud83d\ude00\n\"x\" \q"'
    )


@pytest.mark.parametrize(
    ("content", "secret"),
    [
        ("Call me:\n07700 900123 thanks", "07700 900123"),  # UK mobile after a newline escape
        ("card\n4111 1111 1111 1111 exp 12/26", "4111 1111 1111 1111"),  # spaced Visa
        ("Ich wohne Hauptstraße 5, 10115 Berlin", "10115 Berlin"),  # \u00df in the raw line
        ("tel:\t+44 20 7946 0958", "7946 0958"),
    ],
)
def test_pii_inside_rejected_lines(content: str, secret: str) -> None:
    event = {
        "event_id": "e-1",
        "type": "chat",
        "tstamp": "2024-05-03T10:00:00",
        "ip": "81.2.69.160",
        "state": {
            "conv_id": "c",
            "model_name": "m",
            "messages": [
                {"role": "user", "content": content},
                {"role": "assistant", "content": "ok"},
            ],
        },
    }
    broken = json.dumps(event, ensure_ascii=True)[:-2]  # cut: invalid JSON, ASCII escapes
    part = parse_lines([broken.encode()], "2024-05/x.jsonl", "2024-05", salt="s")
    raw = part.rejects["raw"][0]
    assert part.rejects["reason"][0] == "invalid_json"
    assert secret not in raw and json.dumps(secret)[1:-1] not in raw
    assert "81.2.69.160" not in raw and '"role": "user"' in raw  # the JSON around it stays


def test_conversation_text_is_not_unescaped() -> None:
    # a literal backslash-n in a message is text: the cleaning stage redacts text as it is
    assert redact_text(r"see C:\new\4111 1111 1111 1111")[0].endswith("<CARD_NUMBER>")
