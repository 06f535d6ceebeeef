"""Labelling calls and embeddings answered from the prompt truth, with per-model noise.

Contract (a real LLM can follow it too; ``arena_assets.labels`` builds these requests):

* A chat completion whose system message holds a line ``task: <name>``:
  - ``criteria-v1``: user message has the prompt between ``<prompt>`` and ``</prompt>``;
    answer ``{"specificity": bool, "domain_knowledge": bool, "complexity": bool,
    "problem_solving": bool, "creativity": bool, "technical_accuracy": bool,
    "real_world": bool, "math": bool, "creative_writing": bool, "if_score": int 0-5}``
  - ``vision-v1``: same prompt block (the image itself is not needed by the simulator);
    answer ``{"captioning", "ocr", "entity_recognition", "humor", "homework", "diagram",
    "creative_writing"}`` -> bool each
  - ``refusal-v1``: ``<prompt>...</prompt>`` and ``<answer>...</answer>``; answer
    ``{"refusal": bool}`` (did the answer refuse)
  - ``cluster-name-v1``: several ``<prompt>`` blocks; answer ``{"name": "short topic name"}``
  - ``risk-v1`` (``evaluators.refusal``): a ``<prompt>`` block; answer ``{"sensitive": bool,
    "harmful": bool}``: sensitive = the truth's ``would_refuse``, harmful = a planted toxic
    marker in the text (what the simulated moderation flags)
* The answer is one JSON object as the message content, nothing else.
* The prompt is found by its text (``prompt_truth.lookup_prompt_truth``: truth table, then
  the part parser, then surface heuristics), so a prompt cut to a maximum length by the
  client still finds its labels.

Noise (deterministic per model, text and label, so a rerun gets the same answer): a labeller
with error rate ``p`` turns a true boolean false with probability ``p`` and a false one true
with ``p/4`` (labels are mostly false; symmetric flips would swamp the rare ones), and moves
``if_score`` by one with probability ``p``; a cluster name comes from the majority topic of
the samples, replaced by the category with probability ``p``.

Embeddings: unit vectors = 0.45·category + 1.0·topic + 0.15·language + noise, each part a
seeded Gaussian direction; noise scale per embedding model. Text that names no known topic
gets a hashed character-trigram vector, so near-identical unknown texts stay close.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from functools import lru_cache

import numpy as np

from arena_assets.simulator.lexicon import TOXIC_MARKERS
from arena_assets.simulator.prompt_truth import PromptTruthIndex, lookup_prompt_truth, topic_name
from arena_assets.simulator.topics import CRITERIA, PARTS, TOPIC_BY_KEY, VISION_LABELS

# default error rates: the large one keeps every label's F1 >= 0.95 and the derived `hard`
# (>= 6 of 7 criteria, where errors compound) near 0.93 on a simulated month
LABELERS = {"sim-labeler-small": 0.18, "sim-labeler-large": 0.02}
WORLD_MODEL_LABEL_NOISE = 0.08  # a candidate model asked to label: between the two labellers
EMBEDDERS = {"sim-embed-small": 0.55, "sim-embed-large": 0.3}  # model -> noise scale
TASKS = ("criteria-v1", "vision-v1", "refusal-v1", "cluster-name-v1", "risk-v1")
TASK_LINE = re.compile(r"^\s*task:\s*([A-Za-z0-9_.-]+)\s*$", re.M)
PROMPT_BLOCK = re.compile(r"<prompt>(.*?)(?:</prompt>|\Z)", re.S)
ANSWER_BLOCK = re.compile(r"<answer>(.*?)(?:</answer>|\Z)", re.S)
_REFUSALS = tuple(s.lower()[:24] for px in PARTS.values() for s in px["refuse"]) + (
    "i can't help", "i cannot help", "i can't assist", "i cannot assist", "i'm sorry, but i can",
    "i won't be able to", "i am unable to")


def unit_hash(*parts: object) -> float:
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def find_task(system_text: str) -> str | None:
    m = TASK_LINE.search(system_text)
    return m.group(1) if m else None


def _flip(value: bool, p: float, *key: object) -> bool:
    u = unit_hash(*key)
    return (not value) if u < (p if value else p / 4) else value


def _if_noise(score: int, p: float, *key: object) -> int:
    u = unit_hash(*key)
    if u < p:
        return max(0, min(5, score + (1 if u < p / 2 else -1)))
    return score


def is_refusal(answer: str) -> bool:
    low = " ".join(answer.split()).lower()[:300]
    return any(r in low for r in _REFUSALS)


def label_answer(task: str, user_text: str, model: str, p: float,
                 index: PromptTruthIndex | None, image: bool) -> dict | None:
    """The JSON object a labeller with error rate ``p`` answers (None: unknown task)."""
    prompts = [x.strip() for x in PROMPT_BLOCK.findall(user_text)]
    prompt = prompts[0] if prompts else user_text.strip()
    # noise is keyed on the full prompt (so a cut copy of it gets the same answer) before any
    # pasted material: a client's cut keeps that part, with the truth index or without it
    # (a raw root on S3 has none here), so both give the same labels
    full = (index.resolve(prompt) if index is not None else None) or prompt
    key = full.split("\n\n```", 1)[0]
    if task == "criteria-v1":
        truth, _ = lookup_prompt_truth(prompt, index, image)
        out = {c: _flip(bool(truth[c]), p, model, task, c, key) for c in CRITERIA}
        for c in ("math", "creative_writing"):
            out[c] = _flip(bool(truth[c]), p, model, task, c, key)
        out["if_score"] = _if_noise(int(truth["if_score"]), p, model, task, "if", key)
        return out
    if task == "vision-v1":
        truth, _ = lookup_prompt_truth(prompt, index, True)
        return {v: _flip(bool(truth.get(f"vision_{v}")), p, model, task, v, key) for v in VISION_LABELS}
    if task == "refusal-v1":
        answers = ANSWER_BLOCK.findall(user_text)
        answer = answers[0] if answers else ""
        return {"refusal": _flip(is_refusal(answer), p, model, task, answer)}
    if task == "risk-v1":
        truth, _ = lookup_prompt_truth(prompt, index, image)
        low = prompt.lower()
        harmful = any(m.lower() in low for ms in TOXIC_MARKERS.values() for m in ms)
        return {"sensitive": _flip(bool(truth["would_refuse"]), p, model, task, "s", key),
                "harmful": _flip(harmful, p, model, task, "h", key)}
    if task == "cluster-name-v1":
        keys = [lookup_prompt_truth(x, index, image)[0]["topic"] for x in prompts]
        top, _ = Counter(k for k in keys if k).most_common(1)[0] if any(keys) else (None, 0)
        if top is None:
            words = Counter(w for x in prompts for w in re.findall(r"\w{4,}", x.lower()))
            return {"name": " ".join(w for w, _ in words.most_common(3)).capitalize() or "Miscellaneous"}
        if unit_hash(model, task, *prompts) < p:
            return {"name": TOPIC_BY_KEY[top].category.replace("_", " ").capitalize()}
        return {"name": topic_name(top)}
    return None


@lru_cache(maxsize=4096)
def _direction(name: str, dim: int) -> np.ndarray:
    rng = np.random.default_rng(int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big"))
    v = rng.standard_normal(dim)
    return v / np.linalg.norm(v)


def _trigram_vector(text: str, dim: int) -> np.ndarray:
    v = np.zeros(dim)
    t = " ".join(text.lower().split())
    for i in range(max(1, len(t) - 2)):
        h = int.from_bytes(hashlib.blake2b(t[i:i + 3].encode(), digest_size=4).digest(), "big")
        v[h % dim] += 1.0 if h & 1 << 31 else -1.0
    n = np.linalg.norm(v)
    return v / n if n else _direction("empty", dim)


def embed(text: str, model: str, dim: int, index: PromptTruthIndex | None) -> list[float]:
    """Deterministic unit vector of ``text`` for embedding ``model``."""
    truth, source = lookup_prompt_truth(text, index)
    if source == "heuristic":
        v = _trigram_vector(text, dim) + 0.3 * _direction(f"cat:{truth['category']}", dim)
    else:
        lang = next((lang for lang, px in PARTS.items()
                     if any(s in text for s in px["topics"].get(truth["category"], ()))), "en")
        v = (0.45 * _direction(f"cat:{truth['category']}", dim) + _direction(f"topic:{truth['topic']}", dim)
             + 0.15 * _direction(f"lang:{lang}", dim))
        rng = np.random.default_rng(int(unit_hash(model, text) * 2**63))
        v = v + EMBEDDERS.get(model, 0.4) * rng.standard_normal(dim) / np.sqrt(dim) * 2.0
    v = v / np.linalg.norm(v)
    return [round(float(x), 6) for x in v]
