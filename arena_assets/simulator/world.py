"""The hidden world: models with skill and style, users with habits, abusive voters."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from arena_assets.simulator.config import CATEGORIES, LANGUAGE_SHARE, LANGUAGES, WorldConfig
from arena_assets.simulator.lexicon import MODEL_BASES, MODEL_SIZES, MODEL_SUFFIXES, ORGANIZATIONS

MAX_MODELS = 3 * len(MODEL_BASES)  # a production-size month has 120 (benchmarks/full_month.py)

ABUSE_KINDS = ("always_for", "burst")
LICENSES = (
    "Proprietary",
    "Proprietary",
    "Apache 2.0",
    "MIT",
    "Llama 3.1 Community",
    "CC BY-NC 4.0",
)


def month_index(month: str) -> int:
    year, mon = month.split("-")
    return int(year) * 12 + int(mon) - 1


def month_name(index: int) -> str:
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    organization: str
    theta: float  # base skill, Elo scale
    offsets: dict[str, float]  # per-category skill offsets (Elo points)
    verbosity: float  # answer length multiplier
    markdown: float  # in [0, 1]: chance of headers / lists / bold per block
    vision: bool
    release_month: str
    aliases: tuple[str, ...]  # names the model calls itself by
    popularity: float  # weight when a user picks it for a direct chat
    cautious: bool = False  # refuses prompts whose truth says would_refuse (votes.py)

    def skill(self, category: str) -> float:
        return self.theta + self.offsets[category]


@dataclass(frozen=True)
class Users:
    """Columnar user table (numpy arrays / lists), index = user number."""

    user_id: list[str]
    ip: list[str]
    logs_ip: np.ndarray  # bool: events carry "ip" (else "user_id")
    language: np.ndarray  # index into LANGUAGES
    english_mix: np.ndarray  # chance that a session is in English anyway
    activity: np.ndarray  # relative session rate
    vote_propensity: np.ndarray  # chance to vote at the end of a battle
    tie_propensity: np.ndarray  # multiplier of the tie probability
    kind: list[str]  # "honest" | "always_for" | "burst" | rigging.RIG_KINDS (planted attacks)
    target: np.ndarray  # model index for always_for voters and rigging accounts, else -1
    burst_side: list[str | None]  # "random" | "left" | "right" for burst voters
    # device id per user when the world logs identity fields (simulator/rigging.py), else ()
    device_id: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.user_id)


@dataclass(frozen=True)
class World:
    config: WorldConfig
    seed: int
    models: tuple[ModelSpec, ...]
    users: Users

    @classmethod
    def build(cls, config: WorldConfig | None = None, seed: int = 0) -> World:
        config = config or WorldConfig()
        if not 2 <= config.n_models <= MAX_MODELS:
            raise ValueError(f"n_models must be in [2, {MAX_MODELS}]")
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5EED]))
        models = _build_models(config, rng)
        users = _build_users(config, rng)
        # a separate stream, so adding the trait left every other draw of a seed unchanged
        caution = np.random.default_rng(np.random.SeedSequence([seed, 0xCA07])).random(len(models))
        models = tuple(
            replace(m, cautious=bool(c < config.cautious_fraction)) for m, c in zip(models, caution)
        )
        if config.identity_fields or config.shared_network_share:
            from arena_assets.simulator.rigging import with_networks  # own random stream

            users = with_networks(users, config, seed)
        return cls(config, seed, models, users)

    @property
    def model_names(self) -> list[str]:
        return [m.name for m in self.models]

    def model(self, name: str) -> ModelSpec:
        for m in self.models:
            if m.name == name:
                return m
        raise KeyError(name)

    def available(self, month: str) -> list[int]:
        """Models released by ``month`` (launch models when the month precedes them all)."""
        idx = month_index(month)
        out = [i for i, m in enumerate(self.models) if month_index(m.release_month) <= idx]
        if len(out) < 2:
            out = [
                i for i, m in enumerate(self.models) if m.release_month == self.config.first_month
            ]
        return out

    def registry(self) -> list[dict]:
        """What the platform publishes in models.json: no skill, no style; a licence and a
        knowledge cutoff (3-9 months before release) from a stream of their own, so adding
        them changed no other draw of a seed."""
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 0x11CE]))
        licenses = rng.choice(len(LICENSES), size=len(self.models))
        lags = rng.integers(3, 10, size=len(self.models))
        return [
            {
                "name": m.name,
                "vision": m.vision,
                "organization": m.organization,
                "license": LICENSES[int(lic)],
                "knowledge_cutoff": month_name(month_index(m.release_month) - int(lag)),
            }
            for m, lic, lag in zip(self.models, licenses, lags)
        ]


def _build_models(config: WorldConfig, rng: np.random.Generator) -> tuple[ModelSpec, ...]:
    n = config.n_models
    # beyond one model per base name, later generations of the same families ("aurora2-...")
    # in the same order; worlds of up to len(MODEL_BASES) models are unchanged by this
    order = rng.permutation(len(MODEL_BASES))
    bases = [order[i % len(order)] for i in range(n)]
    first = month_index(config.first_month)
    n_initial = max(4, round(config.initial_model_share * n))
    release = np.full(n, first)
    later = rng.integers(1, max(2, config.release_span_months), size=n)
    release[n_initial:] = first + later[n_initial:]
    vision = rng.random(n) < config.vision_fraction
    vision[: min(2, n)] = True  # at least two launch models can see images, so vision battles exist
    theta = rng.normal(config.theta_mean, config.theta_sd, size=n)
    # later releases tend to be stronger, so the leaderboard moves over time
    theta += (release - first) * 8.0
    offsets = rng.normal(0.0, 1.0, size=(n, len(CATEGORIES))) * config.category_skill_spread
    verbosity = np.exp(rng.normal(0.0, 0.35, size=n))
    markdown = rng.beta(1.5, 1.5, size=n)
    popularity = np.exp(rng.normal(0.0, 0.5, size=n))
    models = []
    for i in range(n):
        base = MODEL_BASES[bases[i]] + (
            str(i // len(MODEL_BASES) + 1) if i >= len(MODEL_BASES) else ""
        )
        size = MODEL_SIZES[rng.integers(len(MODEL_SIZES))]
        suffix = MODEL_SUFFIXES[rng.integers(len(MODEL_SUFFIXES))]
        org = ORGANIZATIONS[rng.integers(len(ORGANIZATIONS))]
        models.append(
            ModelSpec(
                name=f"{base.lower()}-{size.lower()}-{suffix}",
                organization=org,
                theta=round(float(theta[i]), 3),
                offsets={c: round(float(offsets[i, j]), 3) for j, c in enumerate(CATEGORIES)},
                verbosity=round(float(verbosity[i]), 4),
                markdown=round(float(markdown[i]), 4),
                vision=bool(vision[i]),
                release_month=month_name(int(release[i])),
                aliases=(base, f"{base}-{size}", f"{base}-{size}-{suffix.capitalize()}"),
                popularity=round(float(popularity[i]), 4),
            )
        )
    return tuple(models)


def _build_users(config: WorldConfig, rng: np.random.Generator) -> Users:
    n = config.n_users
    codes = rng.integers(0, 2**48, size=n, dtype=np.int64)
    user_id = [f"u-{int(c):012x}" for c in codes]
    octets = rng.integers(1, 255, size=(n, 4))
    octets[:, 0] = rng.integers(11, 224, size=n)
    ip = [f"{a}.{b}.{c}.{d}" for a, b, c, d in octets.tolist()]
    n_abusive = round(config.abusive_fraction * n)
    kind = ["honest"] * n
    target = np.full(n, -1)
    burst_side: list[str | None] = [None] * n
    abusive_idx = rng.choice(n, size=n_abusive, replace=False) if n_abusive else np.array([], int)
    for j, u in enumerate(sorted(abusive_idx.tolist())):
        if j % 2 == 0:
            kind[u] = "always_for"
            target[u] = int(rng.integers(config.n_models))
        else:
            kind[u] = "burst"
            burst_side[u] = ("random", "left", "right")[int(rng.integers(3))]
    return Users(
        user_id=user_id,
        ip=ip,
        logs_ip=rng.random(n) < 0.7,
        language=rng.choice(
            len(LANGUAGES), size=n, p=np.array(LANGUAGE_SHARE) / sum(LANGUAGE_SHARE)
        ),
        english_mix=rng.uniform(0.0, 0.3, size=n),
        activity=np.exp(rng.normal(0.0, 1.0, size=n)),
        vote_propensity=rng.uniform(0.4, 1.0, size=n),
        tie_propensity=rng.uniform(0.5, 1.5, size=n),
        kind=kind,
        target=target,
        burst_side=burst_side,
    )
