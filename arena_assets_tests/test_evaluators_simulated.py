"""The evaluators against the simulator's hidden truth (slow: one 8,000-session month).

judge_human_agreement: the simulated judges and reward model have a planted accuracy. From
the truth alone (each side's strength on the battle's category and difficulty, refusals,
the judge's noise, per-answer deviation, tie and strong thresholds, position and length
bias), this test computes each judge's probability of picking the voter's side on every
sampled battle (PPE's accuracy: a tie is a miss; and ties as half), integrating the unknown
per-answer deviation numerically, and asks the measured accuracy's clustered-bootstrap
interval to contain the mean. The planted biases must show: the biased
judge's A share, flip rate and length preference above the fair judge's.

over_refusal: the simulator's cautious models are the planted over-refusers; the board
must flag them (recall) and nobody else (precision), and they must gain on the no_refusal
board.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from arena_assets.simulator import simulate_months
from arena_assets.simulator.battle_judge import REWARD_MODELS
from arena_assets.simulator.judge import JUDGES, perceived_tokens
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTH = "2024-05"
UPSTREAM = "raw_logs,raw_rejects,conversations,topic_labels,battles,battle_cells,arena_leaderboard"
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(48)  # E[f(Z)], Z ~ N(0, 1)
WEIGHTS = WEIGHTS / WEIGHTS.sum()


def _strength_gap(truth: pl.DataFrame, models: pl.DataFrame, world: dict) -> dict[str, float]:
    """u_a − u_b of each vote (votes.py's documented skill part, in logits)."""
    cfg = world["config"]
    skill = {r["name"]: r for r in models.iter_rows(named=True)}
    out = {}
    for r in truth.iter_rows(named=True):
        gain = max(0.25, 1 + cfg["hardness_gain"] * (r["criteria_count"] - 3) / 4)
        elo = (
            skill[r["model_a"]][f"skill_{r['category']}"]
            - skill[r["model_b"]][f"skill_{r['category']}"]
        ) * gain + cfg["refusal_penalty"] * (int(r["refused_b"]) - int(r["refused_a"]))
        out[r["event_id"]] = elo * math.log(10) / 400
    return out


def _levels(mu: np.ndarray, sd: float, tie: float, strong: float) -> np.ndarray:
    """P(verdict score = +2, +1, 0, -1, -2) of d ~ N(mu, sd) with the judge's thresholds."""
    cdf = [stats.norm.cdf((t - mu) / sd) for t in (-strong, -tie, tie, strong)]
    return np.stack([1 - cdf[3], cdf[3] - cdf[2], cdf[2] - cdf[1], cdf[1] - cdf[0], cdf[0]])


def expected_judge(gap: float, bias, dlen: float) -> tuple[float, float, float]:
    """(P(a), P(tie), P(b)) of a two-game judge on a battle with strength gap ``gap``:
    game 1 shows a first, game 2 b first; the per-answer deviation D is shared by both
    games and integrated over N(0, 2·answer_noise²); picks by the sign of the summed scores."""
    scores = np.array([2, 1, 0, -1, -2])
    length = bias.length_bias * math.tanh(dlen / bias.length_scale)
    d = NODES * math.sqrt(2) * bias.answer_noise
    g1 = _levels(
        gap + d + bias.position_bias + length, bias.noise, bias.tie, bias.strong
    )  # 5 x nodes
    g2 = _levels(-gap - d + bias.position_bias - length, bias.noise, bias.tie, bias.strong)
    total = scores[:, None, None] - scores[None, :, None]  # s1 + s2 from side a (game 2 negated)
    joint = g1[:, None, :] * g2[None, :, :]
    p_a = float(((total > 0) * joint).sum(axis=(0, 1)) @ WEIGHTS)
    p_b = float(((total < 0) * joint).sum(axis=(0, 1)) @ WEIGHTS)
    return p_a, 1 - p_a - p_b, p_b


def expected_reward(gap: float, bias) -> tuple[float, float, float]:
    """Each side scored alone: r_a − r_b ~ N(gap, 2·answer_noise² + 2·noise²)."""
    p_a = float(stats.norm.cdf(gap / math.sqrt(2 * bias.answer_noise**2 + 2 * bias.noise**2)))
    return p_a, 0.0, 1 - p_a


@pytest.mark.slow
def test_planted_accuracy_biases_and_over_refusers(arena_env, monkeypatch) -> None:
    monkeypatch.setenv(
        "ARENA_AGREEMENT_JUDGES", "sim-judge,sim-judge-biased,reward:sim-reward,longer"
    )
    monkeypatch.setenv("ARENA_AGREEMENT_SAMPLE_SIZE", "1500")
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    simulate_months(raw, [MONTH], 8000, seed=int(arena_env["ARENA_SIM_WORLD_SEED"]))
    assert materialize(MONTH, UPSTREAM).success
    assert materialize(MONTH, "judge_human_agreement,over_refusal").success
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    table = lake.read("judge_human_agreement", MONTH).filter(pl.col("slice") == "overall")
    verdicts = lake.read("judge_human_verdicts", MONTH)
    truth = pl.read_parquet(raw / "_truth" / "votes" / f"{MONTH}.parquet")
    models = pl.read_parquet(raw / "_truth" / "models.parquet")
    world = json.loads((raw / "_truth" / "world.json").read_text())
    gap = _strength_gap(truth, models, world)
    # the transcripts the judges were shown, for the length bias
    conv = lake.read("conversations", MONTH, columns=["conv_id", "messages"])
    battles = lake.read("battles", MONTH, columns=["battle_id", "conv_id_a", "conv_id_b"])
    from arena_assets.evaluators.transcripts import side_text

    text = {c: side_text(m)[1] for c, m in conv.iter_rows()}
    sides = {b: (text[a], text[c]) for b, a, c in battles.iter_rows() if a in text and c in text}
    measured = {}
    for judge, bias in (
        ("sim-judge", JUDGES["sim-judge"]),
        ("sim-judge-biased", JUDGES["sim-judge-biased"]),
        ("reward:sim-reward", REWARD_MODELS["sim-reward"]),
    ):
        part = verdicts.filter(pl.col("judge") == judge)
        expected, expected_half = [], []
        for bid, winner in part.select("battle_id", "winner").iter_rows():
            if winner not in ("model_a", "model_b"):
                continue
            if judge.startswith("reward:"):
                p_a, p_t, p_b = expected_reward(gap[bid], bias)
            else:
                ta, tb = perceived_tokens(*sides[bid]) if bias.length_bias else (0, 0)
                p_a, p_t, p_b = expected_judge(gap[bid], bias, ta - tb)
            expected.append(p_a if winner == "model_a" else p_b)  # PPE: a judge tie is a miss
            expected_half.append(expected[-1] + 0.5 * p_t)
        row = table.filter(pl.col("judge") == judge).row(0, named=True)
        planted, planted_half = float(np.mean(expected)), float(np.mean(expected_half))
        measured[judge] = row
        print(
            f"{judge}: planted {planted:.4f}, measured {row['accuracy']:.4f} "
            f"[{row['accuracy_lower']:.4f}, {row['accuracy_upper']:.4f}] over {row['decisive_votes']} votes; "
            f"ties as half: planted {planted_half:.4f}, measured {row['accuracy_tie_half']:.4f}"
        )
        assert row["decisive_votes"] == len(expected) > 900
        assert row["accuracy_lower"] <= planted <= row["accuracy_upper"], judge
        width = row["accuracy_upper"] - row["accuracy_lower"]  # the same sampling noise
        assert abs(row["accuracy_tie_half"] - planted_half) < width, judge
    fair, biased = measured["sim-judge"], measured["sim-judge-biased"]
    for name, row in measured.items():
        print(
            f"{name}: A share {row['a_share']:.3f}, flip rate {row['flip_rate']:.3f}, length preference "
            f"{row['length_preference']:.3f} (voters {row['human_length_preference']:.3f}), kappa "
            f"{row['kappa']:.3f}, agreement w/o ties {row['agreement_without_ties']:.3f}, implied board "
            f"Spearman {row['spearman']:.3f}, row-wise Pearson {row['row_wise_pearson']:.3f}"
        )
    assert 0.42 < fair["a_share"] < 0.58 and biased["a_share"] > 0.6
    assert biased["flip_rate"] > fair["flip_rate"] + 0.1
    assert biased["length_preference"] > fair["length_preference"] + 0.08
    assert (
        measured["sim-judge"]["spearman"] > 0.5
    )  # the judge's implied board orders like the votes

    board = lake.read("over_refusal", MONTH)
    cautious = set(models.filter(pl.col("cautious"))["name"])
    judged = board.filter(pl.col("over_refuser").is_not_null())
    flagged = set(judged.filter(pl.col("over_refuser"))["model"])
    eligible = cautious & set(judged["model"])
    print(f"over-refusers flagged {sorted(flagged)}, planted {sorted(eligible)}")
    assert len(eligible) >= 3
    assert len(flagged & eligible) / len(eligible) >= 0.75  # recall
    assert flagged <= cautious  # precision: no honest answerer flagged
    ometa = (
        materialize(MONTH, "over_refusal")
        .asset_materializations_for_node("over_refusal")[0]
        .metadata
    )
    relation = ometa["no_refusal_board"].value
    assert relation["status"] == "ok" and relation["spearman_rate_vs_gain"] > 0.3
