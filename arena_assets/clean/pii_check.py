"""An independent PII scanner for the `no_raw_pii` check: tokens and validators, no regex.

The redactor (`pii_detect`) finds candidates with regular expressions; if the check ran
the same expressions on the redacted text it would pass by construction. This scanner
gets to the same validators by another road: it NFKC-normalises the text, splits it into
whitespace tokens, groups neighbouring digit tokens into numbers by character classes,
and asks the libraries: `phonenumbers.PhoneNumberMatcher` (Google's own text scanner,
not the redactor's parse-a-candidate approach) for phones, `stdnum` for cards, IBANs and
ids, `ipaddress` for addresses. Street addresses are judged on token windows (a house
number next to a street word). It aims at high-confidence finds: a flag here means the
redactor missed something that is certainly personal data.
"""

from __future__ import annotations

import ipaddress
import unicodedata

import phonenumbers
import polars as pl
from stdnum import iban, luhn
from stdnum.cn import ric
from stdnum.it import codicefiscale
from stdnum.us import ssn

_PUNCT = "\"'`()[]{}<>,;!?。，、：；！？「」（）"
_SEPARATORS = set(" -./()")
_CJK_AS_SPACE = {
    c: " " for r in ((0x3000, 0xA000), (0xAC00, 0xD7B0), (0xFF00, 0xFFF0)) for c in range(*r)
}
_KEY_PREFIXES = (
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "AKIA",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "AIza",
    "hf_",
    "glpat-",
)
_STREET_WORDS = {
    "street",
    "st",
    "st.",
    "avenue",
    "ave",
    "ave.",
    "road",
    "rd",
    "rd.",
    "boulevard",
    "blvd",
    "lane",
    "ln",
    "drive",
    "dr",
    "dr.",
    "way",
    "court",
    "place",
    "terrace",
    "rue",
    "calle",
    "via",
    "rua",
    "avenida",
    "ул.",
    "улица",
}
_NUMBER_FIRST_WORDS = {
    "street",
    "st",
    "st.",
    "avenue",
    "ave",
    "ave.",
    "road",
    "rd",
    "rd.",
    "boulevard",
    "blvd",
    "lane",
    "ln",
    "drive",
    "dr",
    "dr.",
    "way",
    "court",
    "place",
    "terrace",
    "rue",
}
# prose words that never stand between a house number and its street
_LINK_WORDS = {"and", "or", "the", "of", "in", "on", "to", "a", "an", "und", "et", "y", "e", "и"}
_STREET_SUFFIXES = ("straße", "strasse", "str.", "gasse", "allee", "straat", "gracht")
_NOT_PERSONAL = [
    ipaddress.ip_network(n)
    for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20")
]
# international notation anywhere, plus the national notations the matcher reads without
# false alarms on timestamps and netmasks (a wider list flags 1715941800 as a German mobile)
_PHONE_REGIONS = ("ZZ", "US", "CN")


def _ip(token: str) -> bool:
    host = token.strip("[]").split("%")[0]
    if host.count(".") == 3 and all(p.isdigit() and len(p) == 1 for p in host.split(".")):
        return False  # 1.2.3.4 is how versions look; the redactor makes the same call
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if addr.is_loopback or addr.is_unspecified or addr.is_multicast or addr.is_reserved:
        return False
    return not any(addr.version == n.version and addr in n for n in _NOT_PERSONAL)


def _numbers(tokens: list[str]) -> list[str]:
    """Neighbouring tokens made only of digits and separators, joined into one number."""
    out, current = [], []
    for token in tokens + [""]:
        bare = token.lstrip("+")
        if (
            bare
            and any(c.isdigit() for c in bare)
            and all(c.isdigit() or c in _SEPARATORS for c in bare)
        ):
            current.append(token)
            continue
        if current:
            out.append(" ".join(current))
        current = []
    return out


_NATIONAL_GROUPS = {"US": ((3, 3, 4), (1, 3, 3, 4)), "CN": ((11,), (3, 4, 4))}


def _groups(raw: str) -> tuple[int, ...]:
    """Lengths of the digit groups of a number as written: (3, 3, 4) for (415) 555-0132."""
    lengths, run = [], 0
    for c in raw + " ":
        if c.isdigit():
            run += 1
        elif run:
            lengths.append(run)
            run = 0
    return tuple(lengths)


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def find_raw_pii(text: str) -> list[tuple[str, str]]:
    """(type, value) of each certain PII item left in `text` (empty: nothing found)."""
    # CJK text has no spaces: its characters separate tokens ("通过139.135.181.122联系我")
    norm = unicodedata.normalize("NFKC", text).translate(_CJK_AS_SPACE)
    raw = norm.split()
    tokens = [t.strip(_PUNCT).rstrip(".") for t in raw]
    found: list[tuple[str, str]] = []
    for i, token in enumerate(tokens):
        lowered = token.lower()
        if (
            token.isalpha()
            and lowered not in _STREET_WORDS
            and not lowered.endswith(_STREET_SUFFIXES)
        ):
            continue  # plain words, most of any text
        if "@" in token:
            local, _, domain = token.rpartition("@")
            if "://" in local:  # a URL: user:password@host is a secret, the host is not an address
                if ":" in local.split("://", 1)[1]:
                    found.append(("secret", token))
            elif local and "." in domain.strip(".") and domain.rsplit(".", 1)[1].isalpha():
                found.append(("email", token))
        if token.startswith(_KEY_PREFIXES) and len(token) >= 20:
            found.append(("secret", token))
        if token.startswith("eyJ") and token.count(".") == 2 and len(token) > 40:
            found.append(("secret", token))
        if (":" in token or token.count(".") == 3) and _ip(token.rstrip(".:")):
            found.append(("ip_address", token))
        upper = token.upper()
        if len(upper) == 16 and upper[:6].isalpha() and codicefiscale.is_valid(upper):
            found.append(("national_id", token))
        if len(upper) == 18 and upper[:17].isdigit() and ric.is_valid(upper):
            found.append(("national_id", token))
        lower = token.lower()
        if lower in _STREET_WORDS or lower.endswith(_STREET_SUFFIXES):
            # English puts the house number first ("12 Elm Street"), the others after it
            first = lower in _NUMBER_FIRST_WORDS
            if not first and raw[i].endswith((".", "?", "!", ":", ";")):
                continue  # its sentence ends here: "placa de rua?\n1. ..." lists, not a house
            window = tokens[max(0, i - 4) : i][::-1] if first else tokens[i + 1 : i + 5]
            window = window[
                : next((k for k, w in enumerate(window) if w.lower() in _LINK_WORDS), 4)
            ]
            if any(w.rstrip(",").isdigit() and len(w.rstrip(",")) <= 5 for w in window):
                found.append(("street_address", " ".join(tokens[max(0, i - 4) : i + 5])))
    for number in _numbers(tokens):
        digits = _digits(number)
        if 15 <= len(digits) <= 16 and digits[0] in "3456" and luhn.is_valid(digits):
            found.append(("card_number", number))
        elif len(digits) == 9 and number.count("-") == 2 and ssn.is_valid(digits):
            found.append(("national_id", number))
    # IBAN: a token that starts with a country code and check digits, plus the groups after it
    for i, token in enumerate(tokens):
        if len(token) >= 4 and token[:2].isalpha() and token[2:4].isdigit():
            for k in range(min(len(tokens), i + 9), i, -1):
                compact = "".join(tokens[i:k]).upper()
                if 15 <= len(compact) <= 34 and compact.isalnum() and iban.is_valid(compact):
                    found.append(("iban", " ".join(tokens[i:k])))
                    break
    for number in _numbers(tokens):
        if len(_digits(number)) >= 7 and _is_phone(number):
            found.append(("phone", number))
    return found


def _is_phone(number: str) -> bool:
    for region in _PHONE_REGIONS:
        # "+..." and the US 3-3-4 grouping are phones even with an unassigned area code
        leniency = phonenumbers.Leniency.VALID if region == "CN" else phonenumbers.Leniency.POSSIBLE
        for match in phonenumbers.PhoneNumberMatcher(number, region, leniency=leniency):
            if region == "ZZ" or _groups(match.raw_string) in _NATIONAL_GROUPS[region]:
                return True
    return False


# Texts that cannot hold anything find_raw_pii looks for: no "@", no key prefix, no run of
# seven digit-or-separator characters, no street word next to a digit. A coarse screen
# (not the redactor's prefilter), run by polars so that only the rest reach Python.
_SCREEN = (
    "@|://|sk-|sk_|rk_|AKIA|gh[opsu]_|github_pat_|xox[bp]-|AIza|hf_|glpat-|eyJ"
    "|[0-9](?:[ ()./+-]{0,2}[0-9]){6}|[０-９]{2}|[0-9]{2}[A-Z][0-9]{2}[A-Z][0-9]{3}"
    "|(?i:street|avenue|road|lane|drive|boulevard|rue|calle|avenida|rua|straße|strasse|str\\.|gasse|allee"
    "|straat|gracht|улица|ул\\.)[^0-9]{0,3}[0-9]|[0-9] [A-Za-z ,.'-]{1,24}(?-u:\\b)(?i:street|avenue|road|lane|drive|way|st|ave|rd|dr)(?-u:\\b)"
)


def has_raw_pii(texts: pl.Series) -> pl.Series:
    """Per text: does `find_raw_pii` find anything (screened texts only reach Python)."""
    out = pl.Series(texts.name, [False] * len(texts), dtype=pl.Boolean)
    candidates = texts.str.contains(_SCREEN).fill_null(False).arg_true()
    if len(candidates):
        flags = [bool(find_raw_pii(t)) for t in texts.gather(candidates).to_list()]
        out = out.scatter(candidates, flags)
    return out
