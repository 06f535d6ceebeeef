"""Street addresses in one text: a street core, then the rest of the address after it.

No library parses free-text addresses of every country offline (libpostal needs a 2 GB
model download), so these are patterns, one per addressing tradition, each anchored on
something an address has and prose rarely does:

- number first, then a street-type word (en "221B Baker Street", fr "12 rue de la Paix");
- street name first with a type (de "Hauptstraße 5", "bahnhofstr. 12", es/it/pt "Calle
  Mayor 10", "Via Roma 15", "Av. Paulista, 1578", nl "Keizersgracht 123");
- street name + number with no type word at all, accepted only when a postcode and a city
  follow ("Unter den Linden 77, 10117 Berlin", "Damrak 1, 1012 LG Amsterdam");
- post-office boxes (P.O. Box, Postfach, BP, Apartado, Caixa Postal, а/я);
- Japanese (〒 postcode, prefecture, ward, 1-1-1 / 1丁目2番3号), Chinese (市 / 区 / 路 + 号)
  and Russian (г. / ул. / д. / кв.) forms.

The tail after the core (flat, floor, postcode, city, state) is taken too: an address is
personal as a whole, and a city left behind next to "<STREET_ADDRESS>" says little, but
a house number left behind next to a street says a lot.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from arena_assets.clean.pii_reach import matches_before

_NO = r"\d{1,5}(?:\s?[a-zA-Z](?![\w]))?(?:\s?(?:bis|ter))?"  # house number: 12, 12a, 221B, 5 bis
_WORD = r"[^\W\d_][\w'’.-]*"
# words that never name a street: keep "3 apples on the way" and "2 by 2 square" prose
_NOT_STREET = (
    r"(?:the|a|an|of|on|at|in|to|by|my|your|our|his|her|this|that|these|those|more|"
    r"less|one|two|three|all|with|from|per|times|and|or|is|are|was|each|every)"
)
_STREET_WORD = rf"(?:(?!{_NOT_STREET}\b){_WORD}|\d{{1,3}}(?:st|nd|rd|th))"  # ordinals: "5th Avenue"
_EN_TYPES = (
    r"street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|place|pl|"
    r"terrace|parkway|pkwy|highway|hwy|way|square|sq|crescent|trail|plaza"
)
_FR_TYPES = (
    r"rue|avenue|av\.|boulevard|bd|place|allée|allee|impasse|chemin|quai|cours|route|passage"
)
_DIRECTION = r"(?:\s+(?:N|S|E|W|NE|NW|SE|SW|North|South|East|West)\b)?"
# ASCII edges: Chinese and Japanese glue an address to the sentence ("通过3255 Main Street联系我")
_LB, _RB = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"
_NUMBER_FIRST = (
    rf"{_LB}{_NO},?\s+(?:(?:{_FR_TYPES})\s+(?:(?:de la|de l'|du|des|de|d'|la|le|les|l')\s*)?{_WORD}(?:[ -]{_WORD}){{0,3}}"
    rf"|(?:{_STREET_WORD}\s+){{1,3}}(?:{_EN_TYPES}){_RB}\.?{_DIRECTION})"
)
# -straße / -str. etc. are unambiguous in any case; -weg / -ring / -platz end English words
# too ("string 5"), so those need a capitalised compound (see _DE_CASED)
_DE_SUFFIX = r"(?:straße|strasse|str\.|gasse|allee|chaussee|straat|laan|gracht|plein|kade|singel)"
_ROMANCE_TYPES = (
    r"calle|c/|avenida|avda\.|av\.|paseo|plaza|pza\.|carrera|camino|rua|travessa|largo|praça|"
    r"alameda|via|viale|piazza|corso|vicolo|strada"
)
_ROMANCE_LINK = r"(?:(?:de la|de los|de las|del|de|da|do|dos|das|della|dei|di|delle)\s+)?"
_NAME_FIRST = (
    rf"\b[\w-]*{_DE_SUFFIX}\s*{_NO}{_RB}"
    # a type word ends at a word boundary: "called Passport to 2049" is no "calle"
    rf"|(?<![\w])(?:(?:{_ROMANCE_TYPES})(?![^\W\d_])|(?:{_ROMANCE_TYPES})(?<=[/.]))\s*{_ROMANCE_LINK}{_WORD}(?:\s+{_WORD}){{0,3}}?,?\s+(?:n[º°o]\.?\s*)?{_NO}{_RB}"
)
_DE_CASED = rf"\b[A-ZÄÖÜ][\w-]*(?:weg|ring|damm|ufer|platz|steig|markt)\s+{_NO}\b|\b[A-ZÄÖÜ][\w-]+\s+(?:Straße|Strasse|Str\.|Weg|Allee|Platz|Ring)\s+{_NO}\b"
# postcodes of the countries whose addresses are written "name number, code city"
_POSTCODE = (
    r"(?:\d{5}-\d{3}|\d{4}-\d{3}|\d{5}|\d{4}\s?[A-Z]{2}\b|\d{4}|\d{2}-\d{3}"
    r"|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2})"
)
# no street-type word at all: accepted only with a postcode and a city right after it
_NO_TYPE = rf"(?<![\w])[A-ZÄÖÜÉ][\w'’.-]*(?:\s+[\w'’.-]+){{0,3}}?\s+{_NO},\s+{_POSTCODE}\s+[A-ZÄÖÜÉ][\w'’.-]*"
_PO_BOX = (
    r"(?<![\w])(?i:p\.?\s?o\.?\s?box|post\s?box|postfach|bo[iî]te postale|bp|apartado(?: de correos)?"
    r"|caixa postal|casella postale|а/я|абонентский ящик)\.?\s*\d[\d ]{0,10}\d?"
)
_JP = (
    r"(?:〒\s?\d{3}-\d{4}\s*)?(?:東京都|北海道|京都府|大阪府|[\u4e00-\u9fff]{2,3}県)"
    r"[\u4e00-\u9fff\u3040-\u30ffー]{1,20}?[0-9０-９一二三四五六七八九十]+(?:丁目|[-－‐])"
    r"[0-9０-９]+(?:番地?|[-－‐])[0-9０-９]+号?"
)
_CN = (
    r"(?:[\u4e00-\u9fff]{2,4}(?:省|自治区))?[\u4e00-\u9fff]{2,4}市(?:[\u4e00-\u9fff]{1,5}?[区县])?"
    r"[\u4e00-\u9fff]{1,12}?(?:路|街|道|大道|巷|弄|胡同)[0-9０-９]+号(?:[0-9０-９]+(?:室|楼|单元|栋))*"
)
_RU = (
    r"(?:г\.\s?[А-ЯЁ][а-яё-]+,?\s*)?(?:ул\.|улица|пр-т|просп\.|проспект|пер\.|переулок|ш\.|шоссе|"
    r"пл\.|площадь|бул\.|бульвар|наб\.|набережная)\s?[А-ЯЁA-Z0-9][\w.-]*(?:\s[А-ЯЁ][\w-]*)?,?\s*"
    r"(?:д\.|дом)\s?\d+[а-я]?(?:,?\s*(?:корп\.|к\.|стр\.)\s?\d+)?(?:,?\s*(?:кв\.|квартира|оф\.)\s?\d+)?"
)
ADDRESS_CORES = re.compile(
    "|".join(f"(?:{p})" for p in (_NUMBER_FIRST, _NAME_FIRST)), re.IGNORECASE
)
ADDRESS_CORES_CASED = re.compile(
    "|".join(f"(?:{p})" for p in (_DE_CASED, _NO_TYPE, _PO_BOX, _JP, _CN, _RU))
)

# what may follow the core: unit / floor, then ", <postcode> <city>", ", <state> <zip>" parts
_UNIT = re.compile(
    r"(?:,?\s*(?:apt\.?|apartment|suite|ste\.?|unit|flat|#|\d+º|\d+°|piso|étage|etg\.|whg\.)"
    r"\s*[\w.º°-]{0,6}(?:\s?(?:izq|dcha|izda|dcho)\.?)?)",
    re.IGNORECASE,
)
_STOP = (
    r"(?:and|or|but|please|thanks|und|oder|bitte|et|ou|merci|y|o|gracias|e|obrigad[oa]|"
    r"grazie|и|или|the|if|is|in|on|for|to|when|which|where|we|i|you|it|he|she|they|das|der|die|le|la|"
    r"è|es|est|ist|my|mein|meine|mon|ma|mi|il|lo|please)"
)
_PLACE = rf"(?!{_STOP}\b)[^\W\d_][\w'’.-]*"
_TAIL_PART = re.compile(
    rf"(?:,\s*|\s+-\s+|\s+(?=\d)|\s+(?=[A-Z]{{2}}\s+\d{{5}}))"
    rf"(?:\d{{6}}(?!\d)|{_POSTCODE}(?!\d)\s+{_PLACE}(?:\s+{_PLACE}){{0,2}}"
    rf"|[A-Z]{{2}}\s+\d{{5}}(?:-\d{{4}})?|{_POSTCODE}(?!\d)|\d[A-Z]{{2}}\b"
    rf"|{_PLACE}(?:\s+{_PLACE})?(?:\s+{_POSTCODE})?)",
    re.IGNORECASE,
)


# Gates: for each of the two patterns above, a Rust regex (run by polars over a whole
# column, ~100x cheaper per text than Python ``re``) that matches every text the pattern
# can match, so a text that fails a gate skips that pattern and nothing changes. Each
# gate keeps only what its pattern cannot do without (a type word with the whitespace
# and the digit that must come with it, a bounded number of tokens in between); Python's
# ``\s`` is Rust's ``\s`` plus U+001C..U+001F, and ``\d`` is Unicode Nd in both engines
# (``arena_assets_tests/test_pii.py`` checks both claims over every code point). Why:
# without the gates this detector was 40 % of the redaction's CPU in cleaning (most texts
# that the prefilter's address group flags hold no address core).
_S = r"[\s\x1c-\x1f]"


def _fold(words: str) -> str:
    """Gate words for Rust's ``(?i:...)``: Python's ``re.IGNORECASE`` also matches the
    dotless ``ı`` (U+0131) and the dotted ``İ`` (U+0130) for ``i``, Rust's simple case
    folding does not, so the gate spells them out. Every other letter of the gates folds
    alike in both engines (``ſ``, ``K``... included): checked over every code point in
    ``arena_assets_tests/test_pii.py``."""
    return words.replace("i", "[iıİ]")


_EN_GATE = _fold(
    "street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|place|pl|"
    "terrace|parkway|pkwy|highway|hwy|way|square|sq|crescent|trail|plaza"
)
_FR_GATE = _fold(
    r"rue|avenue|av\.|boulevard|bd|place|allée|allee|impasse|chemin|quai|cours|route|passage"
)
_ROMANCE_GATE = _fold(
    r"calle|c/|avenida|avda\.|av\.|paseo|plaza|pza\.|carrera|camino|rua|travessa|largo|praça|"
    r"alameda|via|viale|piazza|corso|vicolo|strada"
)
CORES_GATE = "|".join(
    f"(?:{p})"
    for p in (
        # number first: "12a bis, Elm Oak Lane": a digit token, <= 2 more number tokens and
        # <= 3 street words, then the type word on a right boundary
        rf"\d\S*(?:{_S}+\S+){{0,5}}{_S}+(?i:{_EN_GATE})(?:[^A-Za-z0-9]|$)",
        rf"\d\S*(?:{_S}+\S+){{0,2}}{_S}+(?i:{_FR_GATE}){_S}",
        "(?i:"
        + _fold(r"straße|strasse|str\.|gasse|allee|chaussee|straat|laan|gracht|plein|kade|singel")
        + ")"
        rf"{_S}*\d",
        # type word, <= 2 link words and <= 4 name words, then "nº" and the house number
        rf"(?:^|[^A-Za-z0-9_])(?i:{_ROMANCE_GATE})\S*(?:{_S}+\S+){{0,6}}{_S}+(?:\S{{1,3}}{_S}*)?\d",
    )
)
CASED_GATE = "|".join(
    f"(?:{p})"
    for p in (
        rf"(?:weg|ring|damm|ufer|platz|steig|markt|Straße|Strasse|Str\.|Weg|Allee|Platz|Ring){_S}+\d",
        rf"\d(?:{_S}?[a-zA-Z])?(?:{_S}?(?:bis|ter))?,{_S}+[\dA-Z]",
        _PO_BOX.replace(r"(?<![\w])", "").replace(r"\s", _S),
        r"東京都|北海道|京都府|大阪府|県|市",
        r"ул\.|улица|пр-т|просп\.|проспект|пер\.|переулок|ш\.|шоссе|пл\.|площадь|бул\.|бульвар|наб\.|набережная",
    )
)
# the names under which `arena_assets.clean.pii` reports a text's gates that matched, and
# GATED once the gates were run at all (without it, both patterns run)
GATES = {"address:cores": CORES_GATE, "address:cased": CASED_GATE}
GATED = "address:gated"


def address_spans(
    text: str, cores: bool = True, cased: bool = True, stop: int | None = None
) -> Iterator[tuple[str, int, int]]:
    """("street_address", start, end) of each address, its city and postcode included.

    ``cores`` / ``cased``: False when the pattern's gate (above) ruled it out. ``stop``:
    only the addresses that start before it."""
    for pattern, wanted in ((ADDRESS_CORES, cores), (ADDRESS_CORES_CASED, cased)):
        if not wanted:
            continue
        for m in matches_before(pattern, text, stop):
            yield "street_address", m.start(), m.end() + _tail(text, m.end())


def _tail(text: str, end: int) -> int:
    """Length of the address parts after a street core: comma-joined parts or a postcode
    only, so that "12 Main Street is nice" keeps "is nice"; at most four parts."""
    length = 0
    rest = text[end : end + 100]
    for _ in range(5):
        m = _UNIT.match(rest, length) or _TAIL_PART.match(rest, length)
        if not m or m.end() == length:
            break
        length = m.end()
    return length
