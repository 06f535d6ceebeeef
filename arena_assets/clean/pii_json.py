"""PII inside JSON text: the decoded view of an escaped string, and spans mapped back.

A rejected raw line is kept as text (``raw_rejects.raw``), so its messages are still JSON
escaped: ``Stra\u00dfe``, ``\n07700 900123``, ``\"4111 1111 1111 1111\"``. Patterns written
for text miss them (the ``n`` of ``\n`` glues onto the number, ``\u00df`` is no letter).
Redaction therefore runs on the *decoded* view and replaces, in the raw text, every raw
character that a detected span came from; the JSON around it stays as it was. Without
the decoded view, an independently written corpus leaks from rejected lines only (a UK
number, a spaced Visa number and a German street address: ``test_pii_tail.py``).
"""

from __future__ import annotations

import re

from arena_assets.contracts import PII_PLACEHOLDERS

# \uXXXX (a surrogate pair as one), \xNN (Python reprs in a reject's detail), \n, \", \\ ...
_ESCAPE = re.compile(
    r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
    r"|u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|(.))",
    re.DOTALL,
)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}

View = tuple[str, list[int]]


def _char(m: re.Match) -> str:
    high, low, code, byte, simple = m.groups()
    if high is not None:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
    if code is not None:
        value = int(code, 16)
        return "\ufffd" if 0xD800 <= value <= 0xDFFF else chr(value)  # a lone surrogate
    if byte is not None:
        return chr(int(byte, 16))
    return _SIMPLE.get(simple, m.group())


def unescaped_view(raw: str) -> View:
    """(decoded text, starts): ``starts[i]`` is where decoded character ``i`` begins in
    ``raw``, and ``starts[len(decoded)] == len(raw)``. An unknown escape (``\\q``) stays as
    its two characters."""
    pieces: list[str] = []
    starts: list[int] = []
    pos = 0
    for m in _ESCAPE.finditer(raw):
        if m.start() > pos:
            pieces.append(raw[pos : m.start()])
            starts.extend(range(pos, m.start()))
        char = _char(m)
        pieces.append(char)
        starts.extend([m.start()] if len(char) == 1 else range(m.start(), m.end()))
        pos = m.end()
    pieces.append(raw[pos:])
    starts.extend(range(pos, len(raw)))
    starts.append(len(raw))
    return "".join(pieces), starts


def redact_escaped(raw: str, view: View, spans: list[tuple[str, int, int]]) -> str:
    """``raw`` with the raw characters behind each decoded span replaced by its placeholder."""
    _, starts = view
    out: list[str] = []
    cursor = 0
    for kind, start, end in spans:
        lo, hi = starts[start], starts[end]
        if lo < cursor:
            continue
        out += [raw[cursor:lo], PII_PLACEHOLDERS[kind]]
        cursor = hi
    out.append(raw[cursor:])
    return "".join(out)
