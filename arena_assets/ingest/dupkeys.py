"""Duplicate JSON keys with conflicting values: rejected, never "last value wins".

orjson (the hot path's decoder) keeps the last of repeated keys silently, and so does
every fast JSON decoder; only a decoder with a per-object hook sees them. Running that
on every line would cost more than the whole parse, so a cheap prefilter decides which
lines need it:

1. ``text_keys``: the line's ``":`` and ``" :`` byte sequences (two C-level counts) is
   at least the number of keys written in it (a key is a string followed by a colon;
   a ``"`` inside a string is escaped, so ``\\":`` inside a text is the only other source,
   subtracted when the first comparison fails).
2. ``native_keys``: the keys orjson kept in the native event's known places (the event,
   its states, their messages) from ``len`` calls. If the text holds no more keys than
   the decoded object, no key was repeated: done (the common case, ~1 µs a line).
3. Otherwise ``all_keys`` counts every key of the decoded object (a recursive walk:
   other formats, extra nested fields); equal counts again mean no duplicate.
4. Only then does ``json.loads`` with an ``object_pairs_hook`` find the repeated key and
   compare its values. Repeats with equal values are harmless and accepted.

A key written with a space or newline before its colon other than one blank (``"a"\\n:``)
is not counted by step 1, so a duplicate on such a line could pass; no logging library
writes JSON that way.
"""

from __future__ import annotations

import json
from typing import Any


class DuplicateKey(ValueError):
    def __init__(self, key: str, values: list[Any]) -> None:
        super().__init__(key)
        self.key = key
        self.values = values


def text_keys(line: bytes) -> int:
    return line.count(b'":') + line.count(b'" :')


def _list_keys(items: Any) -> int:
    if type(items) is not list:
        return 0
    return sum(len(m) for m in items if type(m) is dict)


def native_keys(obj: dict) -> int:
    """Keys of the event, its states and their messages (the native format's layout)."""
    n = len(obj)
    state = obj.get("state")
    states = [state] if type(state) is dict else obj.get("states")
    if type(states) is list:
        for st in states:
            if type(st) is dict:
                n += len(st) + _list_keys(st.get("messages"))
    return n


def all_keys(value: Any) -> int:
    kind = type(value)
    if kind is dict:
        return len(value) + sum(all_keys(v) for v in value.values())
    if kind is list:
        return sum(all_keys(v) for v in value)
    return 0


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out and out[key] != value:
            raise DuplicateKey(key, [out[key], value])
        out[key] = value
    return out


def conflicting_key(line: bytes, obj: dict) -> DuplicateKey | None:
    """The first key repeated with different values in ``line`` (already decoded as ``obj``
    by orjson), or None; see the module doc for the cost."""
    written = text_keys(line)
    if written <= native_keys(obj):
        return None
    written -= line.count(b'\\":')
    if written <= all_keys(obj):
        return None
    try:
        json.loads(line, object_pairs_hook=_pairs_hook)
    except DuplicateKey as dup:
        return dup
    except ValueError:  # orjson accepted what json does not (or vice versa): no verdict
        return None
    return None
