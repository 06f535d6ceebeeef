"""Scoring of a PII detector on the hand-written corpus (`data/pii_corpus.jsonl`).

A labelled span counts as found when every letter and digit of it lies inside some
detected span, whatever type the detector gave it (a phone redacted as <NATIONAL_ID> has
not leaked); `typed` counts the finds whose type also matches. A decoy line (`pii` empty)
counts as a false positive when anything in it is detected.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

CORPUS = Path(__file__).parent / "data" / "pii_corpus.jsonl"

Detector = Callable[[str], list[tuple[str, int, int]]]


def load_corpus(split: str | None = None) -> list[dict]:
    rows = [json.loads(line) for line in CORPUS.open(encoding="utf-8")]
    return [r for r in rows if split is None or r["split"] == split]


def covered(text: str, start: int, end: int, spans: list[tuple[str, int, int]]) -> bool:
    return all(any(a <= i < b for _, a, b in spans) for i in range(start, end) if text[i].isalnum())


def score(detect: Detector, rows: list[dict]) -> dict:
    """{'recall': {type: (found, total, typed)}, 'decoys': (flagged, total), 'misses': [...]}"""
    found, total, typed = Counter(), Counter(), Counter()
    misses, false_positives, decoys = [], [], 0
    for row in rows:
        spans = detect(row["text"])
        if not row["pii"]:
            decoys += 1
            if spans:
                false_positives.append((row["id"], [row["text"][a:b] for _, a, b in spans]))
            continue
        for kind, value in row["pii"]:
            start = row["text"].index(value)
            total[kind] += 1
            if covered(row["text"], start, start + len(value), spans):
                found[kind] += 1
                typed[kind] += any(t == kind and a <= start < b for t, a, b in spans)
            else:
                misses.append(
                    (row["id"], kind, value, [(t, row["text"][a:b]) for t, a, b in spans])
                )
    return {
        "recall": {k: (found[k], total[k], typed[k]) for k in sorted(total)},
        "decoys": (len(false_positives), decoys),
        "misses": misses,
        "false_positives": false_positives,
    }


def report(result: dict) -> str:
    lines = [
        f"{k:15s} recall {f / t:6.1%} ({f}/{t}), typed right {ty}/{t}"
        for k, (f, t, ty) in result["recall"].items()
    ]
    fp, n = result["decoys"]
    lines.append(f"{'decoys':15s} flagged {fp / max(n, 1):6.1%} ({fp}/{n})")
    return "\n".join(lines)
