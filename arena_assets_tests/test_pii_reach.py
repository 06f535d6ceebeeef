"""The scan bound of `pii_reach`: for every regex the detectors scan with, the matches that
start before a point, found scanning only up to `scan_end`, are exactly the whole text's.
Texts are hand-built and seeded random mixes of the things PII and its look-alikes are
made of; a bound too short would show as a missing or a shorter match."""

from __future__ import annotations

import random
import re

import pytest

from arena_assets.clean.pii_detect import PATTERNS
from arena_assets.clean.pii_reach import matches_before, scan_end

PIECES = [
    "jane.roe@example.org",
    "x" * 300 + "@mail.example.com",
    "sam dot lee at proton dot me",
    "+44 20 7946 0958",
    "4599 5872 4361 0016",
    "775-3905",
    "a490:1c2f:0b3e:77d1:9e02:44aa:3f10:cdd2",
    "2a01:4f8::1",
    "86.147.22.190",
    "DE62 3704 0044 0532 0130 01",
    "Lindenstraße 14, 50674 Köln",
    "42 Wallaby Way, Sydney NSW 2000",
    "東京都新宿区西新宿2丁目8-1",
    "ул. Ленина, д. 15",
    "passport number 533380006",
    "api_key = 'Xa81kLmN20pQrStUv9wYz3'",
    "sk-proj-Xa81kLmN20pQrStUv9wYz3Bc4De5Fg",
    "postgres://admin:Tr0ub4dor3x@db.internal:5432/app",
    "RSSMRA85T10A562S",
]
FILLERS = [" ", "  ", "\n", ", ", ". ", "-", ":", "x", "é", "请解释一下", "0", "1 2 3 ", "w" * 50]


def _text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randrange(5, 60)):
        parts.append(rng.choice(PIECES) if rng.random() < 0.4 else rng.choice(FILLERS))
        if rng.random() < 0.1:
            parts.append(rng.choice(FILLERS) * rng.randrange(10, 400))
    return "".join(parts)


def _spans(matches) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in matches]


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:30])
def test_a_bounded_scan_finds_the_whole_texts_matches_before_the_stop(
    pattern: re.Pattern,
) -> None:
    rng = random.Random(20240503)
    for _ in range(150):
        text = _text(rng)
        stop = rng.randrange(0, len(text) + 1)
        whole = [s for s in _spans(pattern.finditer(text)) if s[0] < stop]
        assert _spans(matches_before(pattern, text, stop)) == whole, (text, stop)
        assert stop <= scan_end(pattern, text, stop) <= len(text) or stop > len(text)


def test_the_bound_follows_a_match_that_runs_far_past_the_stop() -> None:
    email = next(p for p in PATTERNS if "@" in p.pattern and "at|arroba" not in p.pattern)
    text = "w " * 100 + "x" * 50_000 + "@example.org tail " + "y " * 50_000
    (found,) = matches_before(email, text, 300)
    assert found.start() == 200 and text[found.end() - 11 : found.end()] == "example.org"
    assert scan_end(email, text, 300) < len(text)  # and stops soon after it


def test_the_bound_is_short_in_prose() -> None:
    prose = "The quick brown fox, who jumps over the lazy dog; " * 4000
    ends = [scan_end(p, prose, 2000) for p in PATTERNS]
    assert max(ends) < 20_000 < len(prose), ends
