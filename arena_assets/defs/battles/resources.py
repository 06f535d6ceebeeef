"""The battles stage's own settings: the battle filter's rules."""

from __future__ import annotations

import dagster as dg
import fsspec  # the alias table and identity names may live on S3


class BattleRules(dg.ConfigurableResource):
    """The battle filter's settings (defaults documented in ``arena_assets.battles.config``).

    ``alias_table`` is a CSV file ``alias,canonical,valid_from,valid_to`` (dates may be
    empty); ``identity_names`` a JSON object ``{model: [names it may call itself]}``.
    """

    alias_table: str = ""
    identity_names: str = ""
    dedup_percentile: float = 99.9
    daily_vote_cap: int = 50
    # the sequential test's false-alarm bound per honest voter (see battles/anomaly.py);
    # a string because Dagster's EnvVar has no float form
    anomaly_alpha: str = "0.001"
    # the rigging stages (linked identities, served-but-not-voted); off = the filter
    # without them, e.g. to compare in the Launchpad (battles/config.py RiggingConfig)
    rigging_filters: bool = True
    # the population rules (battles/cohort.py): the weight of a vote by an account without
    # history, and the cohort tests' false-alarm bound per month (strings: no float EnvVar)
    fresh_vote_weight: str = "0.25"
    cohort_alpha: str = "0.01"
    # votes per pair (this month's established and earlier months') a cohort needs
    cohort_min_reference: int = 20
    # off = every vote weighs 1, e.g. to compare in the Launchpad
    population_defences: bool = True
    seed: int = 0

    def config(self, registry: list[dict] | None = None):
        """The BattleConfig; ``registry`` (models.json entries) adds every known model name
        and organisation to the identity-leak vocabulary, so an answer naming a model that
        has no vote this month is still caught."""
        import csv
        import json

        from arena_assets.battles import AnomalyConfig, BattleConfig
        from arena_assets.battles.config import CohortConfig, RiggingConfig

        aliases: list[tuple] = []
        if self.alias_table:  # fsspec: the table may live next to the logs on S3
            with fsspec.open(self.alias_table, "r", newline="") as fh:
                for row in csv.DictReader(fh):
                    aliases.append(
                        (
                            row["alias"],
                            row["canonical"],
                            row.get("valid_from") or None,
                            row.get("valid_to") or None,
                        )
                    )
        names = {}
        if self.identity_names:
            with fsspec.open(self.identity_names, "r") as fh:
                names = json.load(fh)
        registry = registry or []
        return BattleConfig(
            aliases=tuple(aliases),
            identity_names=names,
            dedup_percentile=self.dedup_percentile,
            known_models=tuple(sorted(r["name"] for r in registry)),
            extra_identity_words=tuple(
                sorted({str(r["organization"]).lower() for r in registry if r.get("organization")})
            ),
            daily_vote_cap=self.daily_vote_cap,
            anomaly=AnomalyConfig(alpha=float(self.anomaly_alpha)),
            rigging=RiggingConfig(enabled=self.rigging_filters),
            cohort=CohortConfig(
                enabled=self.population_defences,
                fresh_weight=_fraction(self.fresh_vote_weight, "ARENA_FRESH_VOTE_WEIGHT"),
                cohort_alpha=_fraction(self.cohort_alpha, "ARENA_COHORT_ALPHA"),
                cohort_min_reference=self.cohort_min_reference,
            ),
            seed=self.seed,
        )


def _fraction(value: str, name: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value!r}")
    return number


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "battle_rules": BattleRules(
                alias_table=dg.EnvVar("ARENA_ALIAS_TABLE"),
                identity_names=dg.EnvVar("ARENA_IDENTITY_NAMES"),
                daily_vote_cap=dg.EnvVar.int("ARENA_DAILY_VOTE_CAP"),
                anomaly_alpha=dg.EnvVar("ARENA_ANOMALY_ALPHA"),
                fresh_vote_weight=dg.EnvVar("ARENA_FRESH_VOTE_WEIGHT"),
                cohort_alpha=dg.EnvVar("ARENA_COHORT_ALPHA"),
                cohort_min_reference=dg.EnvVar.int("ARENA_COHORT_MIN_REFERENCE"),
            )
        }
    )
