"""How a voter picks an outcome.

Honest votes. Let s_a, s_b be the true skills for the battle's category (θ + offset, Elo
scale) and

    logit = (s_a − s_b)·ln10/400 + style_strength·(Δlen + Δmd) + position_bias
    Δlen = (len_a − len_b)/(len_a + len_b)       (assistant characters)
    Δmd  = (md_a − md_b)/(md_a + md_b + 1)       (headers + list items + bold spans)
    p    = 1 / (1 + e^−logit)

A tie happens with probability t = min(1, tie_rate·u)·2·min(p, 1 − p) (u: the user's tie
propensity), and the decisive outcomes share the rest as P(a) = p − t/2, P(b) = 1 − p − t/2.
So the expected score of side a (wins + ties/2) is exactly p: Bradley-Terry with ties as
half wins is consistent, and with the style / position / category knobs at zero the votes
follow pure BT on θ. A tie is reported as "both bad" with probability
bothbad_rate·2·σ((theta_mean − mean skill)/100), i.e. more often between weak models.

Abusive votes ignore the answers: ``always_for`` votes for its target whenever it is on
screen (otherwise left/right at random); ``burst`` votes left, right, or at random.
"""

from __future__ import annotations

import math
import random

from arena_assets.contracts import WINNER_OF_VOTE
from arena_assets.simulator.config import WorldConfig

ELO_LOGIT = math.log(10.0) / 400.0
VOTE_OF_WINNER = {winner: vote for vote, winner in WINNER_OF_VOTE.items()}


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def style_logit(len_a: int, len_b: int, md_a: int, md_b: int) -> float:
    d_len = (len_a - len_b) / max(1, len_a + len_b)
    d_md = (md_a - md_b) / (md_a + md_b + 1)
    return d_len + d_md


def win_probability(skill_a: float, skill_b: float, style: float, config: WorldConfig) -> float:
    """P(a beats b) before ties, with the planted style and position biases."""
    logit = (skill_a - skill_b) * ELO_LOGIT + config.style_strength * style + config.position_bias
    return _sigmoid(logit)


def honest_outcome(
    rng: random.Random, p: float, mean_skill: float, tie_mult: float, config: WorldConfig
) -> str:
    """Winner in FastChat vocabulary: model_a / model_b / tie / tie (bothbad)."""
    t = min(1.0, config.tie_rate * tie_mult) * 2.0 * min(p, 1.0 - p)
    u = rng.random()
    if u < p - t / 2.0:
        return "model_a"
    if u < 1.0 - t:
        return "model_b"
    q = min(1.0, config.bothbad_rate * 2.0 * _sigmoid((config.theta_mean - mean_skill) / 100.0))
    return "tie (bothbad)" if rng.random() < q else "tie"


def abusive_outcome(
    rng: random.Random, kind: str, target: str | None, burst_side: str | None,
    model_a: str, model_b: str,
) -> str:
    if kind == "always_for" and target in (model_a, model_b):
        return "model_a" if target == model_a else "model_b"
    if kind == "burst" and burst_side == "left":
        return "model_a"
    if kind == "burst" and burst_side == "right":
        return "model_b"
    return "model_a" if rng.random() < 0.5 else "model_b"
