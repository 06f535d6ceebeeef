"""The first labelling contract (strict JSON per task) and the cluster-name prompt.

topic_labels now asks LMArena's tags from a prompt set (``labels.prompt_sets``, read by
``labels.tags``); the criteria / vision / refusal JSON prompts below are the contract the
LLM client layer's tests and ``benchmarks/bench_labels.py`` exercise (the simulated arena
still answers them). The cluster-name prompt is in use.

Protocol shared with the simulated arena endpoint: the system message carries a line
``task: <version>``; the user message carries the text between ``<prompt>`` and
``</prompt>`` (refusal adds ``<answer>...</answer>``; cluster naming sends several
``<prompt>`` blocks). The answer must be exactly one JSON object of the task's shape.
Changing a prompt's wording means a new version string, which also changes cache keys.
Parsers accept a JSON object optionally wrapped in a ```json fence and nothing else; types
and ranges are validated by pydantic, extra or missing fields are errors.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

CRITERIA = (
    "specificity",
    "domain_knowledge",
    "complexity",
    "problem_solving",
    "creativity",
    "technical_accuracy",
    "real_world",
)
VISION_CATEGORIES = (
    "captioning",
    "ocr",
    "entity_recognition",
    "humor",
    "homework",
    "diagram",
    "creative_writing",
)
HARD_MIN_CRITERIA = 6

CRITERIA_VERSION = "criteria-v1"
VISION_VERSION = "vision-v1"
REFUSAL_VERSION = "refusal-v1"
CLUSTER_NAME_VERSION = "cluster-name-v1"

CRITERIA_SYSTEM = f"""task: {CRITERIA_VERSION}
You grade a user's request to a chat assistant. Read the request between <prompt> and </prompt> and decide, for each property below, whether the request has it.
- specificity: it asks for one well-defined output rather than something open-ended.
- domain_knowledge: answering well needs knowledge of a particular field.
- complexity: it has several parts or steps that interact.
- problem_solving: the assistant has to work out a solution, not just recall facts.
- creativity: a good answer needs original ideas or a new angle.
- technical_accuracy: correctness can be checked and precision matters.
- real_world: it concerns a practical situation someone actually faces.
- math: it involves mathematical reasoning or calculation.
- creative_writing: it asks for a story, poem, lyrics or other imaginative text.
- if_score: 0 to 5, how many explicit constraints on the answer's form or content the request sets (length, format, style, things to include or avoid), capped at 5.
Reply with one JSON object and nothing else, with exactly these keys: "specificity", "domain_knowledge", "complexity", "problem_solving", "creativity", "technical_accuracy", "real_world", "math", "creative_writing" (true or false) and "if_score" (an integer from 0 to 5)."""

VISION_SYSTEM = f"""task: {VISION_VERSION}
A user sent one or more images to a chat assistant together with the request between <prompt> and </prompt>. Decide which kinds of image task the request is.
- captioning: describe what the image shows.
- ocr: read or transcribe text in the image.
- entity_recognition: identify a specific person, place, product, species or landmark.
- humor: explain or create a joke, meme or something funny about the image.
- homework: solve an exercise or exam question shown in the image.
- diagram: interpret a chart, plot, table, flowchart or technical drawing.
- creative_writing: write a story, poem or other imaginative text inspired by the image.
Reply with one JSON object and nothing else, with exactly the keys "captioning", "ocr", "entity_recognition", "humor", "homework", "diagram", "creative_writing", each true or false."""

REFUSAL_SYSTEM = f"""task: {REFUSAL_VERSION}
You check whether a chat assistant declined to help. The user's request is between <prompt> and </prompt>, the assistant's reply between <answer> and </answer>. A refusal is a reply that declines the request, in whole or in large part (for instance on safety or policy grounds), rather than attempting it. A reply that helps with caveats is not a refusal.
Reply with one JSON object and nothing else: {{"refusal": true}} or {{"refusal": false}}."""

CLUSTER_NAME_SYSTEM = f"""task: {CLUSTER_NAME_VERSION}
The requests below, each between <prompt> and </prompt>, were grouped together because they are about the same topic. Give that topic a short name of two to six words that a reader of a leaderboard would understand.
Reply with one JSON object and nothing else: {{"name": "..."}}."""


class StrictAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CriteriaLabel(StrictAnswer):
    specificity: StrictBool
    domain_knowledge: StrictBool
    complexity: StrictBool
    problem_solving: StrictBool
    creativity: StrictBool
    technical_accuracy: StrictBool
    real_world: StrictBool
    math: StrictBool
    creative_writing: StrictBool
    if_score: StrictInt = Field(ge=0, le=5)


class VisionLabel(StrictAnswer):
    captioning: StrictBool
    ocr: StrictBool
    entity_recognition: StrictBool
    humor: StrictBool
    homework: StrictBool
    diagram: StrictBool
    creative_writing: StrictBool


class RefusalLabel(StrictAnswer):
    refusal: StrictBool


class ClusterName(StrictAnswer):
    name: str = Field(min_length=1, max_length=80)


_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.S)


def json_object(content: str) -> str:
    text = content.strip()
    fenced = _FENCE.match(text)
    return fenced.group(1) if fenced else text


def parse_criteria(content: str) -> CriteriaLabel:
    return CriteriaLabel.model_validate_json(json_object(content))


def parse_vision(content: str) -> VisionLabel:
    return VisionLabel.model_validate_json(json_object(content))


def parse_refusal(content: str) -> RefusalLabel:
    return RefusalLabel.model_validate_json(json_object(content))


def parse_cluster_name(content: str) -> ClusterName:
    name = ClusterName.model_validate_json(json_object(content))
    if not name.name.strip():
        raise ValueError("cluster name is blank")
    return name


def tagged_block(tag: str, text: str) -> str:
    # the closing tag cannot appear inside, or the endpoint would cut the text short
    return f"<{tag}>\n{text.replace(f'</{tag}>', f'< /{tag}>')}\n</{tag}>"


def criteria_messages(prompt: str) -> list[dict]:
    return [
        {"role": "system", "content": CRITERIA_SYSTEM},
        {"role": "user", "content": tagged_block("prompt", prompt)},
    ]


def vision_messages(prompt: str) -> list[dict]:
    return [
        {"role": "system", "content": VISION_SYSTEM},
        {"role": "user", "content": tagged_block("prompt", prompt)},
    ]


def refusal_messages(prompt: str, answer: str) -> list[dict]:
    return [
        {"role": "system", "content": REFUSAL_SYSTEM},
        {
            "role": "user",
            "content": tagged_block("prompt", prompt) + "\n" + tagged_block("answer", answer),
        },
    ]


def cluster_name_messages(samples: list[str]) -> list[dict]:
    return [
        {"role": "system", "content": CLUSTER_NAME_SYSTEM},
        {"role": "user", "content": "\n".join(tagged_block("prompt", s) for s in samples)},
    ]
