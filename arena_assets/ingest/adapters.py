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

from arena_assets.contracts import WINNER_OF_VOTE

from .releases import RELEASE_FORMATS, ROW_FUNCTIONS, detect_release, tagged
from .validate import Checker, Messages, Reject, Row, messages, short, tname

NATIVE, CLEAN_BATTLE, CONVERSATION_DUMP = "native", "clean_battle", "conversation_dump"
KNOWN_LAYOUTS = (NATIVE, CLEAN_BATTLE, CONVERSATION_DUMP, *RELEASE_FORMATS)
VOTE_OF_WINNER = {winner: vote for vote, winner in WINNER_OF_VOTE.items()}
_CLEAN_BATTLE_REQUIRED = ("question_id", "model_a", "model_b", "winner", "tstamp")


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


def _required_str(record: dict, key: str) -> str:
    value = record.get(key)
    if type(value) is int and key in ("question_id", "conversation_id"):
        return str(value)
    if type(value) is not str or not value:
        what = "absent" if value is None or value == "" else f"{tname(value)} {short(value)}"
        raise Reject("unparseable_record", f"{key} is {what}")
    return value


def _voter(checker: Checker, record: dict, fallback: str) -> str:
    for key in ("user_id", "judge", "ip"):
        value = record.get(key)
        if type(value) is str and value:
            return checker.user_hash(value)
    return checker.user_hash(fallback)


def clean_battle_row(checker: Checker, record: dict) -> Row:
    missing = [k for k in _CLEAN_BATTLE_REQUIRED if record.get(k) is None]
    if missing:
        raise Reject("unparseable_record", "missing " + ", ".join(missing))
    qid = _required_str(record, "question_id")
    winner = record["winner"]
    vote = VOTE_OF_WINNER.get(winner) if type(winner) is str else None
    if vote is None:
        raise Reject(
            "unparseable_record", f"winner {short(winner)} is not one of {list(VOTE_OF_WINNER)}"
        )
    model_a = _required_str(record, "model_a")
    model_b = _required_str(record, "model_b")
    ts = checker.tstamp_us(record["tstamp"])
    anony = checker.anony_of(record)
    checker.check_model(model_a)
    checker.check_model(model_b)
    if model_a == model_b:
        raise Reject("same_model_battle", f"both sides are {short(model_a)}")
    conv_a, conv_b = record.get("conversation_a"), record.get("conversation_b")
    if conv_a is not None or conv_b is not None:
        msgs_a = messages(conv_a, "conversation_a")
        msgs_b = messages(conv_b, "conversation_b")
    else:
        turns = record.get("turns")
        if type(turns) is not list:
            raise Reject("unparseable_record", "no conversation_a/_b and no turns")
        prompts = [{"role": "user", "content": t} for t in turns]
        msgs_a = messages(prompts, "turns")
        msgs_b = (list(msgs_a[0]), list(msgs_a[1]), list(msgs_a[2]))
    user = _voter(checker, record, qid)
    return (
        qid,
        ts,
        vote,
        anony,
        user,
        f"{qid}-a",
        model_a,
        msgs_a,
        f"{qid}-b",
        model_b,
        msgs_b,
        None,
    )


def conversation_dump_row(checker: Checker, record: dict) -> Row:
    cid = _required_str(record, "conversation_id")
    model = _required_str(record, "model")
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
    user = _voter(checker, record, cid)
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
