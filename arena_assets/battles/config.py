"""Configuration of the battle filter: aliases, identity names, dedup, caps, anomaly test.

Every threshold that decides whether a vote is removed lives here, with its default and the
reason for that default, so that a release can state exactly which filter produced it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime


@dataclass(frozen=True)
class AliasRule:
    """`alias` means `canonical` for votes whose UTC date lies in [valid_from, valid_to].

    A floating name such as ``gpt-4-turbo`` points at different snapshots over time, so a
    rule may be bounded on either side (``None`` = unbounded).
    """

    alias: str
    canonical: str
    valid_from: date | None = None
    valid_to: date | None = None

    @classmethod
    def of(cls, row: AliasRule | tuple) -> AliasRule:
        if isinstance(row, AliasRule):
            return row
        alias, canonical, *rest = row
        bounds = [_as_date(x) for x in rest] + [None, None]
        return cls(alias, canonical, bounds[0], bounds[1])


def _as_date(value: date | str | None) -> date | None:
    if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
        return value
    if isinstance(value, datetime):
        return value.date()
    return date.fromisoformat(str(value))


@dataclass(frozen=True)
class AnomalyConfig:
    """Parameters of the per-voter sequential test (see `arena_assets.battles.anomaly`)."""

    # Ville / Wald upper boundary: flag when the mixture likelihood ratio reaches 1/alpha.
    # Under H0 a voter is flagged with probability <= alpha over any number of votes.
    alpha: float = 1e-3
    # Beta prior of the plug-in estimate of the voter's "hit" rate under H1: the estimate
    # starts at prior_hits / (prior_hits + prior_misses) and follows the voter's own record.
    prior_hits: float = 4.0
    prior_misses: float = 1.0
    # plug-in rate kept inside [floor, ceil] so one lucky/unlucky vote cannot make the
    # likelihood ratio explode or vanish.
    q_floor: float = 0.5
    q_ceil: float = 0.98
    # Dirichlet smoothing of the crowd's outcome frequencies on a model pair: pseudo-votes
    # spread like the month's overall outcome mix; keeps thin pairs close to "no opinion".
    crowd_prior_votes: float = 4.0
    # robust reference (reference.py): this month's weight on a model pair is at most
    # crowd_month_cap_ratio x the earlier months' kept votes on it (and at least
    # crowd_month_cap_min votes' worth); a pair with no history, at most
    # crowd_first_cap_ratio x the month's median pair. 1.0: the month can at most double
    # a pair's history, so an attack cannot become its own reference.
    crowd_month_cap_ratio: float = 1.0
    crowd_month_cap_min: float = 30.0
    crowd_first_cap_ratio: float = 2.0
    # second pass recomputes the crowd without the voters flagged in the first pass
    passes: int = 2
    # burst rule: a vote inside any window of `burst_window_s` seconds holding at least
    # `burst_min_votes` votes of the same voter is flagged. 15 votes in 15 minutes is one
    # minute per vote sustained for a quarter of an hour, about the time it takes to read
    # two answers, so an honest session of a few votes stays well below it.
    burst_min_votes: int = 15
    burst_window_s: float = 900.0


@dataclass(frozen=True)
class RiggingConfig:
    """The rigging stages (linked identities, served-but-not-voted); ``enabled=False``
    gives the filter without them (the robust reference stays)."""

    enabled: bool = True
    # an ip / device / network shared by more accounts links none of them: a carrier NAT,
    # a VPN exit or a campus proxy is not one person (linking.py)
    link_max_accounts: int = 50
    # per linked cluster: twice the per-voter burst (15 in 15 min) and daily cap (50); a
    # cluster of a few honest housemates stays below, a farm of accounts does not
    cluster_burst_min_votes: int = 30
    cluster_daily_cap: int = 100
    # served-but-not-voted (selective.py): the hit rate of its alternatives, and the
    # selection ratio C(n,k)/C(n_m,k) a fresh account needs to join a signature group
    # (4: one vote after skipping three battles without the model)
    selective_q: float = 0.9
    signature_min_ratio: float = 4.0


@dataclass(frozen=True)
class CohortConfig:
    """The population rules (`cohort.py`): weights by account age and per-model cohort
    tests; ``enabled=False`` gives every vote weight 1."""

    enabled: bool = True
    # the weight of a vote by an account without history; 0.25: four newcomers' votes
    # count as one established voter's
    fresh_weight: float = 0.25
    # false-alarm bound per month over every cohort test (Bonferroni)
    cohort_alpha: float = 0.01
    # a cohort with fewer votes on the model is not tested (the normal approximation)
    cohort_min_votes: int = 20
    # a cohort is judged only when the pairs it votes on hold, on average over its votes,
    # this many votes behind their expectation (this month's established votes plus the
    # earlier months'): thinner, the expectation is mostly the prior's pseudo-votes, blind
    # to how strong the model is, and honest voters of a strong model look like a
    # deviation (a young lake's first months)
    cohort_min_reference: int = 20
    # share of an account's votes with the model on screen that makes it "concentrated"
    concentration: float = 0.5
    # pseudo-votes (in the earlier months' outcome mix on the pair) added to the month's
    # established votes on a pair, the reference of the cohort tests
    prior_votes: float = 10.0
    # hypergeometric tail below which an account is "selective" for a model: an honest
    # account enters with probability at most this (its votes ignore the hidden models)
    selection_p: float = 0.05


@dataclass(frozen=True)
class BattleConfig:
    """Everything `build_battles` needs besides the data. Defaults are documented inline."""

    # (alias, canonical, valid_from, valid_to) rows or AliasRule; dates inclusive, UTC.
    aliases: tuple[AliasRule | tuple, ...] = ()
    # model -> names that reveal it; merged over (or instead of) the derived defaults.
    identity_names: dict[str, list[str]] = field(default_factory=dict)
    derive_identity_names: bool = True
    # every model the platform knows (e.g. the names in models.json): an answer may name a
    # model that is not in this month's votes
    known_models: tuple[str, ...] = ()
    # extra words that reveal *some* identity (organisations: "openai", "anthropic", ...)
    extra_identity_words: tuple[str, ...] = ()
    # top-prompt dedup (FastChat style): prompts counted more often than this percentile of
    # the per-prompt counts keep a seeded sample of `threshold` battles.
    dedup_percentile: float = 99.9
    dedup_min_threshold: int = 1
    # daily cap: votes of one voter beyond the N-th in a UTC day are flagged. 50 is far above
    # what an honest person reads in a day (two answers per vote) yet leaves sessions alone.
    daily_vote_cap: int = 50
    anomaly: AnomalyConfig = field(default_factory=AnomalyConfig)
    rigging: RiggingConfig = field(default_factory=RiggingConfig)
    cohort: CohortConfig = field(default_factory=CohortConfig)
    seed: int = 0

    def alias_rules(self) -> list[AliasRule]:
        return [AliasRule.of(r) for r in self.aliases]


# suffixes that mark a version of the same model, stripped to get its family name
_VERSION_SUFFIX = re.compile(
    r"(?:-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|\d{2}-\d{2}|v\d+(?:\.\d+)*|\d+(?:\.\d+)?[bmk]"
    r"|\d+x\d+[bmk]|instruct|chat|preview|latest|exp|hf|it))+$",
    re.IGNORECASE,
)


def derived_identity_names(model: str) -> list[str]:
    """Names a model (or a rival describing it) would use: full name, name without version
    suffix (``zephyr-7b-beta`` -> ``zephyr-7b`` ... -> ``zephyr``) and the leading family
    word when it is alphabetic (``claude-3-opus`` -> ``claude``)."""
    names = [model.lower()]
    stripped = model.lower()
    while True:
        shorter = _VERSION_SUFFIX.sub("", stripped)
        shorter = re.sub(r"-(?:beta|alpha)$", "", shorter)
        if shorter == stripped or not shorter:
            break
        stripped = shorter
        names.append(stripped)
    family = re.split(r"[-_ ./]", model.lower(), maxsplit=1)[0]
    if family.isalpha() and len(family) >= 3:
        names.append(family)
    return list(dict.fromkeys(names))


def identity_table(models: list[str], config: BattleConfig) -> dict[str, list[str]]:
    """model -> lowercased names to look for; configured names extend the derived ones."""
    table: dict[str, list[str]] = {}
    for model in sorted(set(models) | set(config.known_models) | set(config.identity_names)):
        names = derived_identity_names(model) if config.derive_identity_names else []
        names += [n.lower() for n in config.identity_names.get(model, [])]
        table[model] = list(dict.fromkeys(n for n in names if n.strip()))
    return table
