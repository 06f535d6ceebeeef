"""Label prompt sets: prompts and output formats as configuration (``ARENA_LABEL_PROMPTS``).

A prompt set is a YAML file: ``name`` and a list of ``tasks``, each with

* ``id``: the task's name (also the cache namespace; our prompts name it on a ``task:``
  line of the system prompt, which is how the simulated arena knows what it is asked);
* ``scope``: ``prompt`` (each distinct conversation input: all user turns joined, cut at
  12,500 characters, as LMArena's labeller), ``image`` (each distinct input with images)
  or ``answer`` (each assistant answer, with the user turn before it);
* ``image``: attach the first image of the first turn (the anchor does for ocr, humor,
  homework, diagram); with an empty ``user`` (``user: ""``) the request holds the image
  alone, an empty text part then the image, as the anchor sends homework and diagram;
* ``output``: how the reply is read: ``criteria_list``, ``score_tag``, ``decision``,
  ``classification`` (the anchor's formats, ``labels.tags``) or ``json`` (one object
  answering several tags: ``criteria`` a list of numbers, ``if_score`` 0-5, ``math``,
  ``creative_writing``, a vision tag's name or ``refusal`` as yes / no / maybe);
* ``tags``: the ``category_tag`` entries it fills;
* ``system`` and ``user``: the messages; ``{PROMPT}`` and ``{ANSWER}`` are filled in
  (``user`` absent: ``{PROMPT}``).

Every label records the set's name and a hash of its content (``prompt_set``,
``prompt_set_hash``), so a changed prompt never passes for the old one (the hash is also
part of each call's cache key through the prompt version).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import orjson
import yaml

from arena_assets.labels import tags as T

HERE = Path(__file__).parent / "prompt_set_files"
DEFAULT = HERE / "default.yaml"
ANCHOR_STYLE = HERE / "anchor_style.yaml"
OUTPUTS = ("criteria_list", "score_tag", "decision", "classification", "json")
SCOPES = ("prompt", "image", "answer")
# the JSON field of each tag in a ``json`` task
_JSON_FIELD = {
    "criteria_v0.1": "criteria",
    "if_v0.1": "if_score",
    "math_v0.1": "math",
    "creative_writing_v0.1": "creative_writing",
    "refusal_v0.1": "refusal",
    "creative_writing_vision_v0.1": "creative_writing",
    **{f"{v}_v0.1": v for v in T.VISION_TAGS},
}


@dataclass(frozen=True)
class LabelTask:
    id: str
    scope: str
    output: str
    tags: tuple[str, ...]
    system: str
    user: str
    image: bool = False

    def messages(
        self, prompt: str, answer: str = "", image_urls: tuple[str, ...] = ()
    ) -> list[dict]:
        text = self.user.replace("{PROMPT}", prompt).replace("{ANSWER}", answer)
        # user_text below is this line in polars: keep the two alike (test_label_slices)
        if self.image and image_urls:
            content = [
                {"type": "text", "text": text},
                *({"type": "image_url", "image_url": {"url": u}} for u in image_urls),
            ]
            return [
                {"role": "system", "content": self.system},
                {"role": "user", "content": content},
            ]
        return [{"role": "system", "content": self.system}, {"role": "user", "content": text}]

    def user_text(self, prompt, answer=None):
        """The user text ``messages`` makes, as a polars expression of two string
        expressions: the same string (literal replace_all, left to right, as str.replace)."""
        import polars as pl

        answer = pl.lit("") if answer is None else answer
        return (
            pl.repeat(self.user, pl.len())
            .str.replace_all("{PROMPT}", prompt, literal=True)
            .str.replace_all("{ANSWER}", answer, literal=True)
        )

    def parse(self, content: str) -> dict[str, tuple[object, bool]]:
        """{tag: (value, parsed)}: the anchor's reading of the reply; an unparsed tag holds
        the anchor's default value. For ``refusal_v0.1`` the value is one answer's class."""
        if self.output == "json":
            return _parse_json(content, self.tags)
        tag = self.tags[0]
        if self.output == "criteria_list":
            return {tag: T.criteria_list(content)}
        if self.output == "score_tag":
            return {tag: T.score_tag(content)}
        if self.output == "classification":
            return {tag: T.classification(content)}
        word, ok = T.decision(content, strip_brackets=tag.startswith("creative_writing"))
        return {tag: (_decision_value(tag, word), ok)}

    def parse_any(self, content: str) -> dict[str, tuple[object, bool]]:
        """``parse``, raising when no tag could be read at all: the batch runner then asks
        again (``LLMTask.parse_retries``), which heals a transient garbled reply; a reply
        that stays unreadable ends as ``parse_failed`` with the anchor's defaults. Used
        only with ``reask_unreadable`` on: LMArena's labeller does not ask again."""
        out = self.parse(content)
        if not any(ok for _, ok in out.values()):
            raise ValueError(f"no {self.output} answer for {', '.join(self.tags)} in the reply")
        return out


def _decision_value(tag: str, word: str | None) -> dict:
    key = _JSON_FIELD[tag]
    return {key: T.yes(word), "score": word} if key == "creative_writing" else {key: T.yes(word)}


def _parse_json(content: str, tags: tuple[str, ...]) -> dict[str, tuple[object, bool]]:
    text = (content or "").strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        obj = None
    obj = obj if isinstance(obj, dict) else {}
    out: dict[str, tuple[object, bool]] = {}
    for tag in tags:
        value = obj.get(_JSON_FIELD[tag])
        if tag == "criteria_v0.1":
            ok = isinstance(value, list) and all(isinstance(i, int) and 1 <= i <= 7 for i in value)
            listed = set(value) if ok else set()
            out[tag] = ({c: i in listed for i, c in enumerate(T.CRITERIA, start=1)}, ok)
        elif tag == "if_v0.1":
            ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 5
            out[tag] = (T.if_value(value if ok else None), ok)
        elif tag == "refusal_v0.1":
            ok = value in ("yes", "no", "maybe")
            out[tag] = (value if ok else None, ok)
        else:
            word = value.strip().lower() if isinstance(value, str) else None
            ok = word in ("yes", "no")
            out[tag] = (_decision_value(tag, word if ok else None), ok)
    return out


@dataclass(frozen=True)
class PromptSet:
    name: str
    hash: str  # 12 hex of the set's content
    tasks: tuple[LabelTask, ...]

    def by_scope(self, scope: str) -> list[LabelTask]:
        return [t for t in self.tasks if t.scope == scope]

    def version(self, task: LabelTask) -> str:
        """The prompt version of a task's calls (in the cache key and in the labels)."""
        return f"{self.name}@{self.hash}/{task.id}"


def load_prompt_set(path: str | Path | None = None) -> PromptSet:
    """The set at ``path`` (empty: the project's default); a ValueError naming what is
    wrong with a bad file."""
    path = Path(path) if path and str(path).strip() else DEFAULT
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"ARENA_LABEL_PROMPTS: cannot read {path}: {exc}") from None
    if (
        not isinstance(data, dict)
        or not data.get("name")
        or not isinstance(data.get("tasks"), list)
    ):
        raise ValueError(f"ARENA_LABEL_PROMPTS: {path} needs a name and a list of tasks")
    digest = hashlib.sha256(
        json.dumps(data, sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()[:12]
    tasks, filled = [], set()
    for i, t in enumerate(data["tasks"]):
        where = f"ARENA_LABEL_PROMPTS: {path}, task #{i} ({t.get('id') if isinstance(t, dict) else t!r})"
        if not isinstance(t, dict) or not all(
            t.get(k) for k in ("id", "scope", "output", "tags", "system")
        ):
            raise ValueError(f"{where}: needs id, scope, output, tags and system")
        if t["scope"] not in SCOPES or t["output"] not in OUTPUTS:
            raise ValueError(f"{where}: scope must be one of {SCOPES}, output one of {OUTPUTS}")
        unknown = [g for g in t["tags"] if g not in _JSON_FIELD]
        if unknown or (t["output"] != "json" and len(t["tags"]) != 1):
            raise ValueError(
                f"{where}: tags {unknown or t['tags']} (one known tag per non-json task: "
                f"{sorted(_JSON_FIELD)})"
            )
        user = t.get("user")
        if user is not None and not str(user) and not (t.get("image") and t["scope"] == "image"):
            raise ValueError(f"{where}: an empty user message is for an image task (image: true)")
        if set(t["tags"]) & filled:
            raise ValueError(f"{where}: a tag is filled by two tasks")
        filled |= set(t["tags"])
        tasks.append(
            LabelTask(
                str(t["id"]),
                t["scope"],
                t["output"],
                tuple(t["tags"]),
                str(t["system"]),
                "{PROMPT}" if user is None else str(user),
                bool(t.get("image", False)),
            )
        )
    return PromptSet(str(data["name"]), digest, tuple(tasks))
