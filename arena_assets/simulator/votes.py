"""How a voter picks an outcome.

Honest votes. Let s_a, s_b be the true skills for the battle's category (θ + offset, Elo
scale), c the criteria count of the first prompt (0-7, ``topics.prompt_labels``), r_a, r_b
whether each side refused it (0/1), and

    gain  = max(0.25, 1 + hardness_gain·(c − 3)/4)
    logit = [(s_a − s_b)·gain + refusal_penalty·(r_b − r_a)]·ln10/400
            + style_strength·(Δlen + Δmd) + position_bias
    Δlen = (len_a − len_b)/(len_a + len_b)       (assistant characters)
    Δmd  = (md_a − md_b)/(md_a + md_b + 1)       (headers + list items + bold spans)
    p    = 1 / (1 + e^−logit)

A tie happens with probability t = min(1, tie_rate·u)·2·min(p, 1 − p) (u: the user's tie
propensity), and the decisive outcomes share the rest as P(a) = p − t/2, P(b) = 1 − p − t/2.
So the expected score of side a (wins + ties/2) is exactly p: Bradley-Terry with ties as
half wins is consistent, and with the style / position / category / hardness knobs at zero
and no cautious models the votes follow pure BT on θ.

Difficulty (the BenchBuilder premise): the skill gap is stretched on prompts that meet many
criteria (gain 1.6 at 7 with the default 0.6) and shrunk on easy ones (0.55 for a greeting),
so a board built from hard prompts separates models more; the order of the models within a
category never changes. Refusals: a cautious model (``ModelSpec.cautious``, a share
``cautious_fraction`` of the models) refuses a prompt whose truth says ``would_refuse`` with
probability ``refusal_rate`` and answers with a refusal sentence; the refusing side loses
``refusal_penalty`` Elo points in that vote (both refusing cancel out). A tie is reported as "both bad" with probability
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


def difficulty_gain(criteria_count: int, config: WorldConfig) -> float:
    """Stretch of the skill gap on a prompt meeting ``criteria_count`` of the 7 criteria."""
    return max(0.25, 1.0 + config.hardness_gain * (criteria_count - 3) / 4.0)


def win_probability(
    skill_a: float,
    skill_b: float,
    style: float,
    config: WorldConfig,
    gain: float = 1.0,
    refused_a: bool = False,
    refused_b: bool = False,
) -> float:
    """P(a beats b) before ties, with the planted style, position, difficulty and refusals."""
    gap = (skill_a - skill_b) * gain + config.refusal_penalty * (int(refused_b) - int(refused_a))
    logit = gap * ELO_LOGIT + config.style_strength * style + config.position_bias
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
    rng: random.Random,
    kind: str,
    target: str | None,
    burst_side: str | None,
    model_a: str,
    model_b: str,
) -> str:
    if kind == "always_for" and target in (model_a, model_b):
        return "model_a" if target == model_a else "model_b"
    if kind == "burst" and burst_side == "left":
        return "model_a"
    if kind == "burst" and burst_side == "right":
        return "model_b"
    return "model_a" if rng.random() < 0.5 else "model_b"
