"""Validation of one native event (already JSON-decoded) into a typed row, or a rejection.

Every check raises :class:`Reject` with a reason from ``schema.REJECT_REASONS``; the first
failing check wins. Order (line-level checks live in ``parse.py``; ``duplicate_event_id``
is applied there too, last, on lines that passed everything else):

 1. empty_line, line_too_long, invalid_utf8, invalid_json, not_an_object   (parse.py)
 2. missing_type, unknown_type
 3. missing_event_id, wrong_type(event_id)
 4. missing_tstamp, bad_tstamp, tstamp_outside_month
 5. missing_user, wrong_type(user_id / ip)          user_id is preferred over ip
 6. missing_state (chat: no ``state``; vote: no ``states`` or not exactly two),
    wrong_type(states not a list, models not a list, anony not a bool)
 7. per state, side a then side b: wrong_type(state not an object),
    missing_conv_id / wrong_type, missing_model / wrong_type, unknown_model,
    wrong_type(offset)
 8. votes: same_model_battle, then shared_conv_id (both sides one conversation), then
    models_mismatch (a ``models`` list whose shown names disagree with the states' model
    names; "" / null entries are hidden names and agree with anything; not two entries
    is a mismatch too), wrong_type (a shown name that is not a string)
 9. per state, side a then b: wrong_type(messages not a list), empty_messages,
    absurd_length(too many messages), then per message in order:
    bad_message (shape), wrong_type (role type), bad_role, wrong_type (content type),
    wrong_type(images not a list), bad_message (images on a non-user turn),
    empty_content, absurd_length, bad_image_ref; then no_user_turn (the state holds no
    user turn at all)
10. served events (optional impression log): missing_state / wrong_type (models not two),
    missing_model / wrong_type / unknown_model per name, same_model_battle

Decisions (agreed with the simulator's planted defects): ``anony`` absent or null is
False; a null ``content`` is "" (an assistant turn still streaming) and counts as empty for
a user turn; a content or role of another JSON type is ``wrong_type``, a message that is
not an object / pair or lacks ``content`` is ``bad_message``; roles are matched
case-insensitively ("USER" is user) but no aliases ("human", "gpt", "bot" are bad_role);
a state's ``offset`` (FastChat: number of leading few-shot messages) drops those
messages; image hashes are lower-cased; empty strings count as absent for ids, models and
users. ``user_hash`` is BLAKE2b keyed with the salt, 10 bytes as 20 hex characters.
A user turn whose text is only whitespace or invisible characters (zero-width space,
joiners, BOM, soft hyphen: ``INVISIBLE``) is ``empty_content``: nothing a model or a voter
could read. A state without any user turn (only system / assistant messages) is
``no_user_turn``: no prompt, so no battle, label or release row can come from it (accepted,
either would become a conversation without a prompt).

Why exceptions and plain ``type(x) is`` tests: this runs once per line, on the path that
sets the whole pipeline's throughput; rejections are rare, so raising is cheap overall.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import re
from itertools import repeat
from typing import Any

from arena_assets.contracts import EVENT_TYPES, MAX_MESSAGE_CHARS, MAX_MESSAGES, ROLES, SERVED_TYPE

from .sources import month_bounds_us

EVENT_TYPE_SET = frozenset(EVENT_TYPES)
ROLE_SET = frozenset(ROLES)
IMAGE_REF = re.compile(r"[0-9a-fA-F]{64}")
LOWER_IMAGE_REF = re.compile(r"[0-9a-f]{64}")
DETAIL_VALUE_CHARS = 80
# seconds range accepted as a timestamp at all (1970 .. 9999); outside it is bad_tstamp
TS_MAX_S = 253_402_300_800
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ONE_US = dt.timedelta(microseconds=1)
_NO_IMAGES: list[str] = []  # shared, never mutated
_USER_CACHE_MAX = 1_000_000

# A state's messages in columnar form: (roles, contents, images per message).
Messages = tuple[list[str], list[str], list[list[str]]]
# (ip_hash, net_hash, device_hash) of an event's optional identity fields, or None
Links = tuple[str | None, str | None, str | None] | None
# (event_id, tstamp_us, type, anony, user_hash, conv_a, model_a, msgs_a, conv_b, model_b,
#  msgs_b, links); a served event has no conversation ids and no messages
Row = tuple[
    str,
    int,
    str,
    bool,
    str,
    str | None,
    str,
    Messages | None,
    str | None,
    str | None,
    Messages | None,
    Links,
]
# characters that carry no text: a user turn made only of these (and whitespace) is empty
# (zero-width space / joiners, word joiner, BOM, soft hyphen, Mongolian vowel separator,
# combining grapheme joiner, Hangul fillers, invisible math operators)
INVISIBLE = (
    "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u034f\u3164\u115f\u1160\u2061\u2062\u2063\u2064"
)
_BLANK = (
    INVISIBLE + " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
    "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def blank_text(text: str) -> bool:
    """True for a text with nothing visible in it: empty, whitespace or invisible characters."""
    return not text.strip(_BLANK)


class Reject(Exception):
    """A line's single outcome when it is not accepted."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason, detail)
        self.reason = reason
        self.detail = detail


def short(value: Any) -> str:
    """repr of an offending value, truncated for the detail column."""
    text = repr(value)
    return text if len(text) <= DETAIL_VALUE_CHARS else text[: DETAIL_VALUE_CHARS - 1] + "…"


def tname(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def salt_key(salt: str) -> bytes:
    # blake2b's key is at most 64 bytes; longer salts are hashed down first
    raw = salt.encode()
    return raw if len(raw) <= 64 else hashlib.blake2b(raw).digest()


class Checker:
    """Month-bound validation context: bounds, registry, salted user hashing, and the
    hashes of forgotten users (``forgotten.py``), whose lines the parsers reject."""

    def __init__(
        self,
        month: str,
        salt: str,
        known_models: set[str] | None,
        forgotten: frozenset[str] = frozenset(),
    ) -> None:
        self.month = month
        self.lo_us, self.hi_us = month_bounds_us(month)
        self.known_models = known_models
        self.forgotten = forgotten
        self._key = salt_key(salt)
        self._user_cache: dict[str, str] = {}
        self._ip_cache: dict[str, tuple[str, str | None]] = {}

    # -- scalar fields -------------------------------------------------------------------
    def user_hash(self, value: str) -> str:
        """Keyed BLAKE2b of an ip / user id: stable within a salt, not reversible without it."""
        cached = self._user_cache.get(value)
        if cached is None:
            if len(self._user_cache) >= _USER_CACHE_MAX:
                self._user_cache.clear()
            cached = hashlib.blake2b(value.encode(), key=self._key, digest_size=10).hexdigest()
            self._user_cache[value] = cached
        return cached

    def tstamp_us(self, value: Any) -> int:
        """Epoch microseconds of a unix-seconds number or ISO-8601 string in the month."""
        kind = type(value)
        if kind is float or kind is int:
            # NaN fails both comparisons; bool is not int here (type() is exact)
            if not (0 <= value < TS_MAX_S):
                raise Reject(
                    "bad_tstamp", f"tstamp {short(value)} is not a finite time in 1970..9999"
                )
            us = round(value * 1_000_000)
        elif value is None:
            raise Reject("missing_tstamp", "tstamp absent or null")
        elif kind is str or isinstance(value, dt.datetime):
            us = self._iso_us(value)
        else:
            raise Reject("bad_tstamp", f"tstamp is {tname(value)} {short(value)}")
        if not (self.lo_us <= us < self.hi_us):
            when = (_EPOCH + us * _ONE_US).isoformat()
            raise Reject("tstamp_outside_month", f"tstamp {when} is not in {self.month}")
        return us

    @staticmethod
    def _iso_us(value: str | dt.datetime) -> int:
        try:
            when = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(value)
        except ValueError:
            raise Reject("bad_tstamp", f"tstamp {short(value)} is not ISO-8601") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)  # naive times are taken as UTC
        us = (when - _EPOCH) // _ONE_US
        if not (0 <= us < TS_MAX_S * 1_000_000):
            raise Reject("bad_tstamp", f"tstamp {short(value)} is before 1970")
        return us

    def user_of(self, obj: dict) -> str:
        for key in ("user_id", "ip"):
            value = obj.get(key)
            if value is None or value == "":
                continue
            if type(value) is not str:
                raise Reject("wrong_type", f"{key} is {tname(value)}, expected string")
            return self.user_hash(value)
        raise Reject("missing_user", "neither ip nor user_id present")

    def links_of(self, obj: dict) -> Links:
        """Salted hashes of the event's ``ip`` (even when ``user_id`` names the user), its
        network (/24 for IPv4, /48 for IPv6; null when the ip is no address) and its
        ``device_id``. An ``ip`` that is not a string next to a ``user_id`` is ignored (it
        was never read before these links existed); a ``device_id`` that is not a string is
        ``wrong_type``."""
        ip, device = obj.get("ip"), obj.get("device_id")
        if ip is None and device is None:
            return None
        ip_hash = net_hash = device_hash = None
        if type(ip) is str and ip:
            cached = self._ip_cache.get(ip)
            if cached is None:
                if len(self._ip_cache) >= _USER_CACHE_MAX:
                    self._ip_cache.clear()
                cached = (self.user_hash(ip), self._net_hash(ip))
                self._ip_cache[ip] = cached
            ip_hash, net_hash = cached
        if device is not None and device != "":
            if type(device) is not str:
                raise Reject("wrong_type", f"device_id is {tname(device)}, expected string")
            device_hash = self.user_hash("device\x1f" + device)
        return ip_hash, net_hash, device_hash

    def _net_hash(self, ip: str) -> str | None:
        try:
            addr = ipaddress.ip_address(ip.strip().split("%", 1)[0])
        except ValueError:
            return None
        if addr.version == 6 and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        prefix = 24 if addr.version == 4 else 48
        net = ipaddress.ip_network(f"{addr}/{prefix}", strict=False)
        return self.user_hash(f"net\x1f{net}")

    @staticmethod
    def anony_of(obj: dict) -> bool:
        value = obj.get("anony")
        if value is None:
            return False
        if type(value) is not bool:
            raise Reject("wrong_type", f"anony is {tname(value)} {short(value)}, expected bool")
        return value

    def check_model(self, model: str) -> None:
        if self.known_models is not None and model not in self.known_models:
            raise Reject("unknown_model", f"model {short(model)} is not in models.json")

    # -- states and messages -------------------------------------------------------------
    def state_head(self, state: Any, where: str) -> tuple[str, str]:
        """conv_id and model_name of one state (step 7)."""
        if type(state) is not dict:
            raise Reject("wrong_type", f"{where} is {tname(state)}, expected object")
        conv = state.get("conv_id")
        if type(conv) is not str or not conv:
            if conv is None or conv == "":
                raise Reject("missing_conv_id", f"{where} has no conv_id")
            raise Reject("wrong_type", f"{where}.conv_id is {tname(conv)}, expected string")
        model = state.get("model_name")
        if type(model) is not str or not model:
            if model is None or model == "":
                raise Reject("missing_model", f"{where} has no model_name")
            raise Reject("wrong_type", f"{where}.model_name is {tname(model)}, expected string")
        self.check_model(model)
        offset = state.get("offset")
        if offset is not None and (type(offset) is not int or offset < 0):
            raise Reject("wrong_type", f"{where}.offset is {short(offset)}, expected int >= 0")
        return conv, model

    def state_messages(self, state: dict, where: str) -> Messages:
        msgs = state.get("messages")
        offset = state.get("offset")
        if offset and type(msgs) is list:
            msgs = msgs[offset:]
        return messages(msgs, where)

    # -- whole events --------------------------------------------------------------------
    def native(self, obj: dict) -> Row:
        typ = obj.get("type")
        if type(typ) is not str or typ not in EVENT_TYPE_SET:
            if typ is None:
                raise Reject("missing_type", "no type field")
            raise Reject("unknown_type", f"type {short(typ)}")
        eid = obj.get("event_id")
        if type(eid) is not str or not eid:
            if eid is None or eid == "":
                raise Reject("missing_event_id", "no event_id field")
            raise Reject("wrong_type", f"event_id is {tname(eid)}, expected string")
        ts = self.tstamp_us(obj.get("tstamp"))
        user = self.user_of(obj)
        links = self.links_of(obj)
        if typ == "chat":
            state = obj.get("state")
            if state is None:
                raise Reject("missing_state", "chat event without state")
            anony = self.anony_of(obj)
            conv, model = self.state_head(state, "state")
            return (
                eid,
                ts,
                typ,
                anony,
                user,
                conv,
                model,
                self.state_messages(state, "state"),
                None,
                None,
                None,
                links,
            )
        if typ == SERVED_TYPE:
            return self._served(obj, eid, ts, user, links)
        states = obj.get("states")
        if type(states) is not list or len(states) != 2:
            if states is None:
                raise Reject("missing_state", f"{typ} without states")
            if type(states) is list:
                raise Reject("missing_state", f"{typ} has {len(states)} states, expected 2")
            raise Reject("wrong_type", f"states is {tname(states)}, expected list")
        shown = obj.get("models")
        if shown is not None and type(shown) is not list:
            raise Reject("wrong_type", f"models is {tname(shown)}, expected list")
        anony = self.anony_of(obj)
        state_a, state_b = states
        conv_a, model_a = self.state_head(state_a, "states[0]")
        conv_b, model_b = self.state_head(state_b, "states[1]")
        if model_a == model_b:
            raise Reject("same_model_battle", f"both sides are {short(model_a)}")
        if conv_a == conv_b:
            raise Reject("shared_conv_id", f"both sides are conversation {short(conv_a)}")
        if shown is not None:
            _check_shown(shown, model_a, model_b)
        return (
            eid,
            ts,
            typ,
            anony,
            user,
            conv_a,
            model_a,
            self.state_messages(state_a, "states[0]"),
            conv_b,
            model_b,
            self.state_messages(state_b, "states[1]"),
            links,
        )

    def _served(self, obj: dict, eid: str, ts: int, user: str, links: Links) -> Row:
        """A battle served without a vote: the two model names shown, no conversations."""
        models = obj.get("models")
        if type(models) is not list or len(models) != 2:
            if models is None:
                raise Reject("missing_state", "served event without models")
            if type(models) is list:
                raise Reject("missing_state", f"served event has {len(models)} models, expected 2")
            raise Reject("wrong_type", f"models is {tname(models)}, expected list")
        for i, name in enumerate(models):
            if name is None or name == "":
                raise Reject("missing_model", f"models[{i}] is empty")
            if type(name) is not str:
                raise Reject("wrong_type", f"models[{i}] is {tname(name)}, expected string")
            self.check_model(name)
        if models[0] == models[1]:
            raise Reject("same_model_battle", f"both sides are {short(models[0])}")
        return (
            eid,
            ts,
            SERVED_TYPE,
            self.anony_of(obj),
            user,
            None,
            models[0],
            None,
            None,
            models[1],
            None,
            links,
        )


def _check_shown(shown: list, model_a: str, model_b: str) -> None:
    """The vote's ``models`` (names as shown to the voter) agree with its states."""
    if len(shown) != 2:
        raise Reject("models_mismatch", f"models has {len(shown)} names, expected 2")
    for i, (name, model) in enumerate(((shown[0], model_a), (shown[1], model_b))):
        if name is None or name == "":
            continue  # anonymous: the name was hidden from the voter
        if type(name) is not str:
            raise Reject("wrong_type", f"models[{i}] is {tname(name)}, expected string")
        if name != model:
            raise Reject(
                "models_mismatch", f"models[{i}] is {short(name)} but states[{i}] is {short(model)}"
            )


def messages(msgs: Any, where: str) -> Messages:
    """Normalise a message list (OpenAI dicts or FastChat pairs) into columns (step 9).

    Fast path: the common case (OpenAI dicts, known lower-case roles, non-blank string
    contents, lower-case image hashes on user turns) is recognised with C-level builtins
    over whole lists, no Python loop per message. Anything else takes the checked path,
    which alone decides reasons (and gives the same result where both accept).
    """
    if type(msgs) is list and 0 < len(msgs) <= MAX_MESSAGES:
        try:
            roles = [m["role"] for m in msgs]
            contents = [m["content"] for m in msgs]
            plain = ROLE_SET.issuperset(roles)
            # join raises TypeError unless every content is a str; when the total fits,
            # no single message can be too long
            total = len("".join(contents))
        except (TypeError, KeyError, IndexError):
            plain = False
        if (
            plain
            and "" not in contents
            and "user" in roles
            and "" not in map(str.strip, contents, repeat(_BLANK, len(contents)))
            and (total <= MAX_MESSAGE_CHARS or max(map(len, contents)) <= MAX_MESSAGE_CHARS)
        ):
            if sum(map(len, msgs)) == 2 * len(msgs):  # exactly {role, content} each
                return roles, contents, [_NO_IMAGES] * len(roles)
            images = [m.get("images") for m in msgs]
            # falsy but not None/[] ("" , {}, 0, false) must reach the checked path's
            # wrong_type, so "no images" here means exactly None or an empty list
            if all(refs is None or refs == [] for refs in images):
                return roles, contents, [_NO_IMAGES] * len(roles)
            if _plain_images(images, roles):
                return roles, contents, [refs or _NO_IMAGES for refs in images]
    return _messages_checked(msgs, where)


def _plain_images(images: list, roles: list[str]) -> bool:
    """Image lists that the checked path would accept unchanged (user turns, lower hex)."""
    for refs, role in zip(images, roles, strict=True):
        if refs is None:
            continue
        if type(refs) is not list:  # "", {}, 0, false: the checked path says wrong_type
            return False
        if refs:
            if role != "user":
                return False
            for ref in refs:
                if type(ref) is not str or LOWER_IMAGE_REF.fullmatch(ref) is None:
                    return False
    return True


def _messages_checked(msgs: Any, where: str) -> Messages:
    if type(msgs) is not list:
        if msgs is None:
            raise Reject("empty_messages", f"{where} has no messages")
        raise Reject("wrong_type", f"{where}.messages is {tname(msgs)}, expected list")
    if not msgs:
        raise Reject("empty_messages", f"{where}.messages is empty")
    if len(msgs) > MAX_MESSAGES:
        raise Reject("absurd_length", f"{where} has {len(msgs)} messages (max {MAX_MESSAGES})")
    roles: list[str] = []
    contents: list[str] = []
    images: list[list[str]] = []
    for i, msg in enumerate(msgs):
        kind = type(msg)
        if kind is dict:
            role = msg.get("role")
            content = msg.get("content")
            imgs = msg.get("images")
            if content is None and "content" not in msg:
                raise Reject("bad_message", f"{where}.messages[{i}] has no content")
        elif (kind is list or kind is tuple) and len(msg) == 2:
            role, content = msg
            imgs = None
            if type(content) is list or type(content) is tuple:
                # FastChat vision turn: [text, [image hashes]]
                if len(content) != 2 or type(content[1]) is not list:
                    raise Reject("bad_message", f"{where}.messages[{i}] content is a list")
                content, imgs = content
        else:
            raise Reject("bad_message", f"{where}.messages[{i}] is {tname(msg)} {short(msg)}")
        if type(role) is not str or role not in ROLE_SET:
            role = _odd_role(role, where, i)
        if type(content) is not str:
            if content is not None:
                raise Reject(
                    "wrong_type",
                    f"{where}.messages[{i}].content is {tname(content)}, expected string",
                )
            content = ""
        if imgs:
            if type(imgs) is not list:
                raise Reject("wrong_type", f"{where}.messages[{i}].images is {tname(imgs)}")
            if role != "user":
                raise Reject("bad_message", f"{where}.messages[{i}] is a {role} turn with images")
        elif imgs is not None and type(imgs) is not list:
            raise Reject("wrong_type", f"{where}.messages[{i}].images is {tname(imgs)}")
        if role == "user" and not imgs and blank_text(content):
            raise Reject("empty_content", f"{where}.messages[{i}] is a user turn without text")
        if len(content) > MAX_MESSAGE_CHARS:
            raise Reject(
                "absurd_length",
                f"{where}.messages[{i}] has {len(content)} chars (max {MAX_MESSAGE_CHARS})",
            )
        imgs = image_refs(imgs, where, i) if imgs else _NO_IMAGES
        roles.append(role)
        contents.append(content)
        images.append(imgs)
    if "user" not in roles:
        raise Reject("no_user_turn", f"{where} has no user turn")
    return roles, contents, images


def _odd_role(role: Any, where: str, i: int) -> str:
    if type(role) is not str:
        raise Reject("wrong_type", f"{where}.messages[{i}].role is {tname(role)}, expected string")
    low = role.lower()
    if low not in ROLE_SET:
        raise Reject("bad_role", f"{where}.messages[{i}].role is {short(role)}")
    return low


def image_refs(imgs: list, where: str, i: int) -> list[str]:
    """Lower-cased sha256 hex references; anything else is bad_image_ref."""
    out = []
    for ref in imgs:
        if type(ref) is not str or IMAGE_REF.fullmatch(ref) is None:
            raise Reject("bad_image_ref", f"{where}.messages[{i}] image ref {short(ref)}")
        out.append(ref.lower())
    return out
