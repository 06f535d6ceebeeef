"""Simulated LLM judge and the answer-quality tag it reads (pure functions, seeded).

An answer's hidden quality is a probability in [0, 1]: the chance it beats an average
model's answer to the same prompt (0 for a refusal). The simulated endpoint's candidates
write it (``responder.candidate_answer``: true skill on the prompt's category, stretched
by its difficulty); ``simulate_answer`` is the same idea without a world, for library tests:
``q = sigmoid(s · (base_gap + difficulty_gain · c/7) + ε)`` with ``s`` a skill in logit
units (Elo/400·ln 10), ``c`` the criteria count and ε ~ N(0, answer_noise).

The judge sees only the two answer texts. The quality travels inside the text as an opaque
tag (``[ref:<hex>]`` on the last line): 6 bytes of nonce, the quality (float32) XOR-ed
with an HMAC keystream, and a 2-byte HMAC check, all under a key only the endpoint holds;
a client sees random hex, and an answer edited or made up without the key carries no valid
tag (the judge then takes quality 0, so its verdict is noise and biases only). The
judge's verdict follows
``d = q_A − q_B + position_bias + length_bias · tanh(Δlen / length_scale) + noise``:
``|d| >= strong`` gives a ``>>`` verdict, ``|d| < tie`` a tie. Δlen is the difference of
the answers' approximate cl100k token counts (tag line left out): a judge reads tokens, and
whitespace words would hide the length of Chinese or Japanese answers (a 500-token Chinese
answer is ~20 "words").

Noise streams: a judge's noise is drawn from its ``stream`` (default: its own name). The
biased judges share the fair judge's stream, so each is the fair judge plus its planted
bias (common random numbers): comparing their boards measures the bias, not two noise
draws. ``judge_replicas`` makes ``<judge>@<k>``, the same judge on its k-th stream, to
repeat a measurement over several noise draws.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import struct
from dataclasses import dataclass, replace

import numpy as np

_TAG = re.compile(r"\[ref:([0-9a-f]{24})\]")
_WORDS = (
    "analysis",
    "result",
    "approach",
    "detail",
    "method",
    "example",
    "step",
    "value",
    "system",
    "input",
    "output",
    "case",
    "reason",
    "choice",
    "option",
    "model",
    "data",
    "point",
    "answer",
    "check",
    "limit",
    "range",
    "order",
    "rule",
    "test",
    "idea",
)


@dataclass(frozen=True)
class SimAnswer:
    text: str
    quality: float  # hidden: the endpoint keeps it, the client never sees it in clear


@dataclass(frozen=True)
class JudgeBias:
    noise: float = 0.35  # sd of the judge's error, quality units
    position_bias: float = 0.0  # added in favour of Assistant A
    length_bias: float = 0.0  # weight of the length difference
    length_scale: float = 300.0  # token difference at which the length bias saturates
    tie: float = 0.15
    strong: float = 1.0
    # sd of an answer's own deviation from its model's expected quality on the prompt
    # (seeded by the answer text, so both games and every judge see the same deviation):
    # on easy prompts, where skill gaps are small, it decides most games, which is why a
    # bench of hard prompts separates models better (BenchBuilder's premise)
    answer_noise: float = 0.8
    stream: str = ""  # the noise stream ("" = the judge's own name), see the module docstring


JUDGES = {
    "sim-judge": JudgeBias(),
    "sim-judge-biased": JudgeBias(
        position_bias=0.6, length_bias=1.0, length_scale=150.0, stream="sim-judge"
    ),
    # length bias alone
    "sim-judge-verbose": JudgeBias(length_bias=1.0, length_scale=150.0, stream="sim-judge"),
}


def judge_replicas(judges: dict[str, JudgeBias], streams: range) -> dict[str, JudgeBias]:
    """``<name>@<k>`` for every judge and k: the same judge on noise stream k (judges that
    share a stream still share it), to repeat a measurement over several noise draws."""
    return {
        f"{name}@{k}": replace(bias, stream=f"{bias.stream or name}@{k}")
        for k in streams
        for name, bias in judges.items()
    }


def perceived_tokens(*texts: str) -> list[int]:
    """Approximate cl100k tokens of answers as a judge reads them (quality tag left out);
    the project's counter (``arena_assets.tokens``), one polars call for all of them."""
    import polars as pl

    from arena_assets.tokens import TOKEN_PATTERN

    cleaned = pl.Series([_TAG.sub("", t or "").rstrip() for t in texts], dtype=pl.String)
    return cleaned.str.count_matches(TOKEN_PATTERN).to_list()


def strength(quality: float | None) -> float:
    """Log-odds of a quality probability (clipped, so a refusal is a finite, bad answer)."""
    q = min(0.98, max(0.02, 0.5 if quality is None else quality))
    return math.log(q / (1.0 - q))


def tag_answer(content: str, quality: float, key: bytes, model: str, prompt: str) -> str:
    """``content`` with its quality tag as the last line (nonce from model and prompt)."""
    nonce = hmac.new(key, f"nonce|{model}|{prompt}".encode(), hashlib.sha256).digest()[:6]
    return f"{content}\n[ref:{encode_quality(quality, key, nonce)}]"


def keyed_rng(key: bytes, *parts: str) -> np.random.Generator:
    digest = hmac.new(key, "|".join(parts).encode(), hashlib.sha256).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def encode_quality(quality: float, key: bytes, nonce: bytes) -> str:
    stream = hmac.new(key, b"ks" + nonce, hashlib.sha256).digest()[:4]
    body = bytes(a ^ b for a, b in zip(struct.pack(">f", quality), stream))
    mac = hmac.new(key, b"mac" + nonce + body, hashlib.sha256).digest()[:2]
    return (nonce + body + mac).hex()


def decode_quality(tag: str, key: bytes) -> float | None:
    raw = bytes.fromhex(tag)
    nonce, body, mac = raw[:6], raw[6:10], raw[10:12]
    expected = hmac.new(key, b"mac" + nonce + body, hashlib.sha256).digest()[:2]
    if not hmac.compare_digest(mac, expected):
        return None
    stream = hmac.new(key, b"ks" + nonce, hashlib.sha256).digest()[:4]
    return struct.unpack(">f", bytes(a ^ b for a, b in zip(body, stream)))[0]


def answer_quality(text: str, key: bytes) -> float | None:
    """The hidden quality of a simulated answer, or None when it carries no valid tag."""
    found = _TAG.findall(text or "")
    return decode_quality(found[-1], key) if found else None


def simulate_answer(
    *,
    key: bytes,
    model: str,
    prompt: str,
    skill_elo: float,
    criteria: int,
    verbosity: float = 1.0,
    markdown: float = 0.5,
    answer_noise: float = 0.3,
    base_words: int = 180,
    base_gap: float = 0.5,
    difficulty_gain: float = 1.0,
) -> SimAnswer:
    """The answer ``model`` gives to ``prompt`` (deterministic in key, model and prompt);
    skill counts ``base_gap + difficulty_gain · criteria/7`` times (hard prompts separate)."""
    rng = keyed_rng(key, "answer", model, prompt)
    skill = skill_elo * math.log(10) / 400.0
    gap = base_gap + difficulty_gain * criteria / 7.0
    quality = float(1.0 / (1.0 + math.exp(-(skill * gap + rng.normal(0.0, answer_noise)))))
    n_words = max(12, int(base_words * verbosity * math.exp(rng.normal(0.0, 0.25))))
    lines, written = [], 0
    while written < n_words:
        chunk = int(rng.integers(8, 30))
        words = " ".join(rng.choice(_WORDS, size=chunk))
        roll = rng.random()
        if roll < markdown * 0.15:
            lines.append(f"## {words.split(' ', 3)[0].title()} {words.split(' ', 3)[1]}")
        elif roll < markdown * 0.6:
            lines.append(f"- {words}")
        elif roll < markdown * 0.75:
            lines.append(f"**{words.split(' ', 1)[0]}** {words}.")
        else:
            lines.append(words.capitalize() + ".")
        written += chunk
    return SimAnswer(tag_answer("\n".join(lines), quality, key, model, prompt), quality)


def judge_verdict(
    *,
    key: bytes,
    question: str,
    answer_a: str,
    answer_b: str,
    bias: JudgeBias = JudgeBias(),
    judge: str = "sim-judge",
    margin: float | None = None,
) -> tuple[str, float]:
    """(judge text ending in one verdict label, the latent margin d); ``judge`` names the
    noise stream. ``margin`` replaces the tags' strength difference when the caller knows
    the answers' strengths another way (arena battles: ``battle_judge.py``)."""
    if margin is None:
        margin = strength(answer_quality(answer_a, key)) - strength(answer_quality(answer_b, key))
    rng = keyed_rng(key, "judge", judge, question, answer_a, answer_b)
    len_a, len_b = perceived_tokens(answer_a, answer_b)
    dlen = len_a - len_b
    deviation = keyed_rng(key, "deviation", answer_a).normal(0.0, bias.answer_noise) - keyed_rng(
        key, "deviation", answer_b
    ).normal(0.0, bias.answer_noise)
    d = (
        margin
        + deviation
        + bias.position_bias
        + bias.length_bias * math.tanh(dlen / bias.length_scale)
        + rng.normal(0.0, bias.noise)
    )
    if abs(d) < bias.tie:
        label = "A=B"
    elif d > 0:
        label = "A>>B" if d >= bias.strong else "A>B"
    else:
        label = "B>>A" if -d >= bias.strong else "B>A"
    # the judge writes its own short answer first, as the prompt asks, then the verdict
    text = (
        f"My own answer: a correct reply addresses each part of the request directly.\n\n"
        f"Both answers address the request. Weighing correctness and completeness, "
        f"my verdict is: [[{label}]]"
    )
    return text, float(d)


def judge_rating(
    *, key: bytes, question: str, answer: str, noise: float = 0.5, judge: str = "sim-judge"
) -> str:
    """MT-Bench style single grade: ``Rating: [[x]]`` with x in 1..10."""
    q = strength(answer_quality(answer, key))
    rng = keyed_rng(key, "rating", judge, question, answer)
    grade = int(np.clip(round(5.5 + 1.5 * q + rng.normal(0.0, noise)), 1, 10))
    return f"The answer is judged on correctness and helpfulness.\nRating: [[{grade}]]"
