"""PII spans in one text: candidate regexes (Python `re`) confirmed by kept validators.

This is the slow, exact half of redaction; `arena_assets.clean.pii` runs it only on the
texts that a vectorised polars prefilter (`PREFILTER`) flags, a few percent of traffic.

Validators, not hand-written checks: Google's `phonenumbers` (numbering plans of every
country), `python-stdnum` (Luhn, IBAN mod 97, national ids), `ipaddress`. Each detector
says what it accepts and why it leaves look-alikes alone (the precision rules: versions,
barcodes, math, order numbers, dates, UUIDs, hashes, documentation IPs); IP addresses are
judged in `arena_assets.clean.pii_ip`, phone numbers in `arena_assets.clean.pii_phone`,
street addresses in `arena_assets.clean.pii_address`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from stdnum import iban as std_iban
from stdnum import isbn, luhn
from stdnum.br import cpf
from stdnum.cn import ric
from stdnum.de import idnr
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.us import ssn

from arena_assets.clean.pii_address import (
    ADDRESS_CORES,
    ADDRESS_CORES_CASED,
    GATED,
    address_spans,
)
from arena_assets.clean.pii_ip import PATTERNS as IP_PATTERNS
from arena_assets.clean.pii_ip import ip_spans
from arena_assets.clean.pii_phone import is_phone
from arena_assets.clean.pii_reach import matches_before

Span = tuple[str, int, int]


# ---------------------------------------------------------------- e-mail
_IN_URL = re.compile(r"://[^\s/@]*$")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_EMAIL = re.compile(r"(?<![\w.+%'-])[\w.+%'-]+@(?:[\w-]+\.)+[^\W\d_]{2,24}(?![\w-])")
_TLDS = (
    "com|org|net|edu|gov|mil|int|info|biz|io|ai|co|me|dev|app|de|fr|es|it|pt|br|ru|"
    "cn|jp|in|uk|nl|be|ch|at|pl|se|no|dk|fi|ie|us|ca|au|mx|ar|kr|tw|hk|eu|tv|xyz"
)
_AT = r"(?:\s*[\[({<]\s*(?:at|arroba)\s*[\])}>]\s*|\s+(?:at|arroba)\s+)"
_DOT = r"(?:\s*[\[({<]\s*(?:dot|punto|ponto|point|punkt)\s*[\])}>]\s*|\s+(?:dot|punto|ponto|point|punkt)\s+)"
_SPELLED_EMAIL = re.compile(
    rf"(?i)(?<![\w.])[a-z0-9][\w.+-]*(?:{_DOT}[\w+-]+)*{_AT}[\w-]+(?:{_DOT}[\w-]+)*{_DOT}(?:{_TLDS})\b"
)


def _emails(text: str, stop: int | None = None) -> Iterator[Span]:
    for m in matches_before(_EMAIL, text, stop):
        if _IN_URL.search(text, max(0, m.start() - 80), m.start()):
            continue  # user:password@host of a URL: a secret (below), the host stays
        start, local = m.start(), m.group().split("@", 1)[0]
        # CJK sentences glue words to an address ("邮箱是zhang@163.com"): cut the local part
        # at its last CJK -> Latin switch so the sentence is kept and the address is not
        for i in range(len(local) - 1, 0, -1):
            if _CJK.match(local[i - 1]) and not _CJK.match(local[i]):
                start += i
                break
        yield "email", start, m.end()
    lower = text.lower()
    if any(
        w in lower for w in (" at ", "(at)", "[at]", "{at}", "<at>", "arroba")
    ):  # gate the slow one
        for m in matches_before(_SPELLED_EMAIL, text, stop):
            yield "email", m.start(), m.end()


# ---------------------------------------------------------------- secrets
_SECRET = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:proj-|ant-(?:api|admin)\d{2}-|svcacct-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"  # AWS access key id
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{40,}"  # GitHub
    r"|xox[abprse]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}"  # Stripe
    r"|hf_[A-Za-z0-9]{30,}|glpat-[A-Za-z0-9_-]{20,}"  # Hugging Face, GitLab
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"  # JWT
    r")"
)
# user:password@ of a URL: only the credentials are secret, the host stays readable
_URL_CREDENTIALS = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]{1,15}://([^\s:/@]{1,64}:[^\s/@]{1,128})@")
# key = value where the key names a secret and the value looks generated (long, mixed)
_ASSIGNED_SECRET = re.compile(
    r"(?i)(?:secret|token|api[_-]?key|access[_-]?key|password|passwd|pwd)[\w-]*[\"']?\s*[:=]\s*[\"']?"
    r"([A-Za-z0-9/+_.-]{16,})"
)


def _secrets(text: str, stop: int | None = None) -> Iterator[Span]:
    for m in matches_before(_SECRET, text, stop):
        yield "secret", m.start(), m.end()
    for m in matches_before(_URL_CREDENTIALS, text, stop):
        yield "secret", m.start(1), m.end(1)
    for m in matches_before(_ASSIGNED_SECRET, text, stop):
        value = m.group(1)
        if re.search(r"[0-9]", value) and re.search(r"[A-Za-z]", value):
            yield "secret", m.start(1), m.end(1)


# ---------------------------------------------------------------- digit runs
# A run of digits (ASCII or full-width) joined by at most 3 separator characters, with an
# optional leading "+" / "(": one candidate for cards, national ids and phones alike.
_D = "0-9\uff10-\uff19"
# a separator inside a number; a dot before a space ends a sentence ("... 555-0147. 1. Next")
_SEP = "(?:(?!\\.[ \u00a0])[ \u00a0.\\-/()\u2010-\u2013\uff0d\uff0e\uff08\uff09])"
_RUN = re.compile(
    # a run may follow "No." / "Nr." / "Tel." glued on ("No.4736150721484000"): an
    # abbreviation's dot, not a decimal point or a version's
    rf"(?:(?<=\b[Nn][OoRr]\.)|(?<=\b[Tt]el\.)|(?<![A-Za-z0-9_\uff10-\uff19.,#/-]))"
    rf"(?:[+\uff0b]\s?)?[(\uff08]?[{_D}]"
    rf"(?:[{_D}]|{_SEP}{{1,3}}(?=[{_D}]))*"
    rf"(?![A-Za-z0-9_\uff10-\uff19])"
)
# Numbers glued to the text around them, which _RUN leaves (its boundaries keep codes such
# as "AB12345678" out): a "+" number after anything ("WhatsApp+44 20 7946 0958",
# "xxxx+44 20 5555 0199", "0000+44 20 ..."), in groups (a "+" in base64 is never followed
# by a spaced group, nor is arithmetic in prose: "3+4"), and a card grouped in fours
# after anything but a digit ("card4024 0071 2239 1021", "...1021exp").
_GLUED = re.compile(
    rf"(?<![+\uff0b])[+\uff0b]\s?[(\uff08]?[{_D}]+(?:{_SEP}{{1,3}}[{_D}]+)+"
    r"|(?<![0-9])(?:[0-9]{4}([ -])[0-9]{4}\1[0-9]{4}\1[0-9]{1,7}|[0-9]{4}([ -])[0-9]{6}\2[0-9]{5})"
    r"(?![0-9]|[ -][0-9])"
)
_ID_WITH_LETTERS = re.compile(
    r"(?<![A-Za-z0-9])(?:\d{17}[0-9Xx]"  # China resident id
    r"|\d{8}[- ]?[A-Za-z]|[XYZxyz][- ]?\d{7}[- ]?[A-Za-z]"  # Spain DNI / NIE
    r"|[A-Za-z]{6}\d{2}[A-Za-z]\d{2}[A-Za-z]\d{3}[A-Za-z])(?![A-Za-z0-9])"
)  # Italy codice fiscale
_ID_KEYWORDS = {
    "ssn": re.compile(r"(?i)(?:ssn|social security|sozialversicherung)"),
    "aadhaar": re.compile(r"(?i)(?:aadhaa?r|आधार|uidai)"),
    "idnr": re.compile(r"(?i)(?:steuer|idnr|identifikationsnummer|tax id|tin\b)"),
    "cpf": re.compile(r"(?i)\bcpf\b"),
    "nir": re.compile(r"(?i)(?:sécu|secu|nir\b|insee|sécurité sociale|securite sociale)"),
}
_SSN_SHAPE = re.compile(r"^\d{3}([- ])\d{2}\1\d{4}$")
_CPF_SHAPE = re.compile(r"^\d{3}\.\d{3}\.\d{3}-\d{2}$")
_NIR_SHAPE = re.compile(r"^[12] ?\d{2} ?\d{2} ?\d{2} ?\d{3} ?\d{3} ?\d{2}$")
_AADHAAR_SHAPE = re.compile(r"^\d{4}([ -])\d{4}\1\d{4}$")
_DATE = re.compile(r"\d{1,2}([./-])\d{1,2}\1(?:\d{2}|\d{4})|\d{4}([./-])\d{1,2}\2\d{1,2}")
# a date and the hour of a time after it ("2023-01-20 12:34:56" stops at the colon)
_DATE_HOUR = re.compile(rf"(?:{_DATE.pattern})(?:[ T]\d{{1,2}})?")
# two spaces or more inside a run: aligned columns of a table ("0  2497  202305"), several
# numbers, not one grouped number
_COLUMNS = re.compile("[ \u00a0]{2,}")
_BOOK_WORDS = re.compile(r"(?i)(?:isbn|issn|ean|gtin|upc|doi|arxiv)\W{0,3}$")
_UUID_OR_HASH = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-|[0-9a-fA-F]{24,}")

# (lowest, highest) issuer prefix ranges of the open card brands, and the lengths they issue
_BRANDS = [
    (("4", "4"), (13, 16, 19)),  # Visa (13 only grouped, see _card)
    (("51", "55"), (16,)),
    (("2221", "2720"), (16,)),  # Mastercard
    (("34", "34"), (15,)),
    (("37", "37"), (15,)),  # Amex
    (("6011", "6011"), (16, 17, 18, 19)),
    (("644", "65"), (16, 17, 18, 19)),  # Discover
    (("3528", "3589"), (16, 17, 18, 19)),  # JCB
    (("300", "305"), (14, 16, 17, 18, 19)),
    (("36", "36"), (14, 16, 17, 18, 19)),
    (("38", "39"), (16, 17, 18, 19)),  # Diners
    (("62", "62"), (16, 17, 18, 19)),  # UnionPay
    (("50", "50"), (16, 17, 18, 19)),
    (("56", "69"), (16, 17, 18, 19)),  # Maestro
    (("2200", "2204"), (16, 17, 18, 19)),  # Mir
]


def _issued(digits: str) -> bool:
    for (low, high), lengths in _BRANDS:
        if len(digits) in lengths and low <= digits[: len(low)] <= high:
            return True
    return False


def _card(raw: str, digits: str) -> bool:
    separators = set(re.sub(r"\d", "", raw))
    if len(separators) > 1 or not 13 <= len(digits) <= 19:
        return False
    if not separators and len(digits) == 13:
        return False  # a bare 13-digit run is an EAN-13 barcode far more often than a card
    if separators and len(raw.split(next(iter(separators)))[0]) != 4:
        return False  # every card grouping starts with 4 digits
    return _issued(digits) and luhn.is_valid(digits)


def _national_id(raw: str, digits: str, before: str) -> bool:
    def context(kind: str) -> bool:
        return bool(_ID_KEYWORDS[kind].search(before))

    if len(digits) == 9 and (_SSN_SHAPE.match(raw) or (raw == digits and context("ssn"))):
        return ssn.is_valid(digits)
    if len(digits) == 12 and (_AADHAAR_SHAPE.match(raw) or context("aadhaar")):
        return aadhaar.is_valid(digits)
    if len(digits) == 11 and (_CPF_SHAPE.match(raw) or context("cpf")) and cpf.is_valid(digits):
        return True
    if len(digits) == 11 and context("idnr"):
        return idnr.is_valid(digits)
    if len(digits) == 15 and (_NIR_SHAPE.match(raw) or context("nir")):
        return nir.is_valid(digits)
    return False


def _candidates(text: str, stop: int | None) -> Iterator[tuple[int, str, bool]]:
    """(start, raw, glued) of each digit-run candidate, by start, each span once."""
    runs = {(m.start(), m.group()): False for m in matches_before(_RUN, text, stop)}
    for m in matches_before(_GLUED, text, stop):
        runs.setdefault((m.start(), m.group()), True)
    for (start, raw), glued in sorted(runs.items()):
        yield start, raw, glued


def _digit_runs(text: str, stop: int | None = None) -> Iterator[Span]:
    for start, found, glued in _candidates(text, stop):
        raw = found.rstrip(" .-/(")
        norm = unicodedata.normalize("NFKC", raw)  # full-width digits / "＋" / "－"
        digits = re.sub(r"\D", "", norm)
        if len(digits) < 7:
            continue
        end = start + len(raw)
        # a run inside a hash or UUID is part of it; a glued candidate starts its own token
        token_start = start if glued else text.rfind(" ", 0, start) + 1
        if _UUID_OR_HASH.search(text[token_start : end + 40].split(" ")[0]):
            continue
        before, after = text[max(0, start - 40) : start], text[end : end + 80]
        core = norm.lstrip("+(").rstrip(")")
        if _DATE_HOUR.fullmatch(core) or _COLUMNS.search(core) or _BOOK_WORDS.search(before):
            continue  # dates; table columns; ISBN / ISSN / EAN codes (named so in the text)
        if core.count("-") >= 3 and isbn.is_valid(digits):  # the cheap test first
            continue  # a hyphenated ISBN (0-306-40615-2)
        if _card(core, digits):
            yield "card_number", start, end
        elif _national_id(core, digits, before):
            yield "national_id", start, end
        elif is_phone(norm, digits, before, after):
            yield "phone", start, end


def _letter_ids(text: str, stop: int | None = None) -> Iterator[Span]:
    for m in matches_before(_ID_WITH_LETTERS, text, stop):
        value = m.group().upper()
        if value[0].isalpha() and value[1].isalpha():
            ok = codicefiscale.is_valid(value)
        elif len(value) == 18 and value[:17].isdigit():
            ok = ric.is_valid(value)
        else:
            ok = dni.is_valid(value) or nie.is_valid(value)
        if ok:
            yield "national_id", m.start(), m.end()


# ---------------------------------------------------------------- passport numbers
# Only after a passport word: a passport number has no checksum shared across countries and
# looks like any other code (US/UK 9 digits, DE "C01X00T47", FR "12AB34567"), so the word
# is the evidence. Counted as national_id (an identity document number).
PASSPORT_WORDS = (
    "passport|passeport|pasaporte|passaporto|passaporte|reisepass|paspoort|"
    "paszport|паспорт|护照|護照|パスポート|여권"
)
_PASSPORT = re.compile(
    rf"(?i:{PASSPORT_WORDS})(?:[^\n\d]{{0,30}}?)(?<![A-Za-z0-9])"
    r"((?=[A-Z0-9]{6,10}(?![A-Za-z0-9]))[A-Z]{0,3}[0-9][A-Z0-9]{4,9})(?![A-Za-z0-9])"
)


def _passports(text: str, stop: int | None = None) -> Iterator[Span]:
    for m in matches_before(_PASSPORT, text, stop):
        if sum(c.isdigit() for c in m.group(1)) >= 4:
            yield "national_id", m.start(1), m.end(1)


# ---------------------------------------------------------------- IBAN
# country code, check digits, then groups; a space after the country only in capitals
# ("IT 60 X 05428 ..."), else "to 41 11 1111 ..." would be read as a candidate
_IBAN = re.compile(r"(?<![A-Za-z0-9])(?:[A-Z]{2} ?|[A-Za-z]{2})\d{2}(?:[ -]?[A-Za-z0-9]{1,5}){3,9}")


def _ibans(text: str, stop: int | None = None) -> Iterator[Span]:
    for m in matches_before(_IBAN, text, stop):
        pieces = list(re.finditer(r"[A-Za-z0-9]+", m.group()))
        for k in range(len(pieces), 0, -1):  # the longest prefix of groups that validates
            compact = "".join(p.group() for p in pieces[:k])
            if len(compact) < 15:
                break
            if std_iban.is_valid(compact.upper()):
                yield "iban", m.start(), m.start() + pieces[k - 1].end()
                break


# ---------------------------------------------------------------- all together
# every regex the detectors scan a text with: `pii_reach` bounds the scan of each
PATTERNS = (
    _EMAIL,
    _SPELLED_EMAIL,
    _SECRET,
    _URL_CREDENTIALS,
    _ASSIGNED_SECRET,
    _RUN,
    _GLUED,
    _ID_WITH_LETTERS,
    _PASSPORT,
    _IBAN,
    *IP_PATTERNS,
    ADDRESS_CORES,
    ADDRESS_CORES_CASED,
)
# detectors by the prefilter group (arena_assets.clean.pii) that lets a text reach them
DETECTORS = {
    "secret": (_secrets,),
    "email": (_emails,),
    "number": (_ibans, _letter_ids, ip_spans, _digit_runs),
    "address": (address_spans,),
    "passport": (_passports,),
}
# on overlap the longer span wins; on a tie, the earlier type in this order
_PRIORITY = {
    t: i
    for i, t in enumerate(
        (
            "secret",
            "email",
            "iban",
            "national_id",
            "card_number",
            "ip_address",
            "phone",
            "street_address",
        )
    )
}


def detect_spans(
    text: str, groups: frozenset[str] | None = None, stop: int | None = None
) -> list[Span]:
    """Non-overlapping (type, start, end) PII spans of `text`, sorted by start; ``groups``
    limits the detectors to those of the prefilter groups the text matched.

    Overlapping finds merge into one span (an address that holds a phone number is
    redacted whole), typed as the longer of the two.

    ``stop``: only the spans that start before it, exactly as the whole text gives them,
    validating only the candidates that start there (see `spans_before`).
    """
    found: list[Span] = []
    for g in DETECTORS if groups is None else groups:
        if g == "address" and groups is not None and GATED in groups:
            # the gates were run and may have ruled out an address pattern (see pii_address)
            found += address_spans(
                text, "address:cores" in groups, "address:cased" in groups, stop=stop
            )
        elif g in DETECTORS:  # "address:..." gate names are no detectors of their own
            found += [span for detector in DETECTORS[g] for span in detector(text, stop=stop)]
    if stop is not None:
        found = [s for s in found if s[1] < stop]
    found.sort(key=lambda s: (s[1], -(s[2] - s[1]), _PRIORITY[s[0]]))
    kept: list[Span] = []
    for kind, start, end in found:
        if kept and start < kept[-1][2]:
            last_kind, last_start, last_end = kept[-1]
            if end > last_end:
                longer = kind if end - start > last_end - last_start else last_kind
                kept[-1] = (longer, last_start, end)
            continue
        kept.append((kind, start, end))
    return kept


def spans_before(text: str, groups: frozenset[str] | None, stop: int) -> tuple[list[Span], int]:
    """(spans, stop'): the spans of ``detect_spans(text, groups)`` that start before stop',
    exactly, for some stop' >= ``stop``, at the cost of validating only the candidates that
    start before stop'.

    Why exact: every detector scans the whole text left to right (the candidates, and the
    context each is judged in, are those of the whole text) and only stops validating at
    ``stop``; each span starts at or after its candidate. What the whole text adds beyond
    ``stop`` is spans that start there, which can change a span before it only by
    overlapping it (a merge). So while a span found ends past ``stop``, ``stop`` moves to
    its end; once none does, no later span can touch one before ``stop``.
    """
    while True:
        spans = detect_spans(text, groups, stop)
        end = max((e for _, _, e in spans), default=0)
        if end <= stop or stop >= len(text):
            return spans, stop
        stop = end
