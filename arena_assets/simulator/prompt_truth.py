"""Look up a prompt's hidden labels by its text.

Three sources, best first:

1. ``PromptTruthIndex``: the ``_truth/prompts/<month>.parquet`` tables of a simulated raw
   root, keyed by a hash of the first ``PREFIX_CHARS`` characters, so a prompt a client cut
   to a maximum length still finds its row (the longest stored text that starts with it).
2. ``parse_prompt``: the simulator composes prompts from known parts, so recognising the
   parts in any text it generated gives back the same labels (a test checks this on whole
   months); works without the truth files, for any seed and month.
3. ``heuristic_labels``: for text the simulator never wrote (surface cues only).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import re
from functools import lru_cache
from pathlib import Path

import polars as pl

from arena_assets.simulator.config import VISION_CATEGORIES
from arena_assets.simulator.lexicon import LEX, TOXIC_MARKERS
from arena_assets.simulator.topics import (
    GREETING,
    LABEL_COLUMNS,
    PARTS,
    TOPIC_BY_KEY,
    TOPICS_BY_CATEGORY,
    VISION_LABELS,
    Topic,
    prompt_labels,
)
from arena_assets.simulator.truth import TRUTH_DIR

PREFIX_CHARS = 64
# exactly what simulator/paste.py appends, and only at the very end of a prompt
_PASTE_AT_END = re.compile(r"\n\n```(?:python|javascript|yaml)\n.*\n```\Z", re.S)
_END = ".。!?！？ "
_NEWLINE = re.compile("\n")


def normalized(text: str) -> str:
    return " ".join(text.split()).lower()


@lru_cache(maxsize=1)
def prompt_index() -> dict:
    topics = []  # (phrase, topic), longest first
    parts: dict[str, list[tuple[re.Pattern, int]]] = {
        k: [] for k in ("constraints", "contexts", "multistep", "twist")
    }
    domain = []
    for _lang, px in PARTS.items():
        for cat, phrases in px["topics"].items():
            for i, phrase in enumerate(phrases):
                topics.append((normalized(phrase), TOPICS_BY_CATEGORY[cat][i]))
        for kind in parts:
            for j, sentence in enumerate(px[kind]):
                pat = re.escape(normalized(sentence).rstrip(_END)).replace(r"\{n\}", r"\d+")
                parts[kind].append((re.compile(pat), j))
        domain.append(
            re.compile(re.escape(normalized(px["domain"]).rstrip(_END)).replace(r"\{t\}", ".+?"))
        )
    topics.sort(key=lambda x: -len(x[0]))
    greetings = {normalized(g).rstrip(_END + "!") for lx in LEX.values() for g in lx["greet"]}
    toxic = [normalized(p) for ps in TOXIC_MARKERS.values() for p in ps]
    return {
        "topics": topics,
        "parts": parts,
        "domain": domain,
        "greetings": greetings,
        "toxic": toxic,
    }


def _parse_topic(text: str) -> tuple[str, Topic | None]:
    """(the text as parse_prompt searches it, its topic: GREETING, one found by its phrase
    or None)."""
    idx = prompt_index()
    # a composed prompt may end with pasted material (simulator/paste.py), which holds no
    # part (a test checks): searching the parts' patterns through it cost most of this call
    t = normalized(_PASTE_AT_END.sub("", text))
    if t.rstrip(_END + "!") in idx["greetings"]:
        return t, GREETING
    return t, next((tp for phrase, tp in idx["topics"] if phrase in t), None)


def parse_topic(text: str) -> Topic | None:
    """``parse_prompt``'s topic of ``text`` alone (its category and key are the labels'),
    without the parts' patterns, ~10x less CPU: all that an embedding needs, and what a
    prompt whose PII the clean stage redacted (not in the truth table under its new text)
    costs the simulated arena's embeddings."""
    return _parse_topic(text)[1]


def parse_prompt(text: str) -> dict | None:
    """Labels of a prompt the simulator composed (None when no topic phrase is found)."""
    idx = prompt_index()
    t, topic = _parse_topic(text)
    if topic is GREETING:
        return prompt_labels(GREETING)
    if topic is None:
        return None
    toxic = any(p in t for p in idx["toxic"])
    found = {kind: {j for pat, j in pats if pat.search(t)} for kind, pats in idx["parts"].items()}
    return prompt_labels(
        topic,
        constraints=len(found["constraints"]),
        domain=any(p.search(t) for p in idx["domain"]),
        context=bool(found["contexts"]),
        multistep=bool(found["multistep"]),
        twist=bool(found["twist"]),
        toxic=toxic,
        image=topic.category in VISION_CATEGORIES,
    )


_CODE = re.compile(
    r"```|\bdef |\bclass |\bimport |\bSELECT\b|\bfunction\b|;\s*$|\bpython\b|\bsql\b|\bjavascript\b",
    re.I | re.M,
)
_MATH = re.compile(
    r"\d\s*[-+*/^=]\s*\d|\b(equation|integral|derivative|probability|matrix|prove|solve)\b", re.I
)
_CONSTRAINT = re.compile(
    r"\b(exactly|at most|at least|no more than|must|do not|don't|without|only|"
    r"format|bullet|table|json|words?)\b",
    re.I,
)


def heuristic_labels(text: str, image: bool = False) -> dict:
    """Surface-cue labels for text the simulator never generated."""
    low = text.lower()
    code, math = bool(_CODE.search(text)), bool(_MATH.search(text))
    n_constraints = min(2, len(_CONSTRAINT.findall(text)))
    creative = any(w in low for w in ("poem", "story", "lyrics", "haiku", "fiction", "imagine"))
    if image:
        category = "homework" if math else "captioning"
    else:
        category = (
            "coding"
            if code
            else "math"
            if math
            else "creative_writing"
            if creative
            else "chit_chat"
        )
    row = {
        "specificity": n_constraints > 0 or bool(re.search(r"\d", text)) or len(text) > 300,
        "domain_knowledge": code or math or bool(re.search(r"\b[A-Z]{2,}\b", text)),
        "complexity": len(text) > 400 or "step" in low,
        "problem_solving": code
        or math
        or any(w in low for w in ("solve", "debug", "fix", "plan", "calculate")),
        "creativity": creative,
        "technical_accuracy": code or math,
        "real_world": any(
            w in low for w in (" my ", " our ", "company", "customer", "job", "work")
        ),
    }
    n = sum(row.values())
    row.update(
        topic=None,
        category=category,
        criteria_count=n,
        hard=n >= 6,
        math=math,
        creative_writing=creative,
        if_score=min(5, 2 * n_constraints),
        code=code,
        image=image,
        would_refuse=any(
            p in low for ps in TOXIC_MARKERS.values() for p in (x.lower() for x in ps)
        ),
    )
    for col in LABEL_COLUMNS:
        if col.startswith("vision_"):
            row[col] = (col == f"vision_{category}") if image else None
    return row


class PromptTruthIndex:
    """Prompt truth of a simulated raw root, looked up by (possibly truncated) text; and
    what each uploaded image shows, looked up by its sha256 (``image_labels``)."""

    def __init__(self, frames: list[pl.DataFrame], image_frames: list[pl.DataFrame] = ()) -> None:
        # labels kept as tuples in LABEL_COLUMNS order: a 100k-session month takes ~60 MB
        self.by_prefix: dict[bytes, dict[str, tuple]] = {}
        self.seen: dict[str, int] = {}  # how often each text was a first prompt
        # per bucket, built on first need: its prompts in order (_starting_with), their lengths
        self._sorted: dict[bytes, list[str]] = {}
        self._lengths: dict[bytes, set[int]] = {}
        for frame in frames:
            for text, *labels in frame.select(["text", *LABEL_COLUMNS]).iter_rows():
                self.by_prefix.setdefault(self._key(text), {}).setdefault(text, tuple(labels))
                self.seen[text] = self.seen.get(text, 0) + 1
        self.images: dict[str, dict] = {}
        shown = [f"vision_{v}" for v in VISION_LABELS]
        for frame in image_frames:
            for sha, *labels in frame.select(["sha256", *shown]).iter_rows():
                self.images.setdefault(sha, dict(zip(shown, labels)))

    def image_labels(self, sha256: str) -> dict | None:
        """``vision_<label>`` of what the image ``sha256`` shows (None: not an image of
        this truth)."""
        return self.images.get(sha256)

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(normalized(text)[:PREFIX_CHARS].encode(), digest_size=12).digest()

    @classmethod
    def from_root(cls, root: str | os.PathLike) -> PromptTruthIndex:
        files = sorted((Path(root) / TRUTH_DIR / "prompts").glob("*.parquet"))
        images = sorted((Path(root) / TRUTH_DIR / "images").glob("*.parquet"))
        return cls([pl.read_parquet(f) for f in files], [pl.read_parquet(f) for f in images])

    def __len__(self) -> int:
        return sum(len(b) for b in self.by_prefix.values())

    def resolve(self, text: str) -> str | None:
        """The stored prompt ``text`` is, or begins (a prompt cut by a client); when several
        stored prompts begin with it, the most frequent one."""
        return self._resolve(text)[1]

    def _resolve(self, text: str) -> tuple[bytes, str | None]:
        """(the bucket's key, ``resolve``'s answer): every candidate lies in that bucket."""
        key = self._key(text)
        bucket = self.by_prefix.get(key)
        if not bucket:
            return key, None
        if text in bucket:
            return key, text
        hits = self._starting_with(key, text)
        if not hits:  # a client may also have stripped the trailing space of its cut
            hits = self._starting_with(key, text.rstrip())
        if not hits:  # the text goes on after a stored prompt: the user turns after the first
            lengths = self._lengths.get(key)
            if lengths is None:
                lengths = self._lengths[key] = {len(full) for full in bucket}
            ends = (m.start() for m in _NEWLINE.finditer(text))
            hits = [text[:i] for i in ends if i in lengths and text[:i] in bucket]
        return key, (max(hits, key=lambda h: (self.seen[h], h)) if hits else None)

    def _starting_with(self, key: bytes, text: str) -> list[str]:
        """The bucket's prompts that begin with ``text``: a range of the bucket sorted, found
        by bisection. Why: a month's bucket can hold hundreds of prompts that share their
        first 64 characters, and a scan of it per cut prompt made the lookups of a
        500,000-conversation month's texts 2.3 ms for 64 of them (1.4 ms now)."""
        ordered = self._sorted.get(key)
        if ordered is None:  # built once per bucket, on its first cut prompt
            ordered = self._sorted[key] = sorted(self.by_prefix[key])
        hits = []
        for full in itertools.islice(ordered, bisect.bisect_left(ordered, text), None):
            if not full.startswith(text):
                break
            hits.append(full)
        return hits

    def get(self, text: str) -> dict | None:
        key, full = self._resolve(text)
        return None if full is None else dict(zip(LABEL_COLUMNS, self.by_prefix[key][full]))


_CATEGORY_AT, _TOPIC_AT = LABEL_COLUMNS.index("category"), LABEL_COLUMNS.index("topic")


def lookup_topic(text: str, index: PromptTruthIndex | None = None) -> tuple[str, str | None, str]:
    """(category, topic key, source) of ``text``, as ``lookup_prompt_truth`` gives them, by
    the same sources in the same order, without a parsed prompt's other labels."""
    if index is not None:
        key, full = index._resolve(text)
        if full is not None:
            labels = index.by_prefix[key][full]
            return labels[_CATEGORY_AT], labels[_TOPIC_AT], "table"
    topic = _first_line_or_whole(text, parse_topic)
    if topic is not None:
        return topic.category, topic.key, "parsed"
    return heuristic_labels(text)["category"], None, "heuristic"


def lookup_prompt_truth(
    text: str, index: PromptTruthIndex | None = None, image: bool = False
) -> tuple[dict, str]:
    """(labels, source) of ``text``; source is "table", "parsed" or "heuristic"."""
    if index is not None:
        row = index.get(text)
        if row is not None:
            return row, "table"
    row = _first_line_or_whole(text, parse_prompt)
    if row is not None:
        return row, "parsed"
    return heuristic_labels(text, image), "heuristic"


def _first_line_or_whole(text: str, parse):
    # the labeller's input joins every user turn by newlines; a simulated first prompt has
    # none before its paste, so its first line carries its parts
    return (parse(text.split("\n", 1)[0]) if "\n" in text else None) or parse(text)


def read_prompt_truth(root: str | os.PathLike, month: str | None = None) -> pl.DataFrame:
    """The prompt truth table of ``month`` (all months when None) under a simulated raw root:
    one row per session's first prompt with its text, language, topic and every label."""
    base = Path(root) / TRUTH_DIR / "prompts"
    files = [base / f"{month}.parquet"] if month else sorted(base.glob("*.parquet"))
    missing = [str(f) for f in files if not f.exists()]
    if missing or not files:
        raise FileNotFoundError(f"no prompt truth at {missing or base}")
    return pl.concat([pl.read_parquet(f) for f in files], how="vertical")


def topic_name(key: str | None) -> str | None:
    return TOPIC_BY_KEY[key].name if key in TOPIC_BY_KEY else None
