"""Junk lines: one defect each, so each kind maps to exactly one reject reason.

A junk line is always an *extra* line (fresh event and conversation ids, except for the
deliberate duplicate), so rejecting it never removes a conversation's only snapshot.
Choices the ingest parser must agree with (also in ``MALFORMED_KINDS``):
whitespace-only lines are ``empty_line``; a message whose content is a number is
``wrong_type``; a message that is a bare string or lacks ``content`` is ``bad_message``;
a vote with a single state is ``missing_state``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import orjson

# kind -> expected reason (a key of arena_assets.contracts.REJECT_REASONS)
MALFORMED_KINDS: dict[str, str] = {
    "blank_line": "empty_line",
    "whitespace_line": "empty_line",
    "invalid_utf8": "invalid_utf8",
    "truncated_json": "invalid_json",
    "json_array": "not_an_object",
    "json_scalar": "not_an_object",
    "missing_type": "missing_type",
    "unknown_type": "unknown_type",
    "missing_tstamp": "missing_tstamp",
    "tstamp_words": "bad_tstamp",
    "tstamp_other_year": "tstamp_outside_month",
    "missing_event_id": "missing_event_id",
    "duplicate_event_id": "duplicate_event_id",
    "missing_user": "missing_user",
    "anony_as_string": "wrong_type",
    "content_as_int": "wrong_type",
    "chat_without_state": "missing_state",
    "vote_with_one_state": "missing_state",
    "missing_conv_id": "missing_conv_id",
    "missing_model": "missing_model",
    "unregistered_model": "unknown_model",
    "same_model_vote": "same_model_battle",
    "empty_messages": "empty_messages",
    "message_is_string": "bad_message",
    "message_without_content": "bad_message",
    "bad_role": "bad_role",
    "empty_user_message": "empty_content",
    "huge_message": "absurd_length",
    "too_many_messages": "absurd_length",
    "bad_image_hash": "bad_image_ref",
}
# Kinds added after simulated months were published: planting them by default would
# change the bytes of every simulated month (the planter cycles through the shuffled
# MALFORMED_KINDS), so they are kept apart and planted only when a caller asks for them
# (``make_junk`` accepts both; tests build lines of these kinds from simulated events).
EXTRA_MALFORMED_KINDS: dict[str, str] = {
    "models_disagree": "models_mismatch",
    "shared_conv_id": "shared_conv_id",
    "duplicate_key_conflict": "duplicate_key",
}
ALL_MALFORMED_KINDS = {**MALFORMED_KINDS, **EXTRA_MALFORMED_KINDS}
UNREGISTERED_MODEL = "mystery-model-x"
HUGE_CHARS = 150_000
TOO_MANY = 250


@dataclass
class JunkContext:
    rng: random.Random
    new_event_id: Callable[[], str]
    new_conv_id: Callable[[], str]
    other_model: Callable[[str], str]  # a registered model different from the given one


def _copy(event: dict) -> dict:
    return orjson.loads(orjson.dumps(event))


def _as_chat(event: dict, ctx: JunkContext) -> dict:
    ev = _copy(event)
    if ev["type"] != "chat":
        ev["state"] = ev.pop("states")[0]
        ev.pop("models", None)
        ev["type"] = "chat"
    ev["event_id"] = ctx.new_event_id()
    ev["state"]["conv_id"] = ctx.new_conv_id()
    return ev


def _as_vote(event: dict, ctx: JunkContext) -> dict:
    ev = _copy(event)
    if ev["type"] == "chat":
        a = ev.pop("state")
        b = _copy(a)
        b["model_name"] = ctx.other_model(a["model_name"])
        ev["states"] = [a, b]
        ev["models"] = ["", ""]
        ev["anony"] = True
        ev["type"] = ctx.rng.choice(("leftvote", "rightvote", "tievote", "bothbad_vote"))
    ev["event_id"] = ctx.new_event_id()
    for s in ev["states"]:
        s["conv_id"] = ctx.new_conv_id()
    return ev


def make_junk(kind: str, event: dict, previous_line: bytes, ctx: JunkContext) -> bytes:
    """The junk line of ``kind`` derived from the valid ``event`` just written."""
    dumps = orjson.dumps
    if kind == "blank_line":
        return b""
    if kind == "whitespace_line":
        return b"   \t "
    if kind == "duplicate_event_id":
        return previous_line  # an exact re-log of the line before: same event_id
    if kind == "vote_with_one_state":
        ev = _as_vote(event, ctx)
        ev["states"] = ev["states"][:1]
        return dumps(ev)
    if kind == "same_model_vote":
        ev = _as_vote(event, ctx)
        ev["states"][1]["model_name"] = ev["states"][0]["model_name"]
        return dumps(ev)
    if kind in EXTRA_MALFORMED_KINDS:
        return _extra_junk(kind, event, ctx)
    ev = _as_chat(event, ctx)
    state = ev["state"]
    msgs = state["messages"]
    if kind == "invalid_utf8":
        line = dumps(ev)
        return line.replace(b'"content":"', b'"content":"\xff\xfe', 1)
    if kind == "truncated_json":
        text = dumps(ev).decode()  # cut on a character boundary: still valid UTF-8
        return text[: len(text) // 2].encode()
    if kind == "json_array":
        return b"[" + dumps(ev) + b"]"
    if kind == "json_scalar":
        return dumps(ctx.rng.choice((42, "chat", None, 3.5)))
    if kind == "missing_type":
        del ev["type"]
    elif kind == "unknown_type":
        ev["type"] = ctx.rng.choice(("upvote", "share", "regenerate", "flag"))
    elif kind == "missing_tstamp":
        del ev["tstamp"]
    elif kind == "tstamp_words":
        ev["tstamp"] = ctx.rng.choice(("yesterday", "last tuesday", "soon"))
    elif kind == "tstamp_other_year":
        ev["tstamp"] = round(ev["tstamp"] - 366 * 86400.0, 3)
    elif kind == "missing_event_id":
        del ev["event_id"]
    elif kind == "missing_user":
        ev.pop("ip", None)
        ev.pop("user_id", None)
    elif kind == "anony_as_string":
        ev["anony"] = ctx.rng.choice(("yes", "true", "1"))
    elif kind == "content_as_int":
        msgs[0]["content"] = ctx.rng.randrange(1, 10**6)
    elif kind == "chat_without_state":
        del ev["state"]
    elif kind == "missing_conv_id":
        del state["conv_id"]
    elif kind == "missing_model":
        del state["model_name"]
    elif kind == "unregistered_model":
        state["model_name"] = UNREGISTERED_MODEL
    elif kind == "empty_messages":
        state["messages"] = []
    elif kind == "message_is_string":
        msgs[0] = msgs[0]["content"]
    elif kind == "message_without_content":
        del msgs[0]["content"]
    elif kind == "bad_role":
        msgs[-1]["role"] = ctx.rng.choice(("bot", "human", "gpt"))
    elif kind == "empty_user_message":
        msgs[0]["content"] = ""
        msgs[0].pop("images", None)
    elif kind == "huge_message":
        filler = msgs[0]["content"] + " "
        msgs[0]["content"] = (filler * (HUGE_CHARS // max(1, len(filler)) + 1))[:HUGE_CHARS]
    elif kind == "too_many_messages":
        roles = ("user", "assistant")
        state["messages"] = [
            {"role": roles[i % 2], "content": f"turn {i}"} for i in range(TOO_MANY)
        ]
    elif kind == "bad_image_hash":
        msgs[0]["images"] = [ctx.rng.choice(("not-a-hash", "g" * 64, "abc123", "deadbeef" * 7))]
    else:
        raise ValueError(f"unknown malformed kind {kind!r}")
    return dumps(ev)


def _extra_junk(kind: str, event: dict, ctx: JunkContext) -> bytes:
    ev = _as_vote(event, ctx)
    a, b = ev["states"]
    if kind == "models_disagree":  # the voter was shown b's model on the left
        ev["anony"] = False
        ev["models"] = [b["model_name"], a["model_name"]]
        return orjson.dumps(ev)
    if kind == "shared_conv_id":
        b["conv_id"] = a["conv_id"]
        return orjson.dumps(ev)
    # duplicate_key_conflict: the event type written twice with different values; a
    # last-value-wins decoder would take the second. orjson cannot write a repeated key,
    # so it is spliced into the serialized object.
    other = "leftvote" if ev["type"] != "leftvote" else "rightvote"
    line = orjson.dumps(ev)
    return b'{"type":' + orjson.dumps(other) + b"," + line[1:]
