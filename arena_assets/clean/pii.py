"""PII detection and redaction with Rust-regex patterns run by polars.

Why not a library: presidio-analyzer needs a spaCy model downloaded at run time (no
network here, and a transformer/NER pass is far too slow for 50k conversations/s);
scrubadub is pure Python (per-string loops, ~100x slower than a vectorised regex pass)
and its detectors are English/US-centric regexes anyway; commonregex is unmaintained.
None fits "offline and vectorised", so the patterns live here, in the one regex dialect
that both polars (Rust `regex` crate) and Python's `re` accept: no lookaround, ASCII
word boundaries written `(?-u:\\b)` so that the Rust lazy DFA stays usable on
non-ASCII text (a Unicode `\\b` forces the slow engine on any non-ASCII haystack).

Types, applied in this order (earlier types win overlapping text):
  email, ip_address (IPv4, full and `::`-compressed IPv6 with >= 2 leading groups),
  card_number, phone, street_address.

Card numbers: a 4-4-4-(1..7) or Amex 4-6-5 grouping separated by spaces/dashes, or a
contiguous 13-19 digit run, with a first digit 2-6 (the issuer ranges of Visa, MC,
Amex, Discover, JCB, Diners). No Luhn check: grouped card-like numbers read as card
numbers to a person whether or not the check digit is right (test cards, typos, the
simulator's planted numbers), and the first-digit rule already keeps millisecond /
microsecond Unix timestamps (which start with 1) out. Phone numbers need either a
leading `+country` code or a national shape (NANP 3-3-4, `(ddd) ddd-dddd`, trunk-0
forms like `020 7946 0958` / `06 12 34 56 78`), so years and small numbers stay.
Street addresses: English `<number> <Capitalised words> <suffix>`, French
`<number> rue/avenue/… <name>`, Spanish/Portuguese/Italian `Calle/Avenida/Rua/Via … <n>`,
German/Dutch `<Name>straße/-str./-weg/-gasse/-platz/-straat/-laan <n>`.
"""

from __future__ import annotations

import polars as pl

from arena_assets.contracts import PII_PLACEHOLDERS, PII_TYPES

_B = r"(?-u:\b)"  # ASCII word boundary (see module docstring)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_HEX = r"[0-9A-Fa-f]{1,4}"

_EN_SUFFIX = (
    r"(?:Street|Avenue|Road|Boulevard|Lane|Drive|Court|Place|Terrace|Parkway|Highway|"
    r"Square|Circle|street|avenue|road|boulevard|lane|drive|"
    r"St|Ave|Rd|Blvd|Ln|Dr|Ct|Pl|Pkwy|Hwy|Way)"
)
_CAP_WORD = r"[\p{Lu}0-9][\p{L}0-9'’-]*"
_FR_TYPE = r"(?:rue|avenue|boulevard|bd|place|allée|impasse|chemin|quai|cours|Rue|Avenue|Boulevard|Place|Allée|Impasse|Chemin|Quai)"
_FR_LINK = r"(?:(?:de|du|des|de la|la|le|les|l'|d')\s*)?"
_ROMANCE_TYPE = r"(?:Calle|Avenida|Av\.|Avda\.|Paseo|Plaza|Carrera|Rua|Travessa|Via|Viale|Piazza|Corso)"
_ROMANCE_LINK = r"(?:(?:de la|de los|de las|del|de|da|do|dos|das|della|dei|di)\s+)?"
_DE_SUFFIX = r"(?:straße|strasse|str\.|weg|gasse|platz|allee|damm|ring|straat|laan|gracht|plein)"
_DE_WORD = r"(?:Straße|Strasse|Str\.|Weg|Gasse|Platz|Allee|Damm|Ring|Straat|Laan)"
_HOUSE_NO = r"[0-9]{1,5}[a-zA-Z]?"
# Without lookbehind, "not preceded by a dot or digit" is a consumed character captured as
# `pre` and written back by the replacement; it keeps the fraction digits of 0.571428571428…
# and dotted OIDs (enterprises.9.9.392.1.3) from reading as card numbers / IPv4.
_GUARD = r"(?P<pre>^|[^.0-9])"
GUARDED_TYPES = ("ip_address", "card_number")

# type -> pattern (Rust regex and Python re compatible)
PII_PATTERNS: dict[str, str] = {
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}" + _B,
    "ip_address": _GUARD + (
        rf"(?:{_B}(?:{_OCTET}\.){{3}}{_OCTET}{_B}"
        rf"|{_B}(?:{_HEX}:){{7}}{_HEX}{_B}"
        rf"|{_B}(?:{_HEX}:){{2,6}}(?::{_HEX}){{1,5}}{_B})"
    ),
    "card_number": _GUARD + (
        rf"(?:{_B}[2-6][0-9]{{3}}(?:[ -][0-9]{{4}}){{2}}[ -][0-9]{{1,7}}{_B}"
        rf"|{_B}3[47][0-9]{{2}}[ -][0-9]{{6}}[ -][0-9]{{5}}{_B}"
        rf"|{_B}[2-6][0-9]{{12,18}}{_B})"
    ),
    "phone": (
        r"\+[1-9][0-9]{0,2}[ .-]?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{1,4}(?:[ .-]?[0-9]{2,4}){2,4}" + _B
        + r"|\([0-9]{3}\)[ .-]?[0-9]{3}[ .-][0-9]{4}" + _B
        + rf"|{_B}[0-9]{{3}}[.-][0-9]{{3}}[.-][0-9]{{4}}{_B}"
        + rf"|{_B}[0-9]{{3}} [0-9]{{3}} [0-9]{{4}}{_B}"
        + rf"|{_B}0[1-9](?:[ .-][0-9]{{2}}){{4}}{_B}"
        + rf"|{_B}0[1-9][0-9]{{1,3}}[ -][0-9]{{3,4}}[ -]?[0-9]{{3,4}}{_B}"
    ),
    "street_address": (
        rf"{_B}{_HOUSE_NO}\s+(?:{_CAP_WORD}\s+){{1,3}}{_EN_SUFFIX}(?-u:\b)\.?"
        rf"|{_B}{_HOUSE_NO}(?:\s?(?:bis|ter))?,?\s+{_FR_TYPE}\s+{_FR_LINK}{_CAP_WORD}(?:[ -]{_CAP_WORD}){{0,3}}"
        rf"|{_ROMANCE_TYPE}\s+{_ROMANCE_LINK}{_CAP_WORD}(?:\s+{_CAP_WORD}){{0,3}},?\s+(?:n[º°o]\.?\s*)?{_HOUSE_NO}{_B}"
        rf"|\p{{Lu}}[\p{{L}}-]*{_DE_SUFFIX}\s+{_HOUSE_NO}{_B}"
        rf"|\p{{Lu}}[\p{{L}}-]*\s+{_DE_WORD}\s+{_HOUSE_NO}{_B}"
    ),
}
# dict order is the redaction order (IPs and cards before phones: their digit runs would
# otherwise be read as phone numbers); it covers exactly the contract's types.
assert set(PII_PATTERNS) == set(PII_TYPES)

# one scan finds every candidate row; the named guard group cannot repeat in one regex
ANY_PII_PATTERN = "|".join(
    f"(?:{p})".replace("(?P<pre>", "(?:") for p in PII_PATTERNS.values()
)


def contains_pii(expr: pl.Expr) -> pl.Expr:
    """Boolean expression: does the text still match any PII pattern (for asset checks)."""
    return expr.str.contains(ANY_PII_PATTERN)


def _replacement(pii_type: str) -> str:
    placeholder = PII_PLACEHOLDERS[pii_type]
    return "${pre}" + placeholder if pii_type in GUARDED_TYPES else placeholder


def redact_expr(expr: pl.Expr) -> pl.Expr:
    """Text with every PII match replaced by its typed placeholder, in redaction order."""
    for pii_type, pattern in PII_PATTERNS.items():
        expr = expr.str.replace_all(pattern, _replacement(pii_type))
    return expr


# the user's address or id inside a raw JSON line (any string value of those keys)
_RAW_USER_FIELD = r'("(?:ip|user_id)"\s*:\s*)"(?:[^"\\]|\\.)*"'


def scrub_raw_line(expr: pl.Expr) -> pl.Expr:
    """A raw log line made safe to keep in raw_rejects: the user's ``ip`` / ``user_id``
    values blanked to ``"<USER>"`` and every PII pattern replaced, as in conversations."""
    return redact_expr(expr.str.replace_all(_RAW_USER_FIELD, '${1}"<USER>"'))


def scrub_raw_text(text: str) -> str:
    """`scrub_raw_line` for one string (rejected lines are few: one small polars call each)."""
    return pl.select(scrub_raw_line(pl.lit(text, pl.String))).item()


def redact_frame(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Redact `column` in place and add `pii_<type>` Int32 counts per row.

    Counts are taken on the text left after the earlier types were replaced, so a span
    is counted once, under the first type that claims it. Only rows that match the
    combined pattern go through the ten per-type passes (they are a few percent of
    real traffic), which keeps the cost near one regex scan of all text.
    """
    frame = frame.with_row_index("_pii_pos")
    hit = frame.get_column(column).str.contains(ANY_PII_PATTERN).fill_null(False)
    clean = frame.filter(~hit).with_columns(
        pl.lit(0, pl.Int32).alias(f"pii_{t}") for t in PII_TYPES
    )
    dirty = frame.filter(hit)
    text = pl.col(column)
    for pii_type, pattern in PII_PATTERNS.items():
        dirty = dirty.with_columns(
            text.str.count_matches(pattern).cast(pl.Int32).alias(f"pii_{pii_type}")
        ).with_columns(text.str.replace_all(pattern, _replacement(pii_type)))
    dirty = dirty.select(clean.columns)
    return pl.concat([clean, dirty]).sort("_pii_pos").drop("_pii_pos")


def find_pii(text: str) -> list[tuple[str, int, int]]:
    """(type, start, end) of each PII span in `text`, same order of precedence as redaction.

    Runs polars on a one-row frame so that scoring sees exactly the engine the pipeline
    uses (the Rust regex crate), not a Python re-implementation of the patterns.
    """
    spans: list[tuple[str, int, int]] = []
    remaining = text
    # Walk types in order; mask earlier matches with same-length filler so offsets hold.
    for pii_type, pattern in PII_PATTERNS.items():
        found = (
            pl.Series([remaining])
            .str.extract_all(f"(?:{pattern})")
            .to_list()[0]
            or []
        )
        cursor = 0
        for match in found:
            start = remaining.find(match, cursor)
            if start < 0:
                continue
            if pii_type in GUARDED_TYPES and match and not match[0].isalnum():
                match, start = match[1:], start + 1  # drop the consumed guard character
            end = start + len(match)
            spans.append((pii_type, start, end))
            remaining = remaining[:start] + "\x00" * (end - start) + remaining[end:]
            cursor = end
    return sorted(spans, key=lambda s: s[1])
