"""Adapters for the public preference releases people download, read as vote events.

One layout per release, detected from the keys of a file's first record (``adapters.
detect_format`` calls :func:`detect_release`); every record becomes one vote row or one
reject with a reason, like any other line:

- ``arena_55k`` (``lmsys/lmsys-arena-human-preference-55k``, CSV): ``id, model_a, model_b,
  prompt, response_a, response_b, winner_model_a, winner_model_b, winner_tie``; the prompt
  and responses are JSON lists of strings, one per turn (a null response = an empty answer).
  Exactly one of the three winner flags is 1 (no "both bad" in this release).
- ``arena_100k`` (``lmarena-ai/arena-human-preference-100k``, Parquet): FastChat's
  clean_battle record as LMArena published it: ``question_id, model_a, model_b, winner,
  judge_hash, conversation_a, conversation_b, turn, anony, language, tstamp,
  conv_metadata, is_code, is_refusal, dedup_tag, category_tag``, where the card declares
  ``conversation_a/_b``, ``conv_metadata`` and ``category_tag`` as strings (JSON), parsed
  here. Detected by ``judge_hash`` (or ``dedup_tag`` beside a JSON-string conversation:
  FastChat's own clean_battle files carry ``dedup_tag`` too, with lists). The voter is
  ``judge_hash`` (LMArena's hash of the voter, hashed again with our salt), so a voter's
  battles share one ``user_hash`` as in any other log.
- ``arena_preference`` (``lmarena-ai/arena-human-preference-140k``, Parquet): ``id,
  model_a, model_b, winner, evaluation_session_id, evaluation_order, conversation_a,
  conversation_b, full_conversation, conv_metadata, category_tag, language, is_code,
  timestamp`` (its winner says ``both_bad`` where FastChat says ``tie (bothbad)``). A
  message's content is a string or a list of parts (``{type: text, text}``, image parts).
- ``vision_battle`` (``lmarena-ai/VisionArena-Battle``, Parquet): a FastChat clean_battle
  record plus a record-level ``images`` list of image structs with ``bytes``: the sha256 of
  each image's bytes is attached to the first user turn of both sides.
- ``search_arena`` (``lmarena-ai/search-arena-*``): ``model_a, model_b, winner, judge, turn,
  anony, language, tstamp, messages_a, messages_b`` and the systems' search metadata (not
  kept: it is large and not a vote's business).

What every adapter decides, and why:

- No timestamp in the record (55k): the month's first instant, as for LMSYS-Chat-1M (the
  user placed the file in that month's folder). A timestamp outside the month is
  ``tstamp_outside_month``, as for any event.
- No ``anony`` field (55k, 100k, 140k): true. These releases are the leaderboard's
  anonymous battles; false would send every vote to the ``not_anonymous`` filter.
- No voter: ``evaluation_session_id`` when present (a session), else the record's id, so
  each battle is its own pseudo-user; nothing is invented about who voted. (The 100k's
  ``judge_hash`` is a voter.)
- JSON written by Python with lone UTF-16 surrogates (``"\\ud83d"``: an emoji cut in
  half, common in the 55k CSV) is valid for Python's ``json`` but not for orjson:
  :func:`loads_lenient` falls back to ``json.loads`` and replaces each lone surrogate by
  U+FFFD, so the row is read, not rejected as ``invalid_json``.
- No id (some Search Arena files): ``sa-`` + a hash of (tstamp, models, first prompt), so
  a re-read gives the same id and a repeated record is a ``duplicate_event_id``.
- LMArena's own per-battle fields travel with the row (``TaggedRow``): ``category_tag`` as
  published (JSON), and ``release_tags``: the release's language, is_code, is_refusal,
  evaluation_order, conv_metadata, intents (JSON). ``raw_logs`` and ``battles`` carry them
  as two String columns (null for native events), so the category boards can read LMArena's
  own labels instead of calling a labeller.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

import orjson

from arena_assets.contracts import WINNER_OF_VOTE

from .clean_battle import clean_battle_row
from .validate import Checker, Messages, Reject, Row, messages, short, tname

ARENA_55K, ARENA_100K, ARENA_PREFERENCE, VISION_BATTLE, SEARCH_ARENA = (
    "arena_55k",
    "arena_100k",
    "arena_preference",
    "vision_battle",
    "search_arena",
)
RELEASE_FORMATS = (ARENA_55K, ARENA_100K, ARENA_PREFERENCE, VISION_BATTLE, SEARCH_ARENA)
VOTE_OF_WINNER = {winner: vote for vote, winner in WINNER_OF_VOTE.items()} | {
    "both_bad": "bothbad_vote",
    "bothbad": "bothbad_vote",
    "tie_bothbad": "bothbad_vote",
}
_55K_FIELDS = (
    "id",
    "model_a",
    "model_b",
    "prompt",
    "response_a",
    "response_b",
    "winner_model_a",
    "winner_model_b",
    "winner_tie",
)
# the release's own per-battle fields kept in ``release_tags`` (small scalars and structs)
TAG_FIELDS = (
    "language",
    "is_code",
    "is_refusal",
    "evaluation_order",
    "turn",
    "dedup_tag",
    "conv_metadata",
    "primary_intent",
    "secondary_intent",
)
_VOTER_KEYS = ("user_id", "judge_hash", "judge", "ip", "evaluation_session_id")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


def loads_lenient(data: bytes | bytearray | str) -> Any:
    """``orjson.loads``, or where orjson refuses a lone surrogate escape, ``json.loads``
    with every lone surrogate replaced by U+FFFD. Raises ``ValueError`` (orjson's error)
    when the text is not JSON for either."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        if "\\ud" not in text.lower():  # only an escape can make a lone surrogate
            raise
        try:
            return _no_surrogates(json.loads(text))
        except ValueError:
            raise exc from None


class TaggedRow(tuple):
    """A vote row (``validate.Row``) with the release's ``category_tag`` and
    ``release_tags`` (JSON strings or None); ``frames.RowBuffer`` reads them."""

    category_tag: str | None
    release_tags: str | None


def detect_release(record: dict) -> str | None:
    """The release layout of a first record, or None (not one of them)."""
    if "winner_model_a" in record and "prompt" in record:
        return ARENA_55K
    if "messages_a" in record and "messages_b" in record and "winner" in record:
        return SEARCH_ARENA
    if "model_a" in record and "winner" in record and "conversation_a" in record:
        if "judge_hash" in record or (
            "dedup_tag" in record and isinstance(record["conversation_a"], str)
        ):
            return ARENA_100K
        if "question_id" not in record and "id" in record:
            return ARENA_PREFERENCE
        if "images" in record:
            return VISION_BATTLE
    return None


def _json(value: Any) -> str:
    return orjson.dumps(
        value, default=str, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    ).decode()


def _decoded(value: Any, what: str) -> Any:
    """A field a release may write as a JSON string (the 100k's struct columns)."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return loads_lenient(value)
        except ValueError:
            raise Reject("invalid_json", f"{what} is a string but not JSON") from None
    return value


def tagged(row: Row, record: dict) -> TaggedRow:
    """``row`` with the release fields of ``record`` attached (JSON-encoded, keys sorted)."""
    out = TaggedRow(row)
    tag = record.get("category_tag")
    if isinstance(tag, str):  # a JSON-encoded struct (CSV / JSON exports, the 100k)
        try:
            tag = loads_lenient(tag)
        except ValueError:
            raise Reject("invalid_json", "category_tag is a string but not JSON") from None
    out.category_tag = None if tag is None else _json(tag)
    extra = {k: _decoded(record[k], k) for k in TAG_FIELDS if record.get(k) is not None}
    out.release_tags = _json(extra) if extra else None
    return out


def _str_field(record: dict, key: str) -> str:
    value = record.get(key)
    if type(value) is int:
        return str(value)
    if type(value) is not str or not value:
        what = "absent" if value is None or value == "" else f"{tname(value)} {short(value)}"
        raise Reject("unparseable_record", f"{key} is {what}")
    return value


def _voter(checker: Checker, record: dict, fallback: str) -> str:
    for key in _VOTER_KEYS:
        value = record.get(key)
        if type(value) is str and value:
            return checker.user_hash(value)
    return checker.user_hash(fallback)


def _vote_type(winner: Any) -> str:
    vote = VOTE_OF_WINNER.get(winner) if type(winner) is str else None
    if vote is None:
        raise Reject(
            "unparseable_record", f"winner {short(winner)} is not one of {sorted(VOTE_OF_WINNER)}"
        )
    return vote


def _tstamp(checker: Checker, record: dict, *keys: str) -> int:
    for key in keys:
        if record.get(key) is not None:
            return checker.tstamp_us(record[key])
    return checker.lo_us


def _pair(checker: Checker, record: dict) -> tuple[str, str]:
    model_a, model_b = _str_field(record, "model_a"), _str_field(record, "model_b")
    checker.check_model(model_a)
    checker.check_model(model_b)
    if model_a == model_b:
        raise Reject("same_model_battle", f"both sides are {short(model_a)}")
    return model_a, model_b


def _anony(record: dict) -> bool:
    value = record.get("anony", True)
    if value is None:
        return True
    if type(value) is not bool:
        raise Reject("wrong_type", f"anony is {tname(value)} {short(value)}, expected bool")
    return value


# ---- messages: strings, lists of parts, images as bytes ------------------------------
def image_ref(image: Any) -> Any:
    """sha256 hex of an image given as bytes or a ``{bytes: ...}`` struct; an image given
    only by a URL is named by the sha256 of its URL (the release kept no pixels); anything
    else unchanged (a hash is checked as one by the message validator)."""
    if isinstance(image, bytes | bytearray):
        return hashlib.sha256(image).hexdigest()
    if isinstance(image, str) and image.startswith(("http://", "https://", "data:")):
        return hashlib.sha256(image.encode()).hexdigest()
    if isinstance(image, dict) and isinstance(image.get("url"), str):
        return image_ref(image["url"])
    if isinstance(image, dict):
        data = image.get("bytes")
        if isinstance(data, bytes | bytearray):
            return hashlib.sha256(data).hexdigest()
        if isinstance(image.get("image"), bytes | bytearray | dict):
            return image_ref(image["image"])
    return image


def _parts(content: list) -> tuple[str, list]:
    """Text and images of a content given as a list of parts."""
    texts, images = [], []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            if kind in ("image", "image_url", "input_image") or (kind is None and "bytes" in part):
                images.append(image_ref(part.get("image") or part.get("image_url") or part))
            elif part.get("text") is not None:
                texts.append(part["text"])
        else:
            raise Reject("bad_message", f"a content part is {tname(part)}")
    return "\n".join(t for t in texts if isinstance(t, str)), images


def release_messages(conv: Any, where: str) -> Messages:
    """A release's message list (a JSON string, OpenAI dicts with string or part-list
    content, FastChat pairs) through the native message checks."""
    if isinstance(conv, str):
        try:
            conv = loads_lenient(conv)
        except ValueError:
            raise Reject("invalid_json", f"{where} is a string but not JSON") from None
    if type(conv) is list:
        norm = []
        for msg in conv:
            if type(msg) is dict and type(msg.get("content")) is list:
                text, images = _parts(msg["content"])
                msg = {"role": msg.get("role"), "content": text, "images": images or None}
            elif type(msg) is dict and set(msg) - {"role", "content", "images"}:
                msg = {k: msg[k] for k in ("role", "content", "images") if k in msg}
            norm.append(msg)
        conv = norm
    return messages(conv, where)


def with_images(msgs: Messages, refs: list[str]) -> Messages:
    """``msgs`` with ``refs`` added to its first user turn (a release that keeps images
    beside the conversation, VisionArena-Battle)."""
    roles, contents, images = msgs
    for i, role in enumerate(roles):
        if role == "user":
            merged = list(images[i]) + [r for r in refs if r not in images[i]]
            checked = messages(
                [{"role": "user", "content": contents[i], "images": merged}], "images"
            )[2][0]
            return roles, contents, [*images[:i], checked, *images[i + 1 :]]
    raise Reject("bad_message", "images given but the conversation has no user turn")


# ---- the adapters ---------------------------------------------------------------------
def arena_55k_row(checker: Checker, record: dict) -> Row:
    if None in record:
        raise Reject("unparseable_record", "the row has more fields than the header")
    missing = [k for k in _55K_FIELDS if record.get(k) is None]
    if missing:
        raise Reject("unparseable_record", "missing " + ", ".join(missing))
    rid = _str_field(record, "id")
    flags = [str(record[k]).strip() for k in ("winner_model_a", "winner_model_b", "winner_tie")]
    if sorted(flags) != ["0", "0", "1"]:
        raise Reject("unparseable_record", f"winner flags {flags} are not exactly one 1")
    vote = ("leftvote", "rightvote", "tievote")[flags.index("1")]
    model_a, model_b = _pair(checker, record)
    ts = _tstamp(checker, record, "timestamp", "tstamp")
    turns = {}
    for key in ("prompt", "response_a", "response_b"):
        try:
            value = loads_lenient(record[key])
        except ValueError:
            raise Reject("invalid_json", f"{key} is not a JSON list") from None
        if type(value) is not list or not value:
            raise Reject("unparseable_record", f"{key} is {tname(value)}, expected a list of turns")
        turns[key] = value
    n = len(turns["prompt"])
    if len(turns["response_a"]) != n or len(turns["response_b"]) != n:
        raise Reject(
            "unparseable_record",
            f"{n} prompts but {len(turns['response_a'])} / {len(turns['response_b'])} responses",
        )
    sides = []
    for key in ("response_a", "response_b"):
        conv = []
        for user, answer in zip(turns["prompt"], turns[key], strict=True):
            conv += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
        sides.append(messages(conv, key))
    user = _voter(checker, record, rid)
    row = (
        rid,
        ts,
        vote,
        _anony(record),
        user,
        f"{rid}-a",
        model_a,
        sides[0],
        f"{rid}-b",
        model_b,
        sides[1],
        None,
    )
    return tagged(row, record)


def arena_preference_row(checker: Checker, record: dict) -> Row:
    rid = _str_field(record, "id")
    vote = _vote_type(record.get("winner"))
    model_a, model_b = _pair(checker, record)
    ts = _tstamp(checker, record, "timestamp", "tstamp")
    msgs_a = release_messages(record.get("conversation_a"), "conversation_a")
    msgs_b = release_messages(record.get("conversation_b"), "conversation_b")
    user = _voter(checker, record, rid)
    row = (
        rid,
        ts,
        vote,
        _anony(record),
        user,
        f"{rid}-a",
        model_a,
        msgs_a,
        f"{rid}-b",
        model_b,
        msgs_b,
        None,
    )
    return tagged(row, record)


def _plain_conversations(record: dict) -> dict:
    """``record`` with both conversations as FastChat message lists (part lists and JSON
    strings read by :func:`release_messages`)."""
    plain = {**record}
    for key in ("conversation_a", "conversation_b"):
        roles, contents, imgs = release_messages(record.get(key), key)
        plain[key] = [
            {"role": r, "content": c, "images": i}
            for r, c, i in zip(roles, contents, imgs, strict=True)
        ]
    return plain


def arena_100k_row(checker: Checker, record: dict) -> Row:
    plain = _plain_conversations(record) | {"anony": _anony(record)}
    row = clean_battle_row(checker, plain)
    row = (*row[:4], _voter(checker, record, row[0]), *row[5:])
    return tagged(row, record)


def vision_battle_row(checker: Checker, record: dict) -> Row:
    images = record.get("images")
    if images is not None and type(images) is not list:
        raise Reject("wrong_type", f"images is {tname(images)}, expected list")
    row = clean_battle_row(checker, _plain_conversations(record))
    if images:
        refs = [image_ref(img) for img in images]
        row = (
            *row[:7],
            with_images(row[7], refs),
            row[8],
            row[9],
            with_images(row[10], refs),
            *row[11:],
        )
    return tagged(row, record)


def search_arena_row(checker: Checker, record: dict) -> Row:
    vote = _vote_type(record.get("winner"))
    model_a, model_b = _pair(checker, record)
    ts = _tstamp(checker, record, "tstamp", "timestamp")
    msgs_a = release_messages(record.get("messages_a"), "messages_a")
    msgs_b = release_messages(record.get("messages_b"), "messages_b")
    rid = next(
        (str(record[k]) for k in ("question_id", "id") if record.get(k) not in (None, "")), None
    )
    if rid is None:  # derived from what identifies the battle: stable across re-reads
        first = next((c for r, c in zip(msgs_a[0], msgs_a[1]) if r == "user"), "")
        rid = "sa-" + hashlib.sha256(_json([ts, model_a, model_b, first]).encode()).hexdigest()[:20]
    user = _voter(checker, record, rid)
    row = (
        rid,
        ts,
        vote,
        _anony(record),
        user,
        f"{rid}-a",
        model_a,
        msgs_a,
        f"{rid}-b",
        model_b,
        msgs_b,
        None,
    )
    return tagged(row, record)


ROW_FUNCTIONS: dict[str, Callable[[Checker, dict], Row]] = {
    ARENA_55K: arena_55k_row,
    ARENA_100K: arena_100k_row,
    ARENA_PREFERENCE: arena_preference_row,
    VISION_BATTLE: vision_battle_row,
    SEARCH_ARENA: search_arena_row,
}
