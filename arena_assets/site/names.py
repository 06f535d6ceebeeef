"""Names the site shows: categories as LMArena titles them, languages, file slugs, and a
sentence for every reason a board could not rank a model.

Board keys are the ``board`` values of ``arena_leaderboard`` (``overall``,
``style_control``, ``coding``, ``language:en`` ...); published arena-catalog boards are
read into the same keys (``catalog.py``).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

# LMArena's titles (FastChat monitor_md.key_to_category_name), plus our own boards
CATEGORY_TITLES = {
    "overall": "Overall",
    "hard_6": "Hard Prompts",
    "hard_english_6": "Hard Prompts (English)",
    "coding": "Coding",
    "math": "Math",
    "creative_writing": "Creative Writing",
    "if": "Instruction Following",
    "long_user": "Longer Query",
    "multiturn": "Multi-Turn",
    "no_refusal": "Exclude Refusal",
    "no_tie": "Exclude Ties",
    "no_short": "Exclude Short Query (< 5 tokens)",
    "expert": "Expert",
    "vision": "Vision (all)",
    "captioning": "Captioning",
    "ocr": "OCR",
    "entity_recognition": "Entity Recognition",
    "humor": "Humor",
    "homework": "Homework",
    "diagram": "Diagram",
    "creative_writing_vision": "Creative Writing (Vision)",
}

CATEGORY_NOTES = {
    "overall": "Every kept vote.",
    "hard_6": "Prompts meeting at least 6 of the 7 hard-prompt criteria.",
    "coding": "Conversations about or containing code.",
    "math": "Math problems.",
    "creative_writing": "Creative writing requests.",
    "if": "Prompts with at least 4 checkable instructions.",
    "long_user": "Prompts of at least 500 tokens.",
    "multiturn": "Conversations of two turns or more.",
    "no_refusal": "Votes where neither answer refused.",
    "vision": "Every vote on a prompt with an image.",
}

# ISO 639-1 -> the English name LMArena uses for its language boards (lower case in JSON);
# every other code is named from ISO 639 (``language_name``)
LANGUAGE_NAMES = {
    "en": "English",
    "zh": "Chinese",
    "ru": "Russian",
    "es": "Spanish",
    "de": "German",
    "fr": "French",
    "ja": "Japanese",
    "pt": "Portuguese",
    "ko": "Korean",
    "it": "Italian",
    "vi": "Vietnamese",
    "ar": "Arabic",
    "pl": "Polish",
    "tr": "Turkish",
    "nl": "Dutch",
    "id": "Indonesian",
    "uk": "Ukrainian",
    "fa": "Persian",
    "hi": "Hindi",
    "cs": "Czech",
    "el": "Greek",
}
# codes fastText's lid.176 (our language id, clean/language.py) emits that ISO 639 retired
RETIRED_CODES = {"bh": "Bihari", "eml": "Emilian-Romagnol"}


@lru_cache(maxsize=1)
def _iso_names() -> tuple[dict[str, str], dict[str, str]]:
    """(code -> English name, lower-case name -> code) for every ISO 639-1 and 639-3 code,
    from pycountry's copy of the ISO tables (shipped in its wheel; nothing fetched). A
    qualifier in brackets is dropped ("Swahili (macrolanguage)" -> "Swahili") unless another
    language has the shorter name already, two-letter codes first ("swh", "Swahili
    (individual language)", keeps its qualifier); LMArena's own names win over both."""
    import pycountry

    full = {}
    for lang in pycountry.languages:
        for attr in ("alpha_3", "alpha_2"):  # alpha_2 last: it is the code we store
            if hasattr(lang, attr):
                full[getattr(lang, attr)] = lang.name
    names: dict[str, str] = {}
    taken: dict[str, str] = {}  # short name -> the full name that has it
    for code in sorted(full, key=lambda c: (len(c) != 2, c)):
        short = re.sub(r"\s*\(.*\)$", "", full[code])
        owner = taken.setdefault(short.lower(), full[code])
        names[code] = short if owner == full[code] else full[code]
    names |= RETIRED_CODES | LANGUAGE_NAMES
    reverse: dict[str, str] = {}
    for code in sorted(names, key=lambda c: (len(c) != 2, c not in LANGUAGE_NAMES, c)):
        reverse.setdefault(names[code].lower(), code)
    return names, reverse


def language_name(code: str) -> str:
    """An ISO 639 code (what ``battles.language`` holds) -> its English name (the code
    itself when ISO has none)."""
    return LANGUAGE_NAMES.get(code) or _iso_names()[0].get(code, code)


def language_code(name: str) -> str | None:
    """A language board's name as arena-catalog writes it ("english") -> its code."""
    return _iso_names()[1].get(name.lower())


# the boards of the vision arena (arena-catalog's leaderboard-vision*.json)
VISION_BOARDS = (
    "vision",
    "captioning",
    "ocr",
    "entity_recognition",
    "humor",
    "homework",
    "diagram",
    "creative_writing_vision",
)

# why a board could not rank a model (ranking.identify.LEFT_OUT_REASONS), for readers
REASON_SENTENCES = {
    "no_battles": "it has no vote on this board",
    "under_min_battles": "it has fewer votes than the board's minimum",
    "won_all": "it never lost or tied a vote here, so its score has no upper limit",
    "lost_all": "it never won or tied a vote here, so its score has no lower limit",
    "not_connected": "no chain of votes links it to the ranked models",
    "above_ranked": "its group never lost or tied against the ranked models, so its score "
    "has no upper limit",
    "below_ranked": "its group never beat or tied the ranked models, so its score has no "
    "lower limit",
    "not_comparable": "it is linked to the ranked models only through models that cannot "
    "be ranked either",
}


def reason_sentence(reason: str) -> str:
    return REASON_SENTENCES.get(reason, reason.replace("_", " "))


def board_title(key: str) -> str:
    """``language:en`` -> "English"; ``coding`` -> "Coding"; unknown keys readable."""
    if key.startswith("language:"):
        return language_name(key.split(":", 1)[1])
    if key in CATEGORY_TITLES:
        return CATEGORY_TITLES[key]
    if key.startswith("vision_") and _is_language(key[7:]):
        return f"{language_name(language_code(key[7:]))} (Vision)"
    if _is_language(key):  # a published board named by its language
        return language_name(language_code(key))
    return key.replace("_", " ").capitalize()


def _is_language(category: str) -> bool:
    """A published category that names a language (never one of the known categories)."""
    return (
        category not in CATEGORY_TITLES
        and category not in VISION_BOARDS
        and not category.startswith("industry_")
        and language_code(category) is not None
    )


def board_group(key: str) -> str:
    """Where a board sits in the selector: Text, Languages or Vision."""
    if key.startswith("language:") or _is_language(key):
        return "Languages"
    if key in VISION_BOARDS or key.startswith("vision_"):
        return "Vision"
    if key.startswith("industry_"):
        return "Occupations"
    return "Text"


def board_order(keys) -> list[str]:
    """Overall first, then LMArena's order of the known categories, then the rest sorted."""
    known = list(CATEGORY_TITLES)
    group_rank = {"Text": 0, "Occupations": 1, "Languages": 2, "Vision": 3}
    return sorted(
        keys,
        key=lambda k: (
            k != "overall",
            group_rank[board_group(k)],
            known.index(k) if k in known else len(known),
            board_title(k).lower(),
            k,
        ),
    )


def slug(text: str) -> str:
    """A file name for any model or board name: lower-case letters, digits, ``.``, ``_``
    and ``-``; names that would collide or lose characters get a short hash suffix."""
    base = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.") or "x"
    if base == text and len(base) <= 80:
        return base
    return f"{base[:60]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def board_slug(key: str) -> str:
    """The page of a board: ``index`` for overall, else a slug of its key."""
    return "index" if key == "overall" else slug(key.replace(":", "-"))


def catalog_key(key: str) -> tuple[str, str]:
    """Our board key -> (arena-catalog file kind "text" / "vision", category name)."""
    if key == "overall":
        return "text", "full"
    if key == "vision":
        return "vision", "full"
    if key.startswith("language:"):
        return "text", language_name(key.split(":", 1)[1]).lower()
    if key.startswith("vision_"):
        return "vision", key[7:]
    return ("vision" if key in VISION_BOARDS else "text"), key


def from_catalog_key(kind: str, category: str) -> str:
    """The inverse of ``catalog_key`` for published files."""
    if category == "full":
        return "overall" if kind == "text" else "vision"
    if kind == "vision" and category not in VISION_BOARDS:
        return f"vision_{category}"  # the vision arena's own language boards
    if kind == "text" and _is_language(category):
        return f"language:{language_code(category)}"
    return category
