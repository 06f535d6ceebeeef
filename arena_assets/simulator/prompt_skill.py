"""Per-prompt skill offsets: a model's strength depends on the prompt's topic and language.

Off by default (``WorldConfig.prompt_skill_spread = 0``): then nothing here runs and every
output of a seed is what it was before this feature. When on, a battle's skills become

    skill_m(prompt) = skill_m(category) + offset_m(topic, language)
    offset_m(topic, language) = spread · (u_m · v_topic) / √rank + spread/2 · l_m,language

with u_m, v_topic, l_m,language standard normal, drawn from streams of their own (seed and a
tag; v from the topic's name, so adding a topic moves no other), i.e. a low-rank
model × topic interaction plus a model × language one (Elo points). Votes then follow
``votes.py`` with these skills. ``true_strengths`` gives, for any prompt of the truth, each
model's prompt-level Elo strength: what a prompt-to-leaderboard model should recover
(skill with the offset, times the prompt's difficulty gain, minus the expected refusal loss
of a cautious model on a prompt it would refuse). Answer style and the side bias are not
in it: they depend on the answers, which a prompt cannot know.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import polars as pl

from arena_assets.simulator.config import LANGUAGES
from arena_assets.simulator.topics import GREETING, TOPICS
from arena_assets.simulator.votes import difficulty_gain
from arena_assets.simulator.world import World

_MODEL_TAG, _TOPIC_TAG, _LANGUAGE_TAG = 0x9201, 0x9202, 0x9203
TOPIC_KEYS = tuple(t.key for t in TOPICS) + (GREETING.key,)


@dataclass(frozen=True)
class PromptSkills:
    """The offsets of one world; ``offset(m, topic, language)`` in Elo points."""

    spread: float
    rank: int
    model_factors: np.ndarray  # (models, rank)
    language: np.ndarray  # (models, languages)
    seed: int

    @classmethod
    def of(cls, world: World) -> PromptSkills:
        cfg = world.config
        rank = max(1, int(cfg.prompt_skill_rank))
        u = np.random.default_rng([world.seed, _MODEL_TAG]).standard_normal(
            (len(world.models), rank)
        )
        lang = np.random.default_rng([world.seed, _LANGUAGE_TAG]).standard_normal(
            (len(world.models), len(LANGUAGES))
        )
        return cls(float(cfg.prompt_skill_spread), rank, u, lang, world.seed)

    @property
    def active(self) -> bool:
        return self.spread > 0

    def topic_factor(self, topic: str) -> np.ndarray:
        return np.random.default_rng(
            [self.seed, _TOPIC_TAG, zlib.crc32(topic.encode())]
        ).standard_normal(self.rank)

    def offsets(self, topic: str, language: str) -> np.ndarray:
        """Every model's offset (Elo) on a prompt of ``topic`` in ``language``."""
        if not self.active:
            return np.zeros(self.model_factors.shape[0])
        inter = self.model_factors @ self.topic_factor(topic) / np.sqrt(self.rank)
        col = LANGUAGES.index(language) if language in LANGUAGES else None
        lang = self.language[:, col] if col is not None else 0.0
        return self.spread * (inter + 0.5 * lang)

    def table(self, model_names: list[str]) -> pl.DataFrame:
        """One row per (model, topic, language): the offset in Elo (the truth file)."""
        rows = []
        for topic in TOPIC_KEYS:
            for language in LANGUAGES:
                rows.append(self.offsets(topic, language))
        values = np.stack(rows)  # (topics·languages, models)
        n_tl = values.shape[0]
        return pl.DataFrame(
            {
                "model": np.repeat(model_names, n_tl).tolist(),
                "topic": [t for _ in model_names for t in TOPIC_KEYS for _l in LANGUAGES],
                "language": [lg for _ in model_names for _t in TOPIC_KEYS for lg in LANGUAGES],
                "offset": values.T.ravel(),
            }
        )


def true_strengths(world: World, prompts: pl.DataFrame) -> np.ndarray:
    """(prompts × models) Elo strengths each prompt alone implies (see module docstring).

    ``prompts`` has the truth's ``topic, category, language, criteria_count, would_refuse``.
    """
    cfg = world.config
    skills = PromptSkills.of(world)
    base = np.array([[m.skill(c) for m in world.models] for c in prompts["category"].to_list()])
    gain = np.array([difficulty_gain(int(c), cfg) for c in prompts["criteria_count"].to_list()])
    out = base.copy()
    if skills.active:
        out += np.stack(
            [
                skills.offsets(t, lg)
                for t, lg in zip(
                    prompts["topic"].to_list(), prompts["language"].to_list(), strict=True
                )
            ]
        )
    out *= gain[:, None]
    cautious = np.array([m.cautious for m in world.models], dtype=float)
    refuse = prompts["would_refuse"].fill_null(False).to_numpy().astype(float)
    return out - cfg.refusal_penalty * cfg.refusal_rate * refuse[:, None] * cautious[None, :]
