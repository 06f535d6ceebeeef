"""Simulated judges and reward models on the arena's own battles, with a known accuracy.

Bench answers carry their quality in a tag (``judge.py``); arena answers do not (they are
the platform's logs). A judge or reward model shown arena answers finds their battle
instead: the simulator writes the sha256 of each side's first answer to
``_truth/battle_answers`` and the vote's facts to ``_truth/votes``. From them and the
world, each side's *strength* is what the human votes are built on (``votes.py``):

    u(side) = [skill(model, category) · gain(criteria) − refusal_penalty · refused] · ln10/400

so ``u_A − u_B`` is the skill part of the human's logit, without the voters' own position
and style preferences. A pairwise judge's margin is then ``judge.judge_verdict`` with
``strength(q_A) − strength(q_B)`` replaced by ``u_A − u_B``: the same per-answer deviation,
noise stream and planted position / length biases as on the bench. The probability that
the judge agrees with a vote follows from those parameters and the truth alone, which is
what the tests compute independently (the "planted accuracy").

Reward models (``REWARD_MODELS``, served on ``/pooling`` like vLLM's reward models) score
one side alone: ``u(side) − u(θ_mean) + deviation(answer) + length_bias ·
tanh(tokens / length_scale) + noise``; the difference of two sides is again ``u_A − u_B``
plus noise and bias.

An answer that is not in the truth (another world, edited text) gets None: the caller falls
back to the bench judge (quality tags) or a noisy score.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import polars as pl

from arena_assets.evaluators.transcripts import first_answer
from arena_assets.simulator.config import CATEGORIES, TEXT_CATEGORIES
from arena_assets.simulator.judge import JudgeBias, judge_verdict, keyed_rng, perceived_tokens
from arena_assets.simulator.truth import TRUTH_DIR
from arena_assets.simulator.votes import ELO_LOGIT, difficulty_gain
from arena_assets.simulator.world import World

LIST_EVERY_S = 1.0  # how often the endpoint looks for new truth files
REWARD_MODELS = {
    "sim-reward": JudgeBias(noise=0.35),
    # prefers long answers: the bias a reward model is often accused of
    "sim-reward-verbose": JudgeBias(
        noise=0.35, length_bias=1.0, length_scale=300.0, stream="sim-reward"
    ),
}


def answer_key(text: str) -> str:
    """sha256 of a first answer's stripped text (``session.answer_sha`` writes the same)."""
    return hashlib.sha256(text.strip().encode()).hexdigest()


def side_strength(world: World, model: str, category: str, criteria: int, refused: bool) -> float:
    """u(side) in logit units (see the module docstring)."""
    cat = category if category in CATEGORIES else TEXT_CATEGORIES[-1]
    cfg = world.config
    elo = (
        world.model(model).skill(cat) * difficulty_gain(criteria, cfg)
        - cfg.refusal_penalty * refused
    )
    return elo * ELO_LOGIT


@dataclass(frozen=True)
class Side:
    event_id: str
    side: str  # "a" | "b"
    strength: float


class BattleTruth:
    """Answer hash -> the battle sides it may belong to, with their strengths."""

    def __init__(self, world: World, votes: pl.DataFrame, answers: pl.DataFrame) -> None:
        facts = votes.join(answers, on="event_id", how="inner")
        self._sides: dict[str, list[Side]] = {}
        self.baseline = world.config.theta_mean * ELO_LOGIT
        known = set(world.model_names)
        for row in facts.iter_rows(named=True):
            if row["model_a"] not in known or row["model_b"] not in known:
                continue  # a vote of another world: its strengths are not this world's
            for s in "ab":
                u = side_strength(
                    world,
                    row[f"model_{s}"],
                    row["category"],
                    int(row["criteria_count"]),
                    bool(row[f"refused_{s}"]),
                )
                self._sides.setdefault(row[f"answer_sha_{s}"], []).append(
                    Side(row["event_id"], s, u)
                )

    @classmethod
    def from_files(
        cls, world: World, fs, votes: list[str], answers: list[str]
    ) -> BattleTruth | None:
        """None when there is no battle truth, or when it was written by another world
        (another seed: its battles' strengths would be read from the wrong models)."""
        if not votes or not answers:
            return None
        info = f"{votes[0].rsplit('/', 2)[0]}/world.json"
        if fs.exists(info):
            with fs.open(info, "rb") as fh:
                if orjson.loads(fh.read()).get("seed") != world.seed:
                    return None
        cols = [
            "event_id",
            "model_a",
            "model_b",
            "category",
            "criteria_count",
            "refused_a",
            "refused_b",
        ]

        def read(path: str, columns=None) -> pl.DataFrame:
            with fs.open(path, "rb") as fh:
                return pl.read_parquet(fh, columns=columns)

        return cls(
            world, pl.concat([read(f, cols) for f in votes]), pl.concat([read(f) for f in answers])
        )

    @classmethod
    def from_root(cls, world: World, root: str | Path) -> BattleTruth | None:
        import fsspec

        fs, base = fsspec.core.url_to_fs(f"{str(root).rstrip('/')}/{TRUTH_DIR}")
        return cls.from_files(world, fs, *_truth_files(fs, base))

    def side(self, answer: str) -> Side | None:
        """A side whose first answer this is (any of them when a text repeats)."""
        found = self._sides.get(answer_key(first_answer(answer)))
        return found[0] if found else None

    def pair(self, answer_a: str, answer_b: str) -> tuple[Side, Side] | None:
        """The two sides of one battle shown as A and B (either order), or None."""
        sides_a = self._sides.get(answer_key(first_answer(answer_a))) or []
        sides_b = {
            (s.event_id, s.side): s
            for s in self._sides.get(answer_key(first_answer(answer_b))) or []
        }
        for sa in sides_a:
            other = sides_b.get((sa.event_id, "b" if sa.side == "a" else "a"))
            if other is not None:
                return sa, other
        return None


def battle_verdict(
    truth: BattleTruth,
    *,
    key: bytes,
    question: str,
    answer_a: str,
    answer_b: str,
    bias: JudgeBias,
    judge: str,
) -> str | None:
    """The pairwise judge's text on two sides of one arena battle, None when they are not."""
    pair = truth.pair(answer_a, answer_b)
    if pair is None:
        return None
    margin = pair[0].strength - pair[1].strength
    return judge_verdict(
        key=key,
        question=question,
        answer_a=answer_a,
        answer_b=answer_b,
        bias=bias,
        judge=judge,
        margin=margin,
    )[0]


def reward_score(
    truth: BattleTruth | None,
    *,
    key: bytes,
    question: str,
    answer: str,
    bias: JudgeBias,
    model: str,
) -> float:
    """A reward model's scalar for one answer; an answer not in the truth scores noise."""
    side = truth.side(answer) if truth is not None else None
    u = (side.strength - truth.baseline) if side is not None and truth is not None else 0.0
    deviation = keyed_rng(key, "deviation", answer).normal(0.0, bias.answer_noise)
    tokens = perceived_tokens(answer)[0]
    noise = keyed_rng(key, "reward", bias.stream or model, question, answer).normal(0.0, bias.noise)
    return float(u + deviation + bias.length_bias * math.tanh(tokens / bias.length_scale) + noise)


def _truth_files(fs, base: str) -> tuple[list[str], list[str]]:
    return tuple(sorted(fs.glob(f"{base}/{d}/*.parquet")) for d in ("votes", "battle_answers"))  # type: ignore[return-value]


class BattleTruthCache:
    """The endpoint's BattleTruth, rebuilt when the set of truth files changes. The truth
    is under the endpoint's local raw root, or under a remote one given with ``use``
    (the demo on S3: the simulator wrote its truth to the bucket)."""

    def __init__(self, world: World, root: Path | None) -> None:
        self.world = world
        self._lock = threading.Lock()
        self._files: tuple = ()
        self._truth: BattleTruth | None = None
        self._fs, self._base = None, None
        self._listed = 0.0
        if root is not None:
            self.use(str(root))

    def use(self, root: str, storage_options: dict | None = None) -> None:
        """Read the truth under ``root`` (a raw root: local path or fsspec URL)."""
        import fsspec

        with self._lock:
            self._fs, self._base = fsspec.core.url_to_fs(
                f"{root.rstrip('/')}/{TRUTH_DIR}", **(storage_options or {})
            )
            self._files = ()

    def get(self) -> BattleTruth | None:
        with self._lock:
            if self._fs is None:
                return None
            # listing a bucket on every call would cost a request per judgment: once a second
            if time.monotonic() - self._listed > LIST_EVERY_S or not self._files:
                self._listed = time.monotonic()
                files = _truth_files(self._fs, self._base)
                if files != self._files:
                    self._truth = BattleTruth.from_files(self.world, self._fs, *files)
                    self._files = files
            return self._truth


def pooling_values(scores: list[float]) -> list[dict]:
    """vLLM's /pooling ``data`` items for one reward per input."""
    return [
        {"index": i, "object": "pooling", "data": [float(np.float32(s))]}
        for i, s in enumerate(scores)
    ]
