"""Scoring of a PII detector on hand-written corpora (`data/pii_*.jsonl`) and on real text.

A labelled span counts as found when every letter and digit of it lies inside some
detected span, whatever type the detector gave it (a phone redacted as <NATIONAL_ID> has
not leaked); `typed` counts the finds whose type also matches. Look-alikes to keep are
labelled two ways: a decoy line (`pii` empty, no `keep`) counts as a false positive when
anything in it is detected; a labelled look-alike (`keep`: [kind, value]) counts as
redacted when any of its letters or digits lies inside a detected span.

Real text: the turns of `../shared/real/battles` (read where they lie, never copied into
the project). `plant` puts each hand-written line into a real turn, at a paragraph or
sentence boundary chosen by a seeded generator, so that the labelled spans are scored
among real words (a phone word in the real text nearby can turn a look-alike into a
phone, a real URL can swallow an address).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "pii_corpus.jsonl"
HELDOUT_TAIL = DATA / "pii_heldout_tail.jsonl"  # written before the tail's rules were tuned
TAIL_DEV = DATA / "pii_tail_dev.jsonl"  # the tail's rules were tuned on these

Detector = Callable[[str], list[tuple[str, int, int]]]


def load_corpus(split: str | None = None, path: Path = CORPUS) -> list[dict]:
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    return [r for r in rows if split is None or r["split"] == split]


def covered(text: str, start: int, end: int, spans: list[tuple[str, int, int]]) -> bool:
    return all(any(a <= i < b for _, a, b in spans) for i in range(start, end) if text[i].isalnum())


def touched(text: str, start: int, end: int, spans: list[tuple[str, int, int]]) -> bool:
    return any(any(a <= i < b for _, a, b in spans) for i in range(start, end) if text[i].isalnum())


def score(detect: Detector, rows: list[dict]) -> dict:
    """{'recall': {type: (found, total, typed)}, 'decoys': (flagged, total),
    'kept': {kind: (redacted, total)}, 'misses': [...], 'false_positives': [...]}"""
    found, total, typed = Counter(), Counter(), Counter()
    kept_hit, kept_total = Counter(), Counter()
    misses, false_positives, decoys, decoys_flagged = [], [], 0, 0
    for row in rows:
        text = row["text"]
        spans = detect(text)
        starts = row.get("starts", {})  # where a planted value lies (see `plant`)
        if not row["pii"] and "keep" not in row:
            decoys += 1
            if spans:
                decoys_flagged += 1
                false_positives.append((row["id"], [text[a:b] for _, a, b in spans]))
            continue
        for kind, value in row.get("keep", []):
            start = starts.get(value, text.find(value))
            kept_total[kind] += 1
            if touched(text, start, start + len(value), spans):
                kept_hit[kind] += 1
                false_positives.append((row["id"], [text[a:b] for _, a, b in spans]))
        for kind, value in row["pii"]:
            start = starts.get(value, text.find(value))
            total[kind] += 1
            if covered(text, start, start + len(value), spans):
                found[kind] += 1
                typed[kind] += any(t == kind and a <= start < b for t, a, b in spans)
            else:
                misses.append((row["id"], kind, value, [(t, text[a:b]) for t, a, b in spans]))
    return {
        "recall": {k: (found[k], total[k], typed[k]) for k in sorted(total)},
        "decoys": (decoys_flagged, decoys),
        "kept": {k: (kept_hit[k], kept_total[k]) for k in sorted(kept_total)},
        "misses": misses,
        "false_positives": false_positives,
    }


def leak_rates(result: dict) -> dict[str, float]:
    """Share of each type's labelled spans left unredacted."""
    return {k: 1 - f / t for k, (f, t, _) in result["recall"].items()}


def kept_rate(result: dict) -> tuple[int, int]:
    """(redacted, total) over every labelled look-alike."""
    pairs = result["kept"].values()
    return sum(h for h, _ in pairs), sum(n for _, n in pairs)


def report(result: dict) -> str:
    lines = [
        f"{k:15s} recall {f / t:6.1%} ({f}/{t}), leaked {t - f}, typed right {ty}/{t}"
        for k, (f, t, ty) in result["recall"].items()
    ]
    fp, n = result["decoys"]
    if n:
        lines.append(f"{'decoy lines':15s} flagged {fp / n:6.1%} ({fp}/{n})")
    if result["kept"]:
        hit, total = kept_rate(result)
        kinds = ", ".join(f"{k} {h}/{t}" for k, (h, t) in result["kept"].items())
        lines.append(f"{'look-alikes':15s} redacted {hit / total:6.1%} ({hit}/{total}): {kinds}")
    return "\n".join(lines)


def real_turns(real: Path) -> list[str]:
    """The distinct user and assistant turns of the real battle files, sorted."""
    texts: set[str] = set()

    def walk(node: object, key: str | None = None) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key in ("content", "turns") and node.strip():
            texts.add(node)

    for path in sorted((real / "battles").glob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            walk(json.loads(line))
    return sorted(texts)


_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])[ ]+(?=[A-Z])")


def plant(rows: list[dict], turns: list[str], seed: int) -> list[dict]:
    """Each row's text put into a real turn (drawn with ``seed``): as a paragraph of its own
    (before the turn, after it, or between two of its paragraphs) or as a sentence between
    two of its sentences; ``starts`` says where each labelled value now lies."""
    rng = random.Random(seed)
    planted = []
    for row in rows:
        turn = rng.choice(turns)
        cuts = [(0, "", "\n\n"), (len(turn), "\n\n", "")]
        cuts += [(m.end(), "", "\n\n") for m in _PARAGRAPH.finditer(turn)]
        cuts += [(m.end(), "", " ") for m in _SENTENCE_END.finditer(turn)]
        at, before, after = rng.choice(cuts)
        offset = at + len(before)
        text = turn[:at] + before + row["text"] + after + turn[at:]
        values = [v for _, v in row["pii"]] + [v for _, v in row.get("keep", [])]
        starts = {v: offset + row["text"].index(v) for v in values}
        planted.append({**row, "text": text, "starts": starts})
    return planted
