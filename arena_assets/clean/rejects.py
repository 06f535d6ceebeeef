"""What ``raw_rejects`` may keep of a rejected line: scrubbed text, scrubbed detail, and the
salted hash of the user it belongs to (so that forgetting a user reaches their rejects).

A rejected line is by definition one the parser could not fully trust, so nothing about
it is assumed: the identity fields (``user_id``, ``ip``, ``judge``) are found in the
*text*, not in a decoded object, which also works on truncated or invalid JSON;
their keys are matched with or without JSON escapes (``"user\\u005fid"``, ``"\\u0069p"``,
any case) and their values of any JSON type (string, number, array, object, or a value
cut off by the end of the line) are blanked to ``"<USER>"``. The identity strings found
are also blanked wherever else they occur in the line or in the detail (an address
repeated inside a message, a wrong value quoted in the detail). Then the PII redaction
of the cleaning stage runs over the whole line, and only then is the line cut to
``REJECT_RAW_CHARS``: a value cut in half at the kept boundary would no longer match any
pattern ("+44 20 5" of a phone number, "4599 5872" of a card), so cutting first would let
its first half through.

Cost: the lines rejected as ``line_too_long`` / ``absurd_length`` run to hundreds of
kilobytes, often one message repeated, with thousands of PII candidates; validating
them all (``phonenumbers``, checksums) was most of the cost of a rejected line. Only
the first ``REJECT_RAW_CHARS`` are kept, so `arena_assets.clean.pii.scrub_raw_prefixes`
scans the whole line but validates only the candidates that can reach the kept part,
which gives exactly the whole line's redaction cut to length (the argument is in
`arena_assets.clean.pii_detect.spans_before`; `test_reject_batch.py` compares both on
values placed across the cut). This runs only on rejected lines (well under 1 % of real
traffic); the hot path of accepted lines never reaches it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import polars as pl

from arena_assets.clean.pii import scrub_raw_line, scrub_raw_prefixes, scrub_raw_text
from arena_assets.contracts import REJECT_RAW_CHARS

# the fields that name a user in the native format and the adapters' formats, in the
# order the validators prefer them (user_id, then judge, then ip); Copilot Arena's userId
# (keys match in any case, so "userid" is it)
IDENTITY_KEYS = ("user_id", "judge", "ip", "userid")
USER_PLACEHOLDER = '"<USER>"'
# identity strings shorter than this are not searched for elsewhere in the text: blanking
# every "7" of a line because a user id was 7 would destroy the line for nothing
MIN_LITERAL_CHARS = 4


def _escaped_char(char: str) -> str:
    # a key character is either itself or its \\uXXXX escape (hex digits in any case)
    return f"(?:{re.escape(char)}|\\\\u00{ord(char):02x})"


_KEY_ALTERNATIVES = "|".join("".join(_escaped_char(c) for c in key) for key in IDENTITY_KEYS)
IDENTITY_KEY = re.compile(rf'"(?P<key>{_KEY_ALTERNATIVES})"\s*:\s*', re.IGNORECASE)
_STRING_BODY = re.compile(r'"((?:[^"\\]|\\.)*)"?', re.DOTALL)
_SCALAR = re.compile(r"[^,}\]\s]*")
# one character per step (no nested quantifier): linear even when the string never closes
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _string_end(text: str, start: int) -> int:
    """End (exclusive) of the JSON string starting at ``start`` (a quote); end of text if open."""
    # a regex, not a loop over characters: a rejected line may be a megabyte long
    match = _STRING.match(text, start)
    return match.end() if match else len(text)


def value_end(text: str, start: int) -> int:
    """End (exclusive) of the JSON value starting at ``start``; the end of the text when the
    value is cut off (unclosed string, array or object)."""
    if start >= len(text):
        return start
    ch = text[start]
    if ch == '"':
        return _string_end(text, start)
    if ch in "[{":
        depth = 0
        i = start
        n = len(text)
        while i < n:
            ch = text[i]
            if ch == '"':
                i = _string_end(text, i)
                continue
            if ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return n
    match = _SCALAR.match(text, start)
    return match.end() if match else start


def _decode_key(raw: str) -> str:
    try:
        return json.loads(f'"{raw}"').lower()
    except ValueError:
        return raw.lower()


def _string_literals(value: str) -> list[str]:
    """The decoded strings inside a JSON value's text (the value itself when a scalar)."""
    found = []
    if value[:1] not in ('"', "[", "{"):
        return [value] if value else []
    for match in _STRING_BODY.finditer(value):
        try:
            found.append(json.loads(f'"{match.group(1)}"'))
        except ValueError:
            found.append(match.group(1))
    return found


def blank_identities(text: str) -> tuple[str, dict[str, list[str]]]:
    """``text`` with every identity field's value replaced by ``"<USER>"``, and the values
    found per field (decoded strings; numbers as written)."""
    found: dict[str, list[str]] = {}
    out: list[str] = []
    pos = 0
    for match in IDENTITY_KEY.finditer(text):
        if match.start() < pos:  # inside a value blanked already
            continue
        end = value_end(text, match.end())
        value = text[match.end() : end]
        found.setdefault(_decode_key(match.group("key")), []).extend(_string_literals(value))
        out.append(text[pos : match.end()])
        out.append(USER_PLACEHOLDER)
        pos = end
    if not found:
        return text, found
    out.append(text[pos:])
    return "".join(out), found


def _blank_literals(text: str, literals: set[str]) -> str:
    for literal in sorted(literals, key=len, reverse=True):
        if literal in text:
            text = text.replace(literal, "<USER>")
    return text


def user_of(found: dict[str, list[str]]) -> str | None:
    """The identity string ingest would hash (the first preferred field with a string)."""
    for key in IDENTITY_KEYS:
        for value in found.get(key, ()):
            if value:
                return value
    return None


def blank_reject(
    text: str, detail: str, hash_user: Callable[[str], str] | None = None
) -> tuple[str, str, str | None]:
    """The first half of :func:`scrub_reject`: (detail, text, user_hash) with the identity
    values blanked, not yet PII-redacted nor cut. Ingest collects these per part and
    redacts them all at once with :func:`redact_rejects` (one regex pass over a column
    instead of two polars calls per rejected line, measured at half the parse time of a
    month with 0.4 % junk lines)."""
    blanked, found = blank_identities(text)
    literals = {v for values in found.values() for v in values if len(v) >= MIN_LITERAL_CHARS}
    safe_detail = _blank_literals(detail, literals) if detail else detail
    user = user_of(found)
    return (
        safe_detail,
        _blank_literals(blanked, literals),
        (hash_user(user) if user is not None and hash_user else None),
    )


def redact_rejects(details: list[str], raws: list[str]) -> tuple[list[str], list[str]]:
    """The second half of :func:`scrub_reject` for many rejects: PII redaction of the
    blanked details (empty ones stay as they are) and of the whole texts, each text then
    cut to ``REJECT_RAW_CHARS``. Row-wise the same as :func:`scrub_reject`."""
    if not raws:
        return details, raws
    texts = pl.Series("text", details, dtype=pl.String).to_frame()
    done = texts.select(scrub_raw_line(pl.col("text"))).to_series().to_list()
    return (
        [d if not d else s for d, s in zip(details, done, strict=True)],
        scrub_raw_prefixes(raws, REJECT_RAW_CHARS),
    )


def scrub_reject(
    text: str, detail: str, hash_user: Callable[[str], str] | None = None
) -> tuple[str, str, str | None]:
    """(detail, raw, user_hash) of a rejected line's decoded text, safe to store.

    ``hash_user`` is ingest's salted hash (``Checker.user_hash``); without it the hash is
    None. ``raw`` is at most ``REJECT_RAW_CHARS`` characters.
    """
    safe_detail, blanked, user_hash = blank_reject(text, detail, hash_user)
    raw = scrub_raw_prefixes([blanked], REJECT_RAW_CHARS)[0]
    return (scrub_raw_text(safe_detail) if safe_detail else safe_detail), raw, user_hash


def blank_reject_line(
    line: bytes, detail: str, hash_user: Callable[[str], str] | None = None
) -> tuple[str, str, str | None]:
    """:func:`blank_reject` of raw bytes (decoded with replacement: invalid UTF-8 too)."""
    return blank_reject(line.decode("utf-8", "replace"), detail, hash_user)


def scrub_reject_line(
    line: bytes, detail: str, hash_user: Callable[[str], str] | None = None
) -> tuple[str, str, str | None]:
    """:func:`scrub_reject` of raw bytes (decoded with replacement: invalid UTF-8 too)."""
    return scrub_reject(line.decode("utf-8", "replace"), detail, hash_user)
