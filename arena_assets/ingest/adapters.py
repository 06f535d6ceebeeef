"""Adapters that read published releases as if they were native events.

Detection is per file, from the keys of the first record that decodes to a JSON object
(lines before it can only be rejected for line-level reasons, which do not depend on the
format):

- ``type`` present                              -> ``native``
- ``model_a`` and ``winner`` present             -> ``clean_battle`` (FastChat clean_battle)
- ``conversation_id`` and ``conversation`` present -> ``conversation_dump``
  (LMSYS-Chat-1M, VisionArena-Chat)
- the public preference releases (55k CSV, 100k / 140k Parquet, VisionArena-Battle,
  Search Arena) by their own keys, checked first -> see ``releases.py``
- anything else                                  -> ``native`` (its lines are then rejected
  with ``missing_type``, whose detail then lists the keys seen and the layouts known:
  the most useful thing to tell the user)

clean_battle record -> vote row: ``type`` from ``winner`` (model_a→leftvote,
model_b→rightvote, tie→tievote, tie (bothbad)→bothbad_vote), ``event_id`` = question_id,
conversation ids ``<question_id>-a`` / ``-b``, messages from ``conversation_a/_b`` or,
when a release only kept the prompts, from ``turns`` as user-only messages on both sides;
the voter is ``judge`` and, when a release dropped it, the question_id (so each battle
counts as its own pseudo-user: nothing is invented about who voted).

conversation_dump record -> chat row: ``event_id`` = ``conv_id_a`` = conversation_id,
model from ``model``, messages from ``conversation`` (a flat message list, or a list of
per-turn lists, possibly JSON-encoded in Parquet); ``tstamp`` when present, else the
month's first instant, because LMSYS-Chat-1M carries no time and the user has placed the
file in that month's folder; the user is ``user_id`` / ``judge`` / ``ip``, else the
conversation_id (as above). A record-level ``images`` list (hashes, or image structs with
``bytes`` whose sha256 is taken) is attached to the first user message.

A record missing a required field is ``unparseable_record``, with the field named; all
other checks (tstamp, registry, messages, duplicates) are the native ones.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from .clean_battle import clean_battle_row, required_str, voter_of
from .releases import RELEASE_FORMATS, ROW_FUNCTIONS, detect_release, tagged
from .validate import Checker, Messages, Reject, Row, messages, tname

NATIVE, CLEAN_BATTLE, CONVERSATION_DUMP = "native", "clean_battle", "conversation_dump"
KNOWN_LAYOUTS = (NATIVE, CLEAN_BATTLE, CONVERSATION_DUMP, *RELEASE_FORMATS)


def detect_format(record: dict) -> str:
    if "type" in record:
        return NATIVE
    release = detect_release(record)
    if release is not None:
        return release
    if "model_a" in record and "winner" in record:
        return CLEAN_BATTLE
    if "conversation_id" in record and "conversation" in record:
        return CONVERSATION_DUMP
    return NATIVE


def matches_no_layout(record: dict) -> bool:
    """A record without ``type`` whose keys fit no adapter: its file is read as native
    events, and each missing_type reject says what was seen instead."""
    return "type" not in record and detect_format(record) == NATIVE


def unknown_layout_detail(record: dict) -> str:
    keys = sorted(map(str, record))[:12]
    return (
        f"no type field, and the file's first record matches no known layout "
        f"({', '.join(KNOWN_LAYOUTS)}); its keys: {keys}"
    )


def row_function(fmt: str, checker: Checker):
    """The record -> row function of format ``fmt``."""
    if fmt == CLEAN_BATTLE:
        return lambda obj: tagged(clean_battle_row(checker, obj), obj)
    if fmt == CONVERSATION_DUMP:
        return lambda obj: conversation_dump_row(checker, obj)
    if fmt in ROW_FUNCTIONS:
        adapter = ROW_FUNCTIONS[fmt]
        return lambda obj: adapter(checker, obj)
    return checker.native


def conversation_dump_row(checker: Checker, record: dict) -> Row:
    cid = required_str(record, "conversation_id")
    model = required_str(record, "model")
    conv = record.get("conversation")
    if conv is None:
        raise Reject("unparseable_record", "conversation is absent")
    if type(conv) is str:
        try:
            conv = orjson.loads(conv)
        except orjson.JSONDecodeError:
            raise Reject("unparseable_record", "conversation is a string but not JSON") from None
    if type(conv) is list and conv and all(type(turn) is list for turn in conv):
        conv = [msg for turn in conv for msg in turn]  # per-turn lists, flattened
    tstamp = record.get("tstamp")
    ts = checker.lo_us if tstamp is None else checker.tstamp_us(tstamp)
    anony = checker.anony_of(record)
    checker.check_model(model)
    extra = record.get("images")
    if extra and type(conv) is list:
        conv = _attach_images(conv, extra)
    msgs: Messages = messages(conv, "conversation")
    user = voter_of(checker, record, cid)
    return (cid, ts, "chat", anony, user, cid, model, msgs, None, None, None, None)


def _attach_images(conv: list, images: Any) -> list:
    if type(images) is not list:
        raise Reject("wrong_type", f"images is {tname(images)}, expected list")
    refs = []
    for img in images:
        if type(img) is dict and isinstance(img.get("bytes"), bytes | bytearray):
            refs.append(hashlib.sha256(img["bytes"]).hexdigest())
        else:
            refs.append(img)  # checked as a hash by the message validator
    out = list(conv)
    for i, msg in enumerate(out):
        if type(msg) is dict and msg.get("role") == "user":
            out[i] = {**msg, "images": list(msg.get("images") or []) + refs}
            return out
    raise Reject("bad_message", "images given but the conversation has no user turn")
