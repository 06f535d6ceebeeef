"""All phrase lists in one place, plus the planted PII, toxic markers and code snippets."""

from __future__ import annotations

import random

from stdnum import luhn

from arena_assets.simulator.lexicon_east import EAST
from arena_assets.simulator.lexicon_west import WEST

LEX: dict[str, dict] = {**WEST, **EAST}
# Languages written without spaces between sentences.
SENTENCE_SEP = {lang: ("" if lang in ("zh", "ja") else " ") for lang in LEX}

# Toxic marker phrases by OpenAI moderation category. English on purpose: the endpoint's
# moderation flags exactly these, so tests can check recall against the truth.
TOXIC_MARKERS: dict[str, tuple[str, ...]] = {
    "harassment": ("you worthless idiot", "nobody could stand a moron like you"),
    "hate": ("I despise people like them", "those people are vermin"),
    "violence": ("I will break your bones", "I am going to smash his face"),
    "self-harm": ("I want to hurt myself", "I keep thinking about ending it all"),
}
MODERATION_CATEGORIES = ("harassment", "hate", "violence", "self-harm", "sexual")

CODE_SNIPPETS = (
    "def dedupe(items):\n    seen = set()\n    return [x for x in items if not (x in seen or seen.add(x))]",
    "SELECT o.id, c.name\nFROM orders AS o\nJOIN customers AS c ON c.id = o.customer_id;",
    "function sum(values) {\n  return values.reduce((a, b) => a + b, 0);\n}",
    "for i in range(10):\n    print(i * i)",
)
MATH_LINES = (
    "f(x) = 3x^2 + 2x - 5, f'(x) = 6x + 2",
    "P(sum = 7) = 6 / 36 = 1 / 6",
    "x + y = 10, x - y = 2, x = 6, y = 4",
)

MODEL_BASES = (
    "Aurora",
    "Borealis",
    "Cobalt",
    "Dune",
    "Ember",
    "Fjord",
    "Granite",
    "Halcyon",
    "Iris",
    "Juniper",
    "Kestrel",
    "Lumen",
    "Meridian",
    "Nimbus",
    "Onyx",
    "Pioneer",
    "Quartz",
    "Rune",
    "Sable",
    "Tundra",
    "Umbra",
    "Vesper",
    "Willow",
    "Xenon",
    "Yarrow",
    "Zenith",
    "Atlas",
    "Beacon",
    "Cirrus",
    "Drift",
    "Echo",
    "Flint",
    "Glacier",
    "Harbor",
    "Indigo",
    "Jasper",
    "Kelp",
    "Lark",
    "Meadowlark",
    "Nova",
    "Oriole",
    "Pebble",
    "Quill",
    "Ridge",
    "Solstice",
    "Thistle",
    "Upland",
    "Valley",
    "Wren",
    "Yonder",
    "Zircon",
    "Amber",
    "Basalt",
    "Cedar",
    "Dawn",
    "Estuary",
    "Fern",
    "Grove",
    "Heron",
    "Islet",
)
MODEL_SIZES = ("7B", "8B", "13B", "34B", "70B", "8x7B", "mini", "large")
MODEL_SUFFIXES = ("chat", "instruct", "v2", "pro", "turbo", "preview")
ORGANIZATIONS = (
    "Acme AI",
    "Northwind Labs",
    "Bluefin Research",
    "Quillstone Systems",
    "Helios Institute",
    "Mosaic Compute",
    "Tessellate",
    "Lattice AI",
    "Open Meadow",
    "Kitewing",
)

FIRST_NAMES = (
    "anna",
    "li.wei",
    "carlos",
    "marie",
    "jonas",
    "olga",
    "yuki",
    "joao",
    "minji",
    "giulia",
    "tom",
    "sara",
)
DOMAINS = ("example.com", "mail.example.org", "inbox.test", "corp.example.net")
STREETS = (
    "Elm Street",
    "Oak Avenue",
    "Maple Road",
    "Pine Lane",
    "Cedar Boulevard",
    "Main Street",
    "Sunset Drive",
)


# the kinds the simulator plants (a subset of schema.PII_TYPES: the redactor knows more)
PLANTED_PII_TYPES = ("email", "phone", "ip_address", "card_number", "street_address")


def fake_pii(kind: str, rng: random.Random) -> str:
    """One planted PII item of ``kind`` (a value of PLANTED_PII_TYPES), realistic in shape."""
    r = rng.randrange
    if kind == "email":
        return f"{rng.choice(FIRST_NAMES)}{r(10, 99)}@{rng.choice(DOMAINS)}"
    if kind == "phone":
        style = r(5)
        if style == 0:
            return f"+1 {r(200, 999)}-555-{r(1000, 9999)}"
        if style == 1:
            return f"({r(200, 999)}) 555-{r(1000, 9999)}"
        if style == 2:
            return f"+44 20 {r(1000, 9999)} {r(1000, 9999)}"
        if style == 3:
            return f"+49 30 {r(1000000, 9999999)}"
        return f"+86 138 {r(1000, 9999)} {r(1000, 9999)}"
    if kind == "ip_address":
        first = r(11, 223)
        first += first == 127  # 127/8 is loopback, nobody's address (the redactor keeps it)
        return f"{first}.{r(0, 256)}.{r(0, 256)}.{r(1, 255)}"
    if kind == "card_number":
        sep = rng.choice((" ", "-"))
        groups = [str(r(4000, 5600))] + [f"{r(0, 10000):04d}" for _ in range(3)]
        # a real card number passes Luhn (the redactor checks it); the draws stay the same
        body = "".join(groups)[:15]
        groups[-1] = groups[-1][:3] + luhn.calc_check_digit(body)
        return sep.join(groups)
    if kind == "street_address":
        return f"{r(1, 9999)} {rng.choice(STREETS)}"
    raise ValueError(f"unknown PII kind {kind!r}")
