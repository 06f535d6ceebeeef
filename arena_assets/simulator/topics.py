"""Fine topics and the rules that turn a prompt's parts into its hidden labels.

A first prompt is composed from parts (see ``compose.py``): a fine topic phrase inside a
request template, plus optional parts that each carry a signal a labeller can see:

    part          criteria it adds                      other labels
    constraint    specificity (2+: complexity)         if_score +2 each
    domain term   specificity, domain_knowledge,
                  technical_accuracy
    context       real_world
    multi-step    complexity, problem_solving          if_score +1
    twist         creativity

Each category also has base criteria (coding: domain_knowledge, technical_accuracy,
problem_solving; hard_multistep: complexity, problem_solving, real_world; ...), so the
criteria count of a prompt follows from its topic and parts only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from arena_assets.simulator.config import CATEGORIES, VISION_CATEGORIES
from arena_assets.simulator.parts_east import JA, KO, RU, ZH
from arena_assets.simulator.parts_mid import DE, IT, PT
from arena_assets.simulator.parts_west import EN, ES, FR

PARTS: dict[str, dict] = {
    "en": EN,
    "es": ES,
    "fr": FR,
    "de": DE,
    "pt": PT,
    "it": IT,
    "ru": RU,
    "zh": ZH,
    "ja": JA,
    "ko": KO,
}
CRITERIA = (
    "specificity",
    "domain_knowledge",
    "complexity",
    "problem_solving",
    "creativity",
    "technical_accuracy",
    "real_world",
)
VISION_LABELS = (
    "captioning",
    "ocr",
    "entity_recognition",
    "humor",
    "homework",
    "diagram",
    "creative_writing",
)
HARD_MIN_CRITERIA = 6

BASE_CRITERIA: dict[str, frozenset[str]] = {
    "coding": frozenset({"domain_knowledge", "technical_accuracy", "problem_solving"}),
    "math": frozenset({"technical_accuracy", "problem_solving"}),
    "creative_writing": frozenset({"creativity"}),
    "instruction_following": frozenset({"specificity"}),
    "hard_multistep": frozenset({"complexity", "problem_solving", "real_world"}),
    "chit_chat": frozenset(),
    "captioning": frozenset(),
    "ocr": frozenset({"specificity", "technical_accuracy"}),
    "entity_recognition": frozenset({"domain_knowledge"}),
    "humor": frozenset({"creativity"}),
    "homework": frozenset({"problem_solving", "technical_accuracy"}),
    "diagram": frozenset({"domain_knowledge", "technical_accuracy"}),
}
# (category, index in the category's phrase list) -> special traits
SENSITIVE = {("coding", 12), ("creative_writing", 10), ("hard_multistep", 8), ("chit_chat", 5)}
MATH_TOPICS = {("homework", 1), ("homework", 3), ("homework", 6), ("diagram", 6)}
VISION_EXTRA = {
    ("homework", 0): ("ocr",),
    ("homework", 6): ("ocr",),
    ("diagram", 5): ("ocr",),
    ("captioning", 6): ("creative_writing",),
    ("humor", 2): ("creative_writing", "captioning"),
}
# Language-neutral terms for the domain clause, so every language shares them.
DOMAIN_TERMS = {
    "coding": ("O(n log n)", "UTF-8", "PEP 8", "POSIX", "IEEE 754", "OAuth 2.0"),
    "math": ("Bayes", "Euler", "Pythagoras", "Cauchy-Schwarz", "Taylor", "L'Hôpital"),
    "other": ("GDPR", "ISO 8601", "HACCP", "IFRS", "WCAG 2.1", "ISO 9001"),
}
_STOP = {
    "a",
    "an",
    "the",
    "of",
    "in",
    "on",
    "this",
    "that",
    "my",
    "for",
    "to",
    "with",
    "from",
    "by",
    "is",
    "and",
    "about",
    "at",
    "into",
    "as",
    "are",
    "i",
    "can",
    "how",
    "what",
    "why",
    "you",
    "your",
    "who",
    "set",
    "shown",
    "written",
    "so",
}


@dataclass(frozen=True)
class Topic:
    key: str  # "<category>/<slug>", stable across languages
    category: str
    index: int  # position in the category's phrase list (-1: greeting)
    name: str  # short readable English name (what a good cluster namer would say)
    sensitive: bool  # a cautious model refuses it
    math: bool
    vision: tuple[str, ...]  # vision labels (image prompts only)


def _slug(phrase: str) -> list[str]:
    words = [w for w in re.findall(r"[a-z0-9+#]+", phrase.lower()) if w not in _STOP]
    return words[:4]


def _readable(phrase: str, max_chars: int = 48) -> str:
    """The phrase as a cluster namer would put it: no leading article, whole words up to
    ``max_chars``, first letter capitalised ("a villain's monologue about a perfect poison"
    -> "Villain's monologue about a perfect poison")."""
    words = phrase.split()
    if words and words[0].lower() in ("a", "an", "the", "my", "this"):
        words = words[1:]
    out = []
    for w in words:
        if out and len(" ".join([*out, w])) > max_chars:
            break
        out.append(w)
    while len(out) > 1 and (
        out[-1].lower() in _STOP
        or (len(out) < len(words) and out[-1].lower() in ("that", "from", "a", "the"))
    ):
        out.pop()  # a cut phrase does not end on "... from a"
    text = " ".join(out).rstrip(",.;:")
    return text[:1].upper() + text[1:]


def _build_topics() -> tuple[Topic, ...]:
    out = []
    for cat in CATEGORIES:
        for i, phrase in enumerate(EN["topics"][cat]):
            words = _slug(phrase)
            vision = ((cat,) + VISION_EXTRA.get((cat, i), ())) if cat in VISION_CATEGORIES else ()
            out.append(
                Topic(
                    f"{cat}/{'-'.join(words)}",
                    cat,
                    i,
                    _readable(phrase),
                    (cat, i) in SENSITIVE,
                    cat == "math" or (cat, i) in MATH_TOPICS,
                    vision,
                )
            )
    return tuple(out)


TOPICS: tuple[Topic, ...] = _build_topics()
TOPICS_BY_CATEGORY: dict[str, tuple[Topic, ...]] = {
    c: tuple(t for t in TOPICS if t.category == c) for c in CATEGORIES
}
GREETING = Topic("chit_chat/greeting", "chit_chat", -1, "Greetings", False, False, ())
TOPIC_BY_KEY: dict[str, Topic] = {t.key: t for t in TOPICS + (GREETING,)}


def _check() -> None:
    keys = [t.key for t in TOPICS]
    assert len(set(keys)) == len(keys), "topic slugs must be unique"
    for lang, parts in PARTS.items():
        for cat in CATEGORIES:
            assert len(parts["topics"][cat]) == len(EN["topics"][cat]), (lang, cat)
        for name in ("constraints", "contexts", "multistep", "twist", "refuse"):
            assert len(parts[name]) == len(EN[name]), (lang, name)


_check()


def domain_terms(category: str) -> tuple[str, ...]:
    if category == "coding":
        return DOMAIN_TERMS["coding"]
    if category in ("math", "homework"):
        return DOMAIN_TERMS["math"]
    return DOMAIN_TERMS["other"]


def prompt_labels(
    topic: Topic,
    *,
    constraints: int = 0,
    domain: bool = False,
    context: bool = False,
    multistep: bool = False,
    twist: bool = False,
    toxic: bool = False,
    image: bool = False,
) -> dict:
    """The hidden labels of a prompt made of ``topic`` and the given parts (a new dict)."""
    return dict(_labels(topic, constraints, domain, context, multistep, twist, toxic, image))


@cache  # ~100 topics × a few hundred part combinations: memoized for speed
def _labels(
    topic: Topic,
    constraints: int,
    domain: bool,
    context: bool,
    multistep: bool,
    twist: bool,
    toxic: bool,
    image: bool,
) -> dict:
    crit = set(BASE_CRITERIA[topic.category]) if topic is not GREETING else set()
    if constraints or domain:
        crit.add("specificity")
    if domain:
        crit |= {"domain_knowledge", "technical_accuracy"}
    if context:
        crit.add("real_world")
    if multistep or constraints >= 2:
        crit.add("complexity")
    if multistep:
        crit.add("problem_solving")
    if twist:
        crit.add("creativity")
    base_if = 2 if topic.category == "instruction_following" else 0
    row = {c: c in crit for c in CRITERIA}
    creative = topic.category == "creative_writing" or "creative_writing" in topic.vision
    row.update(
        topic=topic.key,
        category=topic.category,
        criteria_count=len(crit),
        hard=len(crit) >= HARD_MIN_CRITERIA,
        math=topic.math,
        creative_writing=creative,
        if_score=min(5, base_if + 2 * constraints + int(multistep)),
        would_refuse=topic.sensitive or toxic,
        code=topic.category == "coding",
        image=image,
    )
    for label in VISION_LABELS:
        row[f"vision_{label}"] = (label in topic.vision) if image else None
    return row


LABEL_COLUMNS = (
    ("topic", "category")
    + CRITERIA
    + (
        "criteria_count",
        "hard",
        "math",
        "creative_writing",
        "if_score",
        "would_refuse",
        "code",
        "image",
    )
    + tuple(f"vision_{v}" for v in VISION_LABELS)
)
