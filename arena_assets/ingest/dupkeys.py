"""Duplicate JSON keys with conflicting values: rejected, never "last value wins".

orjson (the hot path's decoder) keeps the last of repeated keys silently, and so does
every fast JSON decoder; only a decoder with a per-object hook sees them. Running that
on every line would cost more than the whole parse, so a cheap prefilter decides which
lines need it:

1. The line's colons (one C-level count of a single byte, the cheapest scan there is)
   are at least the keys written in it: every key is followed by one. Step 2 below
   compares; a line whose texts hold colons too ("Note:", URLs, code) fails it and is
   compared again on ``text_keys``: its ``":`` byte pairs (a key is a string followed by
   a colon; a ``"`` inside a string is escaped, so ``\\":`` is the only other source and
   is subtracted).
2. ``native_keys``: the keys orjson kept in the native event's known places (the event,
   its states, their messages) from ``len`` calls. If the text holds no more keys than
   the decoded object, no key was repeated: done (the common case, ~1 µs a line).
3. Otherwise ``all_keys`` counts every key of the decoded object (a recursive walk:
   other formats, extra nested fields); equal counts again mean no duplicate.
4. Only then does ``json.loads`` with an ``object_pairs_hook`` find the repeated key and
   compare its values. Repeats with equal values are harmless and accepted.

A key written with whitespace before its colon (``"a" : 1``) is not counted by step 1
(a second count for that form cost as much as the first), so a duplicate of such a key
can pass; no JSON-lines writer we know of puts a space there (Python's ``json.dumps``
writes ``": "``, which is counted). Measured cost: ``benchmarks/bench_ingest_parse.py``
and the README.
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
    return line.count(b'":')


def _state_keys(state: Any) -> int:
    if type(state) is not dict:
        return 0
    msgs = state.get("messages")
    if type(msgs) is not list or not msgs:
        return len(state)
    if type(msgs[0]) is dict:
        try:  # OpenAI-style messages: len() in C over the list
            return len(state) + sum(map(len, msgs))
        except TypeError:  # a message that is neither dict nor list: count the dicts
            pass
    return len(state) + sum(len(m) for m in msgs if type(m) is dict)


def native_keys(obj: dict) -> int:
    """Keys of the event, its states and their messages (the native format's layout).

    A message list that starts with an object is counted with ``len`` on every item, so
    a FastChat ``[role, text]`` pair after it counts 2 keys it does not have: in such a
    mixed list a duplicate could hide (a mixed list is itself unusual enough to ignore).
    """
    state = obj.get("state")
    if state is not None:
        return len(obj) + _state_keys(state)
    states = obj.get("states")
    if type(states) is list:
        return len(obj) + sum(map(_state_keys, states))
    return len(obj)


def all_keys(value: Any) -> int:
    kind = type(value)
    if kind is dict:
        return len(value) + sum(all_keys(v) for v in value.values())
    if kind is list:
        return sum(all_keys(v) for v in value)
    return 0


def pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out and out[key] != value:
            raise DuplicateKey(key, [out[key], value])
        out[key] = value
    return out


def conflicting_key(line: bytes, obj: dict) -> DuplicateKey | None:
    """The first key repeated with different values in ``line`` (already decoded as ``obj``
    by orjson), or None; see the module doc for the cost."""
    declared = native_keys(obj)
    if line.count(b":") <= declared:
        return None
    written = text_keys(line) - line.count(b'\\":')
    if written <= declared or written <= all_keys(obj):
        return None
    try:
        json.loads(line, object_pairs_hook=pairs_hook)
    except DuplicateKey as dup:
        return dup
    except ValueError:  # orjson accepted what json does not (or vice versa): no verdict
        return None
    return None
