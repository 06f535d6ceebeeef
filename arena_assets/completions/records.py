"""One Copilot Arena record -> what it says about a pair of completions (a ``Half``).

The layouts are the request bodies Copilot Arena's server (``lmarena/copilot-arena``,
``server/app.py``) persists, as its VS Code extension (``vscode/src/api.ts``) sends them:

- ``copilot_completion``: one completion shown, a ``/add_completion`` body (also what
  ``/create_pair`` uploads per completion since server v1.4): ``completionId,
  pairCompletionId`` (the other completion of the pair), ``pairIndex`` (0 = shown on top,
  accepted with Tab; 1 = below, Shift-Tab), ``userId, timestamp`` (epoch seconds, when the
  pair was created), ``model, latency`` (seconds), ``prefix_length, suffix_length,
  completion_length``, ``privacy``, ``fileType``, ``version`` and the code (``prefix,
  suffix, completion``, the model ``prompt``, ``full_prefix``, ``raw_completion``), which
  the server drops unless ``privacy`` is ``Research`` (``src/privacy.py``). No ``pairId``:
  Copilot Arena pairs these by ``completionId`` / ``pairCompletionId`` (its
  ``scores.process_completions``), and so do we: a pair's key is the top completion's id.
- ``copilot_outcome``: a ``/add_completion_outcome`` body, sent when the user accepts one:
  ``pairId, userId, acceptedIndex, version, privacy, fileType, repoUrl``, the two
  ``completionItems`` (each the completion as above plus ``pairIndex`` and the extension's
  ``username``) and the server's own ``timestamp`` (when the choice arrived). Joined with
  its completions through ``completionItems[i].completionId``.
- ``copilot_release`` (CSV): ``prefix, suffix, model_a, model_b, acceptedIndex,
  completion_a, completion_b`` (``data/copilot_arena_examples_v1.csv``): accepted pairs
  only, no user, no time, no latency.

A record that is neither is ``unknown_layout``; ``completionItems`` without
``acceptedIndex`` (a ``/create_pair`` response, which the server answers but does not
persist) is ``missing_accepted_index``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

from arena_assets.clean.rejects import value_end
from arena_assets.ingest.validate import Checker, Reject, short, tname

COPILOT_COMPLETION, COPILOT_OUTCOME, COPILOT_RELEASE = (
    "copilot_completion",
    "copilot_outcome",
    "copilot_release",
)
COPILOT_LOG = "copilot_log"  # a battle's source_format when built from server records
RELEASE_FIELDS = (
    "prefix",
    "suffix",
    "model_a",
    "model_b",
    "acceptedIndex",
    "completion_a",
    "completion_b",
)
KEEP_TEXT = "Research"
# Copilot Arena's PrivacySensitiveKeys (server/src/privacy.py) and the extension's identity
# fields beside userId (blanked by clean.rejects): never kept in a reject's text
SENSITIVE_KEYS = (
    "prompt",
    "prefix",
    "full_prefix",
    "suffix",
    "full_suffix",
    "raw_response",
    "raw_completion",
    "response",
    "completion",
    "code_to_edit",
    "user_input",
    "username",
    "repoUrl",
)
_SENSITIVE = re.compile(r'"(?:' + "|".join(map(re.escape, SENSITIVE_KEYS)) + r')"\s*:\s*')
REMOVED = '"<REMOVED>"'


def blank_sensitive(text: str) -> str:
    """``text`` (a record, valid JSON or not) with the value of every sensitive key
    replaced by ``"<REMOVED>"``; the keys stay, so the record's shape is still readable."""
    out, pos = [], 0
    for match in _SENSITIVE.finditer(text):
        if match.start() < pos:  # a key inside a value removed already
            continue
        out += [text[pos : match.end()], REMOVED]
        pos = value_end(text, match.end())
    return "".join(out) + text[pos:] if out else text


def detect(record: dict) -> str | None:
    if "completionItems" in record:
        return COPILOT_OUTCOME
    if "completionId" in record and "model" in record:
        return COPILOT_COMPLETION
    if "acceptedIndex" in record and "model_a" in record and "completion_a" in record:
        return COPILOT_RELEASE
    return None


@dataclass
class Half:
    """What one record says about a pair: ``kind`` top | bottom (a completion) | outcome."""

    kind: str
    key: str  # the pair: its top completion's completionId (release rows: a digest)
    fields: dict
    line_no: int
    source_file: str
    source_format: str


def _str(value: Any, what: str, reason: str) -> str:
    if type(value) is int:
        return str(value)
    if type(value) is not str or not value:
        raise Reject(
            reason,
            f"{what} is {'absent' if value in (None, '') else tname(value) + ' ' + short(value)}",
        )
    return value


def _number(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if type(value) not in (int, float) or value != value or value < 0:
        raise Reject("wrong_type", f"{what} is {short(value)}, expected a non-negative number")
    return float(value)


def _text(value: Any, what: str) -> str | None:
    if value is None or type(value) is str:
        return value
    raise Reject("wrong_type", f"{what} is {tname(value)}, expected string")


def _length(value: Any, what: str) -> int | None:
    if value is not None and (type(value) is not int or value < 0):
        raise Reject("wrong_type", f"{what} is {short(value)}, expected an integer >= 0")
    return value


def _index(value: Any, what: str) -> int:
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int or value not in (0, 1):
        raise Reject("bad_items", f"{what} is {short(value)}, expected 0 or 1")
    return value


def accepted_index(value: Any) -> int | None:
    """0 / 1, or None for "neither" (-1 or null). The release writes 0.0 / 1.0 (a float
    column through pandas); JSON writes integers."""
    if value is None:
        return None
    if type(value) is str:
        try:
            value = float(value.strip())
        except ValueError:
            raise Reject("bad_accepted_index", f"acceptedIndex is {short(value)}") from None
    if type(value) is float and value.is_integer():
        value = int(value)
    if value == -1 and type(value) is int:
        return None
    if type(value) is not int or value not in (0, 1):
        raise Reject("bad_accepted_index", f"acceptedIndex is {short(value)}")
    return value


def _side(checker: Checker, item: dict, where: str) -> dict:
    """The fields of one completion (a record or an outcome's item)."""
    model = _str(item.get("model"), f"{where}.model", "missing_model")
    checker.check_model(model)
    return {
        "model": model,
        "latency": _number(item.get("latency"), f"{where}.latency"),
        "completion": _text(item.get("completion"), f"{where}.completion"),
        "completion_length": _length(item.get("completion_length"), f"{where}.completion_length"),
        "completion_id": _str(item.get("completionId"), f"{where}.completionId", "missing_pair_id"),
    }


def _shared(checker: Checker, rec: dict, item: dict, where: str) -> dict:
    """What both completions of a pair share: the user, file, code around the cursor."""
    user = _str(rec.get("userId") or item.get("userId"), "userId", "missing_user")
    prefix, suffix = (
        _text(item.get("prefix"), f"{where}.prefix"),
        _text(item.get("suffix"), f"{where}.suffix"),
    )
    prefix_length = _length(item.get("prefix_length"), f"{where}.prefix_length")
    suffix_length = _length(item.get("suffix_length"), f"{where}.suffix_length")
    return {
        "user": checker.user_hash(user),
        "file_type": _text(rec.get("fileType") or item.get("fileType"), "fileType"),
        "privacy": _text(rec.get("privacy") or item.get("privacy"), "privacy"),
        "prefix": prefix,
        "suffix": suffix,
        "prefix_length": prefix_length
        if prefix_length is not None or prefix is None
        else len(prefix),
        "suffix_length": suffix_length
        if suffix_length is not None or suffix is None
        else len(suffix),
        "mid_span": rec.get("midSpan") if type(rec.get("midSpan")) is bool else None,
    }


def completion_half(checker: Checker, rec: dict) -> tuple[str, str, dict]:
    """(top | bottom, pair key, fields) of a ``/add_completion`` record."""
    index = _index(rec.get("pairIndex"), "pairIndex")
    side = _side(checker, rec, "completion")
    other = _str(rec.get("pairCompletionId"), "pairCompletionId", "missing_pair_id")
    if rec.get("timestamp") is None:
        raise Reject("missing_tstamp", "the completion has no timestamp")
    ts = checker.tstamp_us(rec["timestamp"])
    key = side["completion_id"] if index == 0 else other
    return (
        ("top", "bottom")[index],
        key,
        {
            **_shared(checker, rec, rec, "completion"),
            **side,
            "pair_completion_id": other,
            "tstamp": ts,
        },
    )


def outcome_half(checker: Checker, rec: dict) -> tuple[str, str, dict]:
    """(outcome, pair key, fields) of a ``/add_completion_outcome`` record."""
    if "acceptedIndex" not in rec:
        raise Reject(
            "missing_accepted_index",
            "completionItems without acceptedIndex: a /create_pair "
            "response, not a record Copilot Arena persists",
        )
    items = rec.get("completionItems")
    if type(items) is not list or len(items) != 2 or not all(type(i) is dict for i in items):
        raise Reject("bad_items", f"completionItems is {short(items)}, expected two objects")
    index = [
        _index(i.get("pairIndex", k), f"completionItems[{k}].pairIndex")
        for k, i in enumerate(items)
    ]
    if sorted(index) != [0, 1]:
        raise Reject("bad_items", f"pairIndex values {index}, expected 0 and 1")
    top, bottom = (items[index.index(0)], items[index.index(1)])
    a, b = (
        _side(checker, top, "completionItems[top]"),
        _side(checker, bottom, "completionItems[bottom]"),
    )
    if a["model"] == b["model"]:
        raise Reject("same_model_battle", f"both completions are {short(a['model'])}")
    accepted = accepted_index(rec.get("acceptedIndex"))
    # acceptedIndex points into completionItems; the side is that item's pairIndex
    accepted = None if accepted is None else index[accepted]
    if rec.get("timestamp") is not None:  # the server's, when the choice arrived
        ts = checker.tstamp_us(rec["timestamp"])
    else:
        times = [i.get("timestamp") for i in items if i.get("timestamp") is not None]
        if not times:
            raise Reject(
                "missing_tstamp", "neither the outcome nor its completions carry a timestamp"
            )
        ts = max(checker.tstamp_us(t) for t in times)
    fields = {
        **_shared(checker, rec, top, "completionItems[top]"),
        "tstamp": ts,
        "accepted_index": accepted,
        **{f"{k}_a": v for k, v in a.items()},
        **{f"{k}_b": v for k, v in b.items()},
    }
    return "outcome", a["completion_id"], fields


def release_half(checker: Checker, rec: dict) -> tuple[str, str, dict]:
    """A release row: an accepted pair, its text published (privacy Research)."""
    if None in rec:
        raise Reject("wrong_type", "the row has more fields than the header")
    missing = [k for k in RELEASE_FIELDS if rec.get(k) is None]
    if missing:
        raise Reject("bad_items", "missing " + ", ".join(missing))
    model_a = _str(rec["model_a"], "model_a", "missing_model")
    model_b = _str(rec["model_b"], "model_b", "missing_model")
    checker.check_model(model_a)
    checker.check_model(model_b)
    if model_a == model_b:
        raise Reject("same_model_battle", f"both completions are {short(model_a)}")
    accepted = accepted_index(rec["acceptedIndex"])
    if accepted is None:
        raise Reject("bad_accepted_index", "a release row without an accepted completion")
    texts = {k: _text(rec[k], k) for k in ("prefix", "suffix", "completion_a", "completion_b")}
    key = "cr-" + hashlib.sha256(orjson.dumps([rec[k] for k in RELEASE_FIELDS])).hexdigest()[:24]
    return (
        "outcome",
        key,
        {
            "tstamp": checker.lo_us,
            "user": checker.user_hash(key),
            "file_type": None,
            "privacy": KEEP_TEXT,
            "prefix": texts["prefix"],
            "suffix": texts["suffix"],
            "prefix_length": len(texts["prefix"]),
            "suffix_length": len(texts["suffix"]),
            "mid_span": None,
            "accepted_index": accepted,
            "model_a": model_a,
            "model_b": model_b,
            "latency_a": None,
            "latency_b": None,
            "completion_a": texts["completion_a"],
            "completion_b": texts["completion_b"],
            "completion_length_a": len(texts["completion_a"]),
            "completion_length_b": len(texts["completion_b"]),
            "completion_id_a": None,
            "completion_id_b": None,
        },
    )


PARSERS = {
    COPILOT_COMPLETION: completion_half,
    COPILOT_OUTCOME: outcome_half,
    COPILOT_RELEASE: release_half,
}
