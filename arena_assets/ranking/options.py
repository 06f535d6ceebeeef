"""One frozen set of fit options, shared by the plain fit, the style fit and the boards."""

from __future__ import annotations

import math
from dataclasses import dataclass

from arena_assets.errors import ArenaError

CI_METHODS = ("sandwich", "bootstrap")
TIE_MODES = ("half", "drop_bothbad", "drop")
STYLE_FEATURES = ("sum_assistant_tokens", "header_count", "list_count", "bold_count")
# how a style feature's two sides become one number (see arena_assets.ranking.style)
STYLE_NORMS = ("ratio", "ratio_plus_one")


class RankingInputError(ArenaError, ValueError):
    """Input that cannot give a board (unknown winner, missing anchor, too few models, …);
    the CLI prints it as one line and exits with status 2."""


@dataclass(frozen=True)
class FitOptions:
    """Everything a fit can be told. ``dataclasses.replace`` derives variants.

    ``anchor=(model, rating)`` pins that model's rating, otherwise the mean rating is
    ``init_rating``; ratings are ``scale / ln(base)`` times the natural-log strength.
    ``ci="bootstrap"`` uses percentile intervals of ``bootstrap_rounds`` seeded resamples,
    ``"sandwich"`` the robust normal interval; bootstrap ratings are kept whenever
    rounds > 0. ``min_battles`` leaves rarer models off the board.
    """

    scale: float = 400.0
    base: float = 10.0
    init_rating: float = 1000.0
    anchor: tuple[str, float] | None = None
    tie_mode: str = "half"
    min_battles: int = 0
    ci: str = "sandwich"
    level: float = 0.95
    bootstrap_rounds: int = 0
    seed: int = 0
    style_features: tuple[str, ...] = STYLE_FEATURES
    style_norm: str = "ratio"

    def __post_init__(self) -> None:
        if self.ci not in CI_METHODS:
            raise RankingInputError(f"ci must be one of {CI_METHODS}, got {self.ci!r}")
        if self.tie_mode not in TIE_MODES:
            raise RankingInputError(f"tie_mode must be one of {TIE_MODES}, got {self.tie_mode!r}")
        if self.style_norm not in STYLE_NORMS:
            raise RankingInputError(
                f"style_norm must be one of {STYLE_NORMS}, got {self.style_norm!r}"
            )
        if self.bootstrap_rounds < 0:
            raise RankingInputError(f"bootstrap rounds must be >= 0, got {self.bootstrap_rounds}")
        if self.ci == "bootstrap" and self.bootstrap_rounds == 0:
            raise RankingInputError("ci='bootstrap' needs bootstrap rounds > 0")
        if not 0 < self.level < 1:
            raise RankingInputError(f"level must be in (0, 1), got {self.level}")
        if self.min_battles < 0:
            raise RankingInputError(f"min_battles must be >= 0, got {self.min_battles}")
        if not (self.scale > 0 and self.base > 1 and math.isfinite(self.init_rating)):
            raise RankingInputError("scale must be > 0, base > 1 and init_rating finite")
