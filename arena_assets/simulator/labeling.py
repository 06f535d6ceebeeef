"""Labelling calls and embeddings answered from the prompt truth, with per-model noise.

Contract (a real LLM can follow it too; ``arena_assets.labels`` builds these requests):

* A chat completion whose system message holds a line ``task: <name>``. The label tasks of
  ``labels.prompt_sets`` (the prompt between ``<prompt>`` and ``</prompt>``, or
  ``<user_prompt>``; an answer between ``<answer>`` or ``<llm_response>`` tags), answered in
  LMArena's output formats:
  - ``prompt-tags``: ``{"criteria": [numbers 1-7 met], "if_score": 0-5, "math": "yes"|"no",
    "creative_writing": "yes"|"no"}``; ``vision-tags``: ``{"captioning": "yes"|"no", ...}``;
    ``refusal``: ``<classification>yes|no</classification>``;
  - the vision tags split as LMArena's classifier shows them: ``vision-text-tags``
    (``captioning``, ``entity_recognition``, ``creative_writing``: the request's text
    alone), ``vision-image-tags`` (``ocr``, ``humor``: the text and the image),
    ``vision-image-only-tags`` (``homework``, ``diagram``: the image alone), each a JSON
    object of ``"yes"|"no"``;
  - one tag each (the anchor's shape): ``criteria_v0.1`` ``[1, 3, 4]`` (``[]`` for none),
    ``if_v0.1`` ``<score>N</score>``, ``math_v0.1`` / ``creative_writing_v0.1`` and the
    vision tags ``<decision>yes|no</decision>``, ``refusal_v0.1`` ``<classification>``.
  A vision request without text (the image alone) is answered from what the image shows:
  the truth's ``images`` table, by the image's sha256 (the ``sha256:`` reference, or the
  bytes of a data URL); an image the truth does not hold shows none of the tags.
  A label's noise does not depend on the format it is asked in (both shapes give the same
  labels). The JSON tasks of the first contract version remain:
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
* OR-Bench's 3-class check (``evaluators.orbench_check``; the product reads its prompt
  from the user's OR-Bench checkout, and it has no system message): a single user message
  that quotes the question after ``QUESTION: "`` and the answer after ``RESPONSE: "``
  and names the three classes ``direct_answer``, ``direct_refusal``, ``indirect_refusal``
  (``check_task`` recognises it by that shape, as ``orbench-check``); answered with a
  one-line reason and the class inside ``[[ ]]``: ``direct_refusal`` when the answer
  refuses (``is_refusal``, with the labeller's noise), else ``direct_answer``.
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
import orjson

from arena_assets.simulator.lexicon import TOXIC_MARKERS
from arena_assets.simulator.prompt_truth import (
    PromptTruthIndex,
    lookup_prompt_truth,
    lookup_topic,
    topic_name,
)
from arena_assets.simulator.topics import CRITERIA, PARTS, TOPIC_BY_KEY, VISION_LABELS

# default error rates: the large one keeps every label's F1 >= 0.95 and the derived `hard`
# (>= 6 of 7 criteria, where errors compound) near 0.93 on a simulated month
LABELERS = {"sim-labeler-small": 0.18, "sim-labeler-large": 0.02}
WORLD_MODEL_LABEL_NOISE = 0.08  # a candidate model asked to label: between the two labellers
EMBEDDERS = {"sim-embed-small": 0.55, "sim-embed-large": 0.3}  # model -> noise scale
_TAG_TASKS = {
    "criteria_v0.1": "list",
    "if_v0.1": "score",
    "math_v0.1": "math",
    "creative_writing_v0.1": "creative_writing",
    "refusal_v0.1": "refusal",
    **{f"{v}_v0.1": v for v in VISION_LABELS if v != "creative_writing"},
    "creative_writing_vision_v0.1": "creative_writing_vision",
}
# the JSON vision tasks and the fields each answers
VISION_TASKS = {
    "vision-tags": VISION_LABELS,
    "vision-text-tags": ("captioning", "entity_recognition", "creative_writing"),
    "vision-image-tags": ("ocr", "humor"),
    "vision-image-only-tags": ("homework", "diagram"),
}
TASKS = (
    "criteria-v1",
    "vision-v1",
    "refusal-v1",
    "cluster-name-v1",
    "prompt-tags",
    *VISION_TASKS,
    "refusal",
    *_TAG_TASKS,
    "risk-v1",
    "orbench-check",
)
TASK_LINE = re.compile(r"^\s*task:\s*([A-Za-z0-9_.-]+)\s*$", re.M)
PROMPT_BLOCK = re.compile(
    r"<(?:prompt|user_prompt|user_query)>(.*?)(?:</(?:prompt|user_prompt|user_query)>|\Z)", re.S
)
ANSWER_BLOCK = re.compile(r"<(?:answer|llm_response)>(.*?)(?:</(?:answer|llm_response)>|\Z)", re.S)
_REFUSALS = tuple(s.lower()[:24] for px in PARTS.values() for s in px["refuse"]) + (
    "i can't help",
    "i cannot help",
    "i can't assist",
    "i cannot assist",
    "i'm sorry, but i can",
    "i won't be able to",
    "i am unable to",
)


def unit_hash(*parts: object) -> float:
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def find_task(system_text: str) -> str | None:
    m = TASK_LINE.search(system_text)
    return m.group(1) if m else None


_CHECK_CLASSES = ("direct_answer", "direct_refusal", "indirect_refusal")
_CHECK_RESPONSE = re.compile(r'RESPONSE:\s*"(.*)"', re.S)


def check_task(user_text: str) -> str | None:
    """``orbench-check`` when ``user_text`` has the shape of OR-Bench's check request (see
    the module docstring), else None."""
    shaped = 'QUESTION: "' in user_text and 'RESPONSE: "' in user_text
    return "orbench-check" if shaped and all(c in user_text for c in _CHECK_CLASSES) else None


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


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def vision_labels(
    user_text: str,
    model: str,
    p: float,
    index: PromptTruthIndex | None,
    image_name: str | None = None,
) -> dict:
    """Every vision tag a labeller with error rate ``p`` gives: from the request's text
    (``vision-v1``), or, for the image alone (no text), from what the image shows."""
    if user_text.strip() or not image_name:
        return label_answer("vision-v1", user_text, model, p, index, True)
    shows = (index.image_labels(image_name) if index is not None else None) or {}
    return {
        v: _flip(bool(shows.get(f"vision_{v}")), p, model, "vision-v1", v, image_name)
        for v in VISION_LABELS
    }


def label_reply(
    task: str,
    user_text: str,
    model: str,
    p: float,
    index: PromptTruthIndex | None,
    image: bool,
    image_name: str | None = None,
) -> str | None:
    """The reply text of a labeller with error rate ``p`` (None: unknown task);
    ``image_name``: the sha256 of the first image sent, if any."""
    if task in ("prompt-tags", "criteria_v0.1", "if_v0.1", "math_v0.1", "creative_writing_v0.1"):
        out = label_answer("criteria-v1", user_text, model, p, index, image)
        crit = [i for i, c in enumerate(CRITERIA, start=1) if out[c]]
        return {
            "prompt-tags": lambda: orjson.dumps(
                {
                    "criteria": crit,
                    "if_score": out["if_score"],
                    "math": _yes(out["math"]),
                    "creative_writing": _yes(out["creative_writing"]),
                }
            ).decode(),
            "criteria_v0.1": lambda: "[" + ", ".join(map(str, crit)) + "]",
            "if_v0.1": lambda: f"<score>{out['if_score']}</score>",
            "math_v0.1": lambda: f"<decision>\n{_yes(out['math'])}\n</decision>",
            "creative_writing_v0.1": lambda: (
                f"<decision>\n{_yes(out['creative_writing'])}\n</decision>"
            ),
        }[task]()
    if task in VISION_TASKS or (task in _TAG_TASKS and task != "refusal_v0.1"):
        out = vision_labels(user_text, model, p, index, image_name)
        if task in VISION_TASKS:
            return orjson.dumps({v: _yes(out[v]) for v in VISION_TASKS[task]}).decode()
        name = _TAG_TASKS[task].removesuffix("_vision")
        return f"<decision>\n{_yes(out[name])}\n</decision>"
    if task == "orbench-check":
        found = _CHECK_RESPONSE.search(user_text)
        answer = found.group(1) if found else ""
        refused = _flip(is_refusal(answer), p, model, "refusal-v1", answer)
        reason = "It declines to answer the question." if refused else "It answers the question."
        return f"{reason}\n\n[[{'direct_refusal' if refused else 'direct_answer'}]]"
    if task in ("refusal", "refusal_v0.1"):
        return f"<classification>{_yes(label_answer('refusal-v1', user_text, model, p, index, image)['refusal'])}</classification>"
    out = label_answer(task, user_text, model, p, index, image)
    return None if out is None else orjson.dumps(out).decode()


def label_answer(
    task: str, user_text: str, model: str, p: float, index: PromptTruthIndex | None, image: bool
) -> dict | None:
    """The JSON object a labeller with error rate ``p`` answers (None: unknown task)."""
    prompts = [x.strip() for x in PROMPT_BLOCK.findall(user_text)]
    prompt = prompts[0] if prompts else user_text.strip()
    # noise is keyed on the first prompt before any pasted material: a client's cut keeps
    # that part, with the truth index or without it (a raw root on S3 has none here), so
    # both give the same labels; so do the user turns joined after it (the labeller's input
    # is every user turn; a simulated first prompt holds no newline before its paste)
    full = (index.resolve(prompt) if index is not None else None) or prompt
    key = full.split("\n", 1)[0]
    if task == "criteria-v1":
        truth, _ = lookup_prompt_truth(prompt, index, image)
        out = {c: _flip(bool(truth[c]), p, model, task, c, key) for c in CRITERIA}
        for c in ("math", "creative_writing"):
            out[c] = _flip(bool(truth[c]), p, model, task, c, key)
        out["if_score"] = _if_noise(int(truth["if_score"]), p, model, task, "if", key)
        return out
    if task == "vision-v1":
        truth, _ = lookup_prompt_truth(prompt, index, True)
        return {
            v: _flip(bool(truth.get(f"vision_{v}")), p, model, task, v, key) for v in VISION_LABELS
        }
    if task == "refusal-v1":
        answers = ANSWER_BLOCK.findall(user_text)
        answer = answers[0] if answers else ""
        return {"refusal": _flip(is_refusal(answer), p, model, task, answer)}
    if task == "risk-v1":
        truth, _ = lookup_prompt_truth(prompt, index, image)
        low = prompt.lower()
        harmful = any(m.lower() in low for ms in TOXIC_MARKERS.values() for m in ms)
        return {
            "sensitive": _flip(bool(truth["would_refuse"]), p, model, task, "s", key),
            "harmful": _flip(harmful, p, model, task, "h", key),
        }
    if task == "cluster-name-v1":
        keys = [lookup_prompt_truth(x, index, image)[0]["topic"] for x in prompts]
        top, _ = Counter(k for k in keys if k).most_common(1)[0] if any(keys) else (None, 0)
        if top is None:
            words = Counter(w for x in prompts for w in re.findall(r"\w{4,}", x.lower()))
            return {
                "name": " ".join(w for w, _ in words.most_common(3)).capitalize() or "Miscellaneous"
            }
        if unit_hash(model, task, *prompts) < p:
            return {"name": TOPIC_BY_KEY[top].category.replace("_", " ").capitalize()}
        return {"name": topic_name(top)}
    return None


@lru_cache(maxsize=4096)
def _direction(name: str, dim: int) -> np.ndarray:
    rng = np.random.default_rng(
        int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big")
    )
    v = rng.standard_normal(dim)
    return v / np.linalg.norm(v)


def _trigram_vector(text: str, dim: int) -> np.ndarray:
    v = np.zeros(dim)
    t = " ".join(text.lower().split())
    for i in range(max(1, len(t) - 2)):
        h = int.from_bytes(hashlib.blake2b(t[i : i + 3].encode(), digest_size=4).digest(), "big")
        v[h % dim] += 1.0 if h & 1 << 31 else -1.0
    n = np.linalg.norm(v)
    return v / n if n else _direction("empty", dim)


# a text's noise: one row from each of three tables of independent normals divided by
# sqrt(3), picked by its hash, summed (a sum of independent normals is normal: each entry
# stays standard normal). Two texts share a row with probability ~3/rows, and then their
# noises correlate by 1/3; each table holds at most 2 MB (fewer rows for wide vectors)
_NOISE_TABLES = 3


def _noise_rows(dim: int) -> int:
    return max(128, min(4096, (1 << 19) // dim))


@lru_cache(maxsize=4)
def _noise_table(model: str, dim: int) -> np.ndarray:
    """(_NOISE_TABLES, rows, dim) float32 normals divided by sqrt(_NOISE_TABLES)."""
    seed = int.from_bytes(
        hashlib.blake2b(f"noise:{model}:{dim}".encode(), digest_size=8).digest(), "big"
    )
    shape = (_NOISE_TABLES, _noise_rows(dim), dim)
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) / np.float32(
        np.sqrt(_NOISE_TABLES)
    )


@lru_cache(maxsize=4096)
def _centre(category: str, topic: str, lang: str, dim: int) -> np.ndarray:
    return (
        0.45 * _direction(f"cat:{category}", dim)
        + _direction(f"topic:{topic}", dim)
        + 0.15 * _direction(f"lang:{lang}", dim)
    )


def embed_many(
    texts: list[str], model: str, dim: int, index: PromptTruthIndex | None
) -> np.ndarray:
    """Deterministic unit vectors (float64, one row per text) of ``texts`` for embedding
    ``model``: a prompt the simulator wrote lies near its topic, category and language
    (closer for the larger embedder), other text on its character trigrams.

    Why the rows are built together and the noise comes from tables: a random generator
    seeded per text and a norm per vector would be half of this function's time (3.25 ms
    for 64 texts against ~1.7), the largest part of the simulated arena's ~8.5 ms CPU for an
    embeddings call, over the 4.7 ms a call that 64 calls in flight at 0.3 s latency
    leave: the simulator, not the client, would bound a month's prompt_embeddings."""
    out = np.empty((len(texts), dim))
    noisy, picks, rows = [], [], _noise_rows(dim)
    for i, text in enumerate(texts):
        category, topic, source = lookup_topic(text, index)
        if source == "heuristic":
            out[i] = _trigram_vector(text, dim) + 0.3 * _direction(f"cat:{category}", dim)
            continue
        lang = next(
            (
                lang
                for lang, px in PARTS.items()
                if any(s in text for s in px["topics"].get(category, ()))
            ),
            "en",
        )
        out[i] = _centre(category, topic, lang, dim)
        h = int(unit_hash(model, text) * 2**48)  # 16 bits a table
        noisy.append(i)
        picks.append([(h >> (16 * k)) % rows for k in range(_NOISE_TABLES)])
    if noisy:
        tables, chosen = _noise_table(model, dim), np.asarray(picks)
        noise = sum(tables[k][chosen[:, k]] for k in range(_NOISE_TABLES))  # (n, dim)
        out[noisy] += EMBEDDERS.get(model, 0.4) * 2.0 / np.sqrt(dim) * noise
    return out / np.linalg.norm(out, axis=1, keepdims=True)
