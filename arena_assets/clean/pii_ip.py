"""IP addresses in one text: candidates by pattern, judged by the stdlib's `ipaddress`.

Kept readable on purpose: loopback, unspecified and multicast addresses, the documentation
ranges (RFC 5737, RFC 3849, RFC 9637: assigned to nobody, common in code and examples),
a network written with its prefix length (10.0.0.0/8 names no one), versions and section
numbers written as dotted quads ("version 2.4.1.0", "1.2.3.4"), and colon-joined bytes
(MAC addresses, disk WWNs, key dumps: every group one or two hex digits).

IPv6 is judged by how it is written:

- an address written in full, eight groups and no "::" ("a490:1c2f:...:cdd2"), is taken
  as an address wherever it falls, also in ranges that IANA keeps reserved: a person
  who writes eight colon-joined groups means an address, and the reserved ranges are
  too many to tell from a typo or a made-up example (all but 2000::/3, fc00::/7 and
  fe80::/10 are reserved);
- an abbreviated one ("2a01:4f8::1") must fall outside the reserved ranges: "a::b",
  "std::map", "Foo::Bar" are code far more often than addresses in a reserved range.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from arena_assets.clean.pii_reach import matches_before

Span = tuple[str, int, int]

_V4 = re.compile(r"(?<![A-Za-z0-9_.])(?:\d{1,3}\.){3}\d{1,3}(?![A-Za-z0-9_]|\.\d)")
_V6 = re.compile(
    r"(?<![A-Za-z0-9_:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}"
    r"(?:(?<=:)(?:\d{1,3}\.){3}\d{1,3})?(?![A-Za-z0-9_:]|\.\d)"
)
# a fully written address (8 groups) right after a label and a colon ("IPv6:2a02:...",
# "ip:fe80:..."): _V6 cannot start after a colon (it would start inside an address)
_V6_AFTER_LABEL = re.compile(
    r"(?<=:)[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}(?![0-9A-Za-z_:]|\.\d)"
)
_FULL_V6 = re.compile(r"[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}")
PATTERNS = (_V4, _V6, _V6_AFTER_LABEL)  # what ip_spans scans a text with
_LABEL_BEFORE = re.compile(r"[\w.-]*$")
_HEX_GROUP = re.compile(r"[0-9A-Fa-f]{0,4}")
# never assigned to anyone, so an address there is an example, not a user
_DOCUMENTATION = [
    ipaddress.ip_network(n)
    for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20")
]
_VERSION_WORDS = re.compile(
    r"(?i)(?<![a-z])(?:version|ver\.?|v|release|rel\.?|build|section|sect?\.|§|chapter|rule|upgrade|update|"
    r"python|node|java|kernel|firmware|версия|バージョン|版本|versão|versione|versión|abschnitt)"
    r"\W{0,3}(?:from\W{1,3})?$"
)


def _documentation(addr: ipaddress._BaseAddress) -> bool:
    return any(addr in net for net in _DOCUMENTATION if net.version == addr.version)


def _personal_ip(addr: ipaddress._BaseAddress) -> bool:
    if addr.is_loopback or addr.is_unspecified or addr.is_multicast or addr.is_reserved:
        return False
    return not _documentation(addr)


def _personal_full_v6(token: str, addr: ipaddress.IPv6Address) -> bool:
    """An address written in all eight groups: personal unless it names no host (loopback,
    unspecified, multicast, documentation), embeds an IPv4 address judged as such, or is
    colon-joined bytes rather than an address (every group at most two hex digits)."""
    if addr.ipv4_mapped is not None:
        return _personal_ip(addr.ipv4_mapped)
    if all(len(g) <= 2 for g in token.split(":")):
        return False
    if addr.is_loopback or addr.is_unspecified or addr.is_multicast:
        return False
    return not _documentation(addr) and int(addr) >> 120 != 0  # ::/8: v4-compatible, ::1 ...


def ip_spans(text: str, stop: int | None = None) -> Iterator[Span]:
    """("ip_address", start, end) of each personal address starting before ``stop``."""
    for m in matches_before(_V4, text, stop):
        try:
            addr = ipaddress.IPv4Address(m.group())
        except ValueError:
            continue
        octets = m.group().split(".")
        if all(len(o) == 1 for o in octets) or _VERSION_WORDS.search(
            text[max(0, m.start() - 24) : m.start()]
        ):
            continue  # 1.2.3.4 / "version 2.4.1.0": a version or section number, not a host
        if text.startswith("/", m.end()) and octets[-1] == "0":
            continue  # a network (CIDR) names no one
        if _personal_ip(addr):
            yield "ip_address", m.start(), m.end()
    for m in matches_before(_V6, text, stop):
        token = m.group()
        groups = [g for g in re.split(r"[:.]", token) if g]
        if len(groups) < 2 or sum(len(g) for g in groups) < 6:
            continue  # "std::", "a::b": code, not addresses
        try:
            addr = ipaddress.IPv6Address(token)
        except ValueError:
            continue
        if _FULL_V6.fullmatch(token):
            personal = _personal_full_v6(token, addr)
        else:  # ::ffff:a.b.c.d is judged as a.b.c.d
            personal = _personal_ip(addr.ipv4_mapped or addr)
        if personal:
            yield "ip_address", m.start(), m.end()
    for m in matches_before(_V6_AFTER_LABEL, text, stop):
        label = _LABEL_BEFORE.search(text, 0, m.start() - 1).group()
        if not label or _HEX_GROUP.fullmatch(label):
            continue  # the colon belongs to a longer hex run, not to a label
        if _personal_full_v6(m.group(), ipaddress.IPv6Address(m.group())):
            yield "ip_address", m.start(), m.end()
