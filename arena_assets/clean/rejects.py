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
of the cleaning stage runs over the line's first ``REDACT_WINDOW_CHARS`` (ten times what is
kept), and only then is it cut to ``REJECT_RAW_CHARS``: a value cut in half at the kept
boundary would no longer match any pattern, so cutting there first would let its first
half through; the window leaves 18,000 characters of context after the kept part. Why a
window and not the whole line: the lines rejected as ``line_too_long`` / ``absurd_length``
run to hundreds of kilobytes, and redacting them whole was 15 % of a month's ingest CPU
(140 such lines in a 200,000-session month, profiled). The kept text differs from a
whole-line redaction only when one PII candidate runs on for more than the window's
18,000 characters of context (e.g. a 20,000-character "word" ending in an e-mail domain).
Placeholders are shorter than what they replace, so a window full of long values could
shrink until its cut end falls inside the kept part: when the redacted window is shorter
than ``REJECT_RAW_CHARS + WINDOW_MARGIN_CHARS``, the whole line is redacted instead.

Cost: this runs only on rejected lines (well under 1 % of real traffic); the hot path
of accepted lines never reaches it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import polars as pl

from arena_assets.clean.pii import scrub_raw_line, scrub_raw_text
from arena_assets.contracts import REJECT_RAW_CHARS

# what PII redaction reads of a rejected line (see the module doc)
REDACT_WINDOW_CHARS = 10 * REJECT_RAW_CHARS
# what must be left after the kept part of a redacted window, or the line is redacted whole
WINDOW_MARGIN_CHARS = 4 * REJECT_RAW_CHARS


def _window_kept_enough(raw: str, redacted_window: str) -> bool:
    """Whether the window's cut end stays far enough behind the kept part."""
    return (
        len(raw) <= REDACT_WINDOW_CHARS
        or len(redacted_window) >= REJECT_RAW_CHARS + WINDOW_MARGIN_CHARS
    )


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
    blanked details (empty ones stay as they are) and texts, then the cut of each text to
    ``REJECT_RAW_CHARS``. Row-wise the same as ``scrub_raw_text`` on each string."""
    if not raws:
        return details, raws
    window = [r[:REDACT_WINDOW_CHARS] for r in raws]
    texts = pl.Series("text", [*window, *details], dtype=pl.String)
    done = texts.to_frame().select(scrub_raw_line(pl.col("text"))).to_series().to_list()
    n = len(raws)
    kept = done[:n]
    whole = [
        i for i, (r, s) in enumerate(zip(raws, kept, strict=True)) if not _window_kept_enough(r, s)
    ]
    if whole:  # rare: windows that shrank too much under redaction (see the module doc)
        again = pl.Series("text", [raws[i] for i in whole], dtype=pl.String).to_frame()
        for i, s in zip(
            whole, again.select(scrub_raw_line(pl.col("text"))).to_series(), strict=True
        ):
            kept[i] = s
    return (
        [d if not d else s for d, s in zip(details, done[n:], strict=True)],
        [s[:REJECT_RAW_CHARS] for s in kept],
    )


def scrub_reject(
    text: str, detail: str, hash_user: Callable[[str], str] | None = None
) -> tuple[str, str, str | None]:
    """(detail, raw, user_hash) of a rejected line's decoded text, safe to store.

    ``hash_user`` is ingest's salted hash (``Checker.user_hash``); without it the hash is
    None. ``raw`` is at most ``REJECT_RAW_CHARS`` characters.
    """
    safe_detail, blanked, user_hash = blank_reject(text, detail, hash_user)
    raw = scrub_raw_text(blanked[:REDACT_WINDOW_CHARS])
    if not _window_kept_enough(blanked, raw):
        raw = scrub_raw_text(blanked)
    raw = raw[:REJECT_RAW_CHARS]
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
