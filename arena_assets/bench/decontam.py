"""Decontamination of a new bench against every earlier bench: exact and near duplicates.

Exact: sha256 of the normalised text (Unicode NFKC, case folded, whitespace collapsed,
punctuation removed), so re-typed copies with another spacing or case still match.
Near: MinHash of character 5-gram shingles (language-agnostic: works for unsegmented
scripts too) indexed in a ``datasketch`` LSH at a configurable Jaccard threshold.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

from datasketch import MinHash, MinHashLSH

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "").casefold()
    return _SPACE.sub(" ", _PUNCT.sub(" ", text)).strip()


def text_hash(text: str) -> str:
    return hashlib.sha256(normalise_text(text).encode()).hexdigest()


def shingles(text: str, k: int = 5) -> set[str]:
    norm = normalise_text(text)
    if len(norm) <= k:
        return {norm}
    return {norm[i : i + k] for i in range(len(norm) - k + 1)}


def minhash(text: str, num_perm: int = 128, k: int = 5, seed: int = 1) -> MinHash:
    m = MinHash(num_perm=num_perm, seed=seed)
    m.update_batch([s.encode() for s in shingles(text, k)])
    return m


class Contamination:
    """An index of earlier bench prompts; ``check(text)`` says whether a text repeats one."""

    def __init__(
        self, earlier: Iterable[str], threshold: float = 0.8, num_perm: int = 128, k: int = 5
    ) -> None:
        if not 0 < threshold <= 1:
            raise ValueError("near-duplicate threshold must be in (0, 1]")
        self.num_perm, self.k = num_perm, k
        self.hashes: set[str] = set()
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        for i, text in enumerate(earlier):
            h = text_hash(text)
            if h in self.hashes:
                continue
            self.hashes.add(h)
            self.lsh.insert(f"e{i}", minhash(text, num_perm, k))

    def check(self, text: str) -> str | None:
        """'exact', 'near' or None."""
        if text_hash(text) in self.hashes:
            return "exact"
        if self.hashes and self.lsh.query(minhash(text, self.num_perm, self.k)):
            return "near"
        return None
