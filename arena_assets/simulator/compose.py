"""Compose a first prompt from parts and record its hidden labels.

Order in the text: [context] request(topic) [domain clause] [multi-step ask] [constraints]
[twist] [filler]. The request templates and fillers come from ``lexicon``; the parts from
``parts_*``. Which parts appear depends on the category (a coding prompt more often names
a domain term, a creative one more often asks for a twist), so categories differ in their
mix of criteria, and the labels follow from the parts alone (``topics.prompt_labels``).
"""

from __future__ import annotations

import random

from arena_assets.simulator.config import VISION_CATEGORIES
from arena_assets.simulator.lexicon import LEX, SENTENCE_SEP
from arena_assets.simulator.topics import (
    GREETING,
    PARTS,
    TOPICS_BY_CATEGORY,
    domain_terms,
    prompt_labels,
)

TECHNICAL = frozenset(
    {"coding", "math", "hard_multistep", "homework", "diagram", "entity_recognition"}
)
CREATIVE = frozenset({"creative_writing", "humor"})
# P(0, 1, 2 constraints)
N_CONSTRAINTS = {"instruction_following": (0.2, 0.5, 0.3), "default": (0.45, 0.4, 0.15)}


class PromptComposer:
    """One seeded ``random.Random`` drives every choice, so a month is reproducible."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def compose(self, lang: str, category: str) -> tuple[str, dict]:
        rng = self.rng
        lx, px, sep = LEX[lang], PARTS[lang], SENTENCE_SEP[lang]
        topic = rng.choice(TOPICS_BY_CATEGORY[category])
        technical = category in TECHNICAL
        context = rng.random() < 0.3
        domain = rng.random() < (0.35 if technical else 0.1)
        multistep = rng.random() < (0.3 if technical else 0.1)
        twist = rng.random() < (0.35 if category in CREATIVE else 0.06)
        p0, p1, _ = N_CONSTRAINTS.get(category, N_CONSTRAINTS["default"])
        u = rng.random()
        n_constraints = 0 if u < p0 else (1 if u < p0 + p1 else 2)
        pieces = []
        if context:
            pieces.append(rng.choice(px["contexts"]))
        pieces.append(rng.choice(lx["ask"]).format(x=px["topics"][category][topic.index]))
        if domain:
            pieces.append(px["domain"].format(t=rng.choice(domain_terms(category))))
        if multistep:
            pieces.append(rng.choice(px["multistep"]))
        for c in rng.sample(range(len(px["constraints"])), n_constraints):
            pieces.append(px["constraints"][c].format(n=rng.randrange(2, 13)))
        if twist:
            pieces.append(rng.choice(px["twist"]))
        if rng.random() < 0.4:
            pieces.append(rng.choice(lx["extra"]))
        labels = prompt_labels(
            topic,
            constraints=n_constraints,
            domain=domain,
            context=context,
            multistep=multistep,
            twist=twist,
            image=category in VISION_CATEGORIES,
        )
        return sep.join(pieces), labels

    @staticmethod
    def greeting_labels() -> dict:
        return prompt_labels(GREETING)

    def refusal(self, lang: str) -> str:
        return self.rng.choice(PARTS[lang]["refuse"])
