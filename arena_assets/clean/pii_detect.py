"""PII spans in one text: candidate regexes (Python `re`) confirmed by kept validators.

This is the slow, exact half of redaction; `arena_assets.clean.pii` runs it only on the
texts that a vectorised polars prefilter (`PREFILTER`) flags, a few percent of traffic.

Validators, not hand-written checks: Google's `phonenumbers` (numbering plans of every
country), `python-stdnum` (Luhn, IBAN mod 97, national ids), `ipaddress`. Each detector
below says what it accepts and why it leaves look-alikes alone (the precision rules:
versions, barcodes, math, order numbers, dates, UUIDs, hashes, documentation IPs).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterator

import phonenumbers
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

from arena_assets.clean.pii_address import GATED, address_spans

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


def _emails(text: str) -> Iterator[Span]:
    for m in _EMAIL.finditer(text):
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
        for m in _SPELLED_EMAIL.finditer(text):
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


def _secrets(text: str) -> Iterator[Span]:
    for m in _SECRET.finditer(text):
        yield "secret", m.start(), m.end()
    for m in _URL_CREDENTIALS.finditer(text):
        yield "secret", m.start(1), m.end(1)
    for m in _ASSIGNED_SECRET.finditer(text):
        value = m.group(1)
        if re.search(r"[0-9]", value) and re.search(r"[A-Za-z]", value):
            yield "secret", m.start(1), m.end(1)


# ---------------------------------------------------------------- IP addresses
_V4 = re.compile(r"(?<![A-Za-z0-9_.])(?:\d{1,3}\.){3}\d{1,3}(?![A-Za-z0-9_]|\.\d)")
_V6 = re.compile(
    r"(?<![A-Za-z0-9_:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:(?<=:)(?:\d{1,3}\.){3}\d{1,3})?(?![A-Za-z0-9_:]|\.\d)"
)
# a fully written address (8 groups) right after a label and a colon ("IPv6:2a02:...",
# "ip:fe80:..."): _V6 cannot start after a colon (it would start inside an address)
_V6_AFTER_LABEL = re.compile(
    r"(?<=:)[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}(?![0-9A-Za-z_:]|\.\d)"
)
_LABEL_BEFORE = re.compile(r"[\w.-]*$")
_HEX_GROUP = re.compile(r"[0-9A-Fa-f]{0,4}")
# RFC 5737 / RFC 3849: never assigned to anyone, so an address there is an example, not a user
_DOCUMENTATION = [
    ipaddress.ip_network(n)
    for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
]
_VERSION_WORDS = re.compile(
    r"(?i)(?<![a-z])(?:version|ver\.?|v|release|rel\.?|build|section|sect?\.|§|chapter|rule|upgrade|update|"
    r"python|node|java|kernel|firmware|версия|バージョン|版本|versão|versione|versión|abschnitt)"
    r"\W{0,3}(?:from\W{1,3})?$"
)


def _personal_ip(addr: ipaddress._BaseAddress) -> bool:
    if addr.is_loopback or addr.is_unspecified or addr.is_multicast or addr.is_reserved:
        return False
    return not any(addr in net for net in _DOCUMENTATION if net.version == addr.version)


def _ips(text: str) -> Iterator[Span]:
    for m in _V4.finditer(text):
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
    for m in _V6.finditer(text):
        token = m.group()
        groups = [g for g in re.split(r"[:.]", token) if g]
        if len(groups) < 2 or sum(len(g) for g in groups) < 6:
            continue  # "std::", "a::b": code, not addresses
        try:
            addr = ipaddress.IPv6Address(token)
        except ValueError:
            continue
        if _personal_ip(addr.ipv4_mapped or addr):  # ::ffff:a.b.c.d is judged as a.b.c.d
            yield "ip_address", m.start(), m.end()
    for m in _V6_AFTER_LABEL.finditer(text):
        label = _LABEL_BEFORE.search(text, 0, m.start() - 1).group()
        if not label or _HEX_GROUP.fullmatch(label):
            continue  # the colon belongs to a longer hex run, not to a label
        if _personal_ip(ipaddress.IPv6Address(m.group())):
            yield "ip_address", m.start(), m.end()


# ---------------------------------------------------------------- digit runs
# A run of digits (ASCII or full-width) joined by at most 3 separator characters, with an
# optional leading "+" / "(": one candidate for cards, national ids and phones alike.
_D = "0-9\uff10-\uff19"
_RUN = re.compile(
    # a run may follow "No." / "Nr." / "Tel." glued on ("No.4736150721484000"): an
    # abbreviation's dot, not a decimal point or a version's
    rf"(?:(?<=\b[Nn][OoRr]\.)|(?<=\b[Tt]el\.)|(?<![A-Za-z0-9_\uff10-\uff19.,#/-]))"
    rf"(?:[+\uff0b]\s?)?[(\uff08]?[{_D}]"
    rf"(?:[{_D}]|[ \u00a0.\-/()\u2010-\u2013\uff0d\uff0e\uff08\uff09]{{1,3}}(?=[{_D}]))*"
    rf"(?![A-Za-z0-9_\uff10-\uff19])"
)
_MATH = re.compile(r"[=*^×÷<>]\s*$|^\s*(?:[=*^×÷<>]|[+\-/]\s+\d)")
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
_PHONE_WORDS = re.compile(
    r"(?i)(?:tel|phone|call|mobile|cell|whatsapp|fax|handy|ruf|anruf|appel|portable|móvil|movil|"
    r"my number(?!s)|number is|reach me|text me|ring me|contact me|nummer|numéro|número|tlf|sms|"
    r"llam|celular|telefone|cellulare|chiam|телефон|звон|номер|电话|手机|電話|携帯|नंबर|फ़ोन|फोन|कॉल)"
)
_SSN_SHAPE = re.compile(r"^\d{3}([- ])\d{2}\1\d{4}$")
_CPF_SHAPE = re.compile(r"^\d{3}\.\d{3}\.\d{3}-\d{2}$")
_NIR_SHAPE = re.compile(r"^[12] ?\d{2} ?\d{2} ?\d{2} ?\d{3} ?\d{3} ?\d{2}$")
_AADHAAR_SHAPE = re.compile(r"^\d{4}([ -])\d{4}\1\d{4}$")
_DATE = re.compile(r"\d{1,2}([./-])\d{1,2}\1(?:\d{2}|\d{4})|\d{4}([./-])\d{1,2}\2\d{1,2}")
_DOTTED_PHONE = re.compile(
    r"\(?\d{3}\)?\.\d{3}\.\d{4}|0\d(?:\.\d{2}){4}|\+?[\d ]+(?:\.\d{2}){4}|\d{3}\.\d{4}"
)
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


def _phone(raw: str, digits: str, before: str, after: str) -> bool:
    if not 7 <= len(digits) <= 15 or _MATH.search(before) or _MATH.search(after):
        return False
    text = raw.strip()
    if "." in text and not _DOTTED_PHONE.fullmatch(text):
        return False  # dots join versions, IPs and decimals; phones only in 3.3.4 / 2.2.2.2.2
    groups = re.findall(r"\d+", text)
    if sum(len(g) == 1 for g in groups) > 2:
        return False  # "6 8 4 2 4 6 3 1": a digit sequence (real arena prompt), not a phone
    if len(groups) == 2 and "-" in text and groups[0].endswith("00") and groups[1].endswith("00"):
        return False  # "20000-30000": a range
    separated = bool(re.search(r"[ .\-/()]", text.lstrip("+")))
    if text.startswith("+") or (digits.startswith("00") and not digits.startswith("000")):
        try:
            number = phonenumbers.parse(
                "+" + digits[2:] if not text.startswith("+") else text, None
            )
        except phonenumbers.NumberParseException:
            return False
        return phonenumbers.is_possible_number(number)
    keyword = bool(_PHONE_WORDS.search(before))
    small = all(len(g) <= 2 for g in groups) and not text.startswith(("+", "("))
    if small and (any(len(g) == 1 for g in groups) or not (keyword or groups[0].startswith("0"))):
        return False  # "42 17 8 99 23": a list of small numbers (spaced pairs need a trunk 0)
    if keyword and len(digits) == 7 and re.fullmatch(r"\d{3}[ .\-]\d{4}", text):
        return True  # "call me at 538-2701": a local number, dialled without its area code
    if len(digits) < 9 and not keyword:
        return False  # national numbers are 9+ digits nearly everywhere; shorter ones need a word
    if (
        not separated
        and not keyword
        and not (re.fullmatch(r"1[3-9]\d{9}", digits) or re.fullmatch(r"0\d{9,11}", digits))
    ):
        return False  # a bare digit run needs a phone word, or the shape of a CN mobile / trunk-0 number
    if re.fullmatch(r"\(?\d{3}\)?[ .\-]?\d{3}[ .\-]\d{4}", text) or re.fullmatch(
        r"1[ .\-]\d{3}[ .\-]\d{3}[ .\-]\d{4}", text
    ):
        number = phonenumbers.parse(digits[-10:], "US")  # NANP shape, area code not checked
        return phonenumbers.is_possible_number(number)
    for region in _regions(digits):
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(digits, region)):
                return True
        except phonenumbers.NumberParseException:
            continue
    return False


def _regions(digits: str) -> tuple[str, ...]:
    """Regions whose national notation a digit string could be written in."""
    if digits.startswith("0"):
        return ("DE", "GB", "FR", "JP", "IN", "IT", "NL", "AT", "CH", "BR", "KR", "AU", "TR")
    if digits.startswith("8") and len(digits) == 11:
        return ("RU",)
    return ("CN", "US", "IN", "ES", "IT", "BR", "MX", "PL", "PT")


def _digit_runs(text: str) -> Iterator[Span]:
    for m in _RUN.finditer(text):
        raw = m.group().rstrip(" .-/(")
        norm = unicodedata.normalize("NFKC", raw)  # full-width digits / "＋" / "－"
        digits = re.sub(r"\D", "", norm)
        if len(digits) < 7:
            continue
        start, end = m.start(), m.start() + len(raw)
        token_start = text.rfind(" ", 0, start) + 1
        if _UUID_OR_HASH.search(text[token_start : end + 40].split(" ")[0]):
            continue
        before, after = text[max(0, start - 40) : start], text[end : end + 8]
        core = norm.lstrip("+(").rstrip(")")
        if _DATE.fullmatch(core) or _BOOK_WORDS.search(before):
            continue  # dates; ISBN / ISSN / EAN codes (named so in the text)
        if core.count("-") >= 3 and isbn.is_valid(digits):  # the cheap test first
            continue  # a hyphenated ISBN (0-306-40615-2)
        if _card(core, digits):
            yield "card_number", start, end
        elif _national_id(core, digits, before):
            yield "national_id", start, end
        elif _phone(norm, digits, before, after):
            yield "phone", start, end


def _letter_ids(text: str) -> Iterator[Span]:
    for m in _ID_WITH_LETTERS.finditer(text):
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


def _passports(text: str) -> Iterator[Span]:
    for m in _PASSPORT.finditer(text):
        if sum(c.isdigit() for c in m.group(1)) >= 4:
            yield "national_id", m.start(1), m.end(1)


# ---------------------------------------------------------------- IBAN
# country code, check digits, then groups; a space after the country only in capitals
# ("IT 60 X 05428 ..."), else "to 41 11 1111 ..." would be read as a candidate
_IBAN = re.compile(r"(?<![A-Za-z0-9])(?:[A-Z]{2} ?|[A-Za-z]{2})\d{2}(?:[ -]?[A-Za-z0-9]{1,5}){3,9}")


def _ibans(text: str) -> Iterator[Span]:
    for m in _IBAN.finditer(text):
        pieces = list(re.finditer(r"[A-Za-z0-9]+", m.group()))
        for k in range(len(pieces), 0, -1):  # the longest prefix of groups that validates
            compact = "".join(p.group() for p in pieces[:k])
            if len(compact) < 15:
                break
            if std_iban.is_valid(compact.upper()):
                yield "iban", m.start(), m.start() + pieces[k - 1].end()
                break


# ---------------------------------------------------------------- all together
# detectors by the prefilter group (arena_assets.clean.pii) that lets a text reach them
DETECTORS = {
    "secret": (_secrets,),
    "email": (_emails,),
    "number": (_ibans, _letter_ids, _ips, _digit_runs),
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


def detect_spans(text: str, groups: frozenset[str] | None = None) -> list[Span]:
    """Non-overlapping (type, start, end) PII spans of `text`, sorted by start; ``groups``
    limits the detectors to those of the prefilter groups the text matched.

    Overlapping finds merge into one span (an address that holds a phone number is
    redacted whole), typed as the longer of the two.
    """
    found: list[Span] = []
    for g in DETECTORS if groups is None else groups:
        if g == "address" and groups is not None and GATED in groups:
            # the gates were run and may have ruled out an address pattern (see pii_address)
            found += address_spans(text, "address:cores" in groups, "address:cased" in groups)
        elif g in DETECTORS:  # "address:..." gate names are no detectors of their own
            found += [span for detector in DETECTORS[g] for span in detector(text)]
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
