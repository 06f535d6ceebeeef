"""Near-duplicate groups of prompts, so that no near-duplicate crosses a train/test split.

MinHash LSH over character 5-gram shingles of the normalised text (lower case, runs of
white space as one space, the first ``max_chars`` characters): language-agnostic, like the
bench's decontamination (``bench/decontam.py``), but computed with numpy over all prompts
at once (a rolling 5-gram code, ``num_perm`` universal hashes, per-prompt minima by
``np.minimum.reduceat``) instead of one Python MinHash object per prompt. Prompts sharing
a band of ``rows`` signature values are candidates; a candidate joins its bucket's first
member when at least ``threshold`` of their signature values agree (an estimate of the
Jaccard similarity), and groups are the connected components of those links.
"""

from __future__ import annotations

import re

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

_WS = re.compile(r"\s+")


def normalise(text: str, max_chars: int) -> str:
    return _WS.sub(" ", (text or "").lower()).strip()[:max_chars]


def signatures(
    texts: list[str], *, num_perm: int = 40, k: int = 5, max_chars: int = 300, seed: int = 1
) -> np.ndarray:
    """(texts × num_perm) MinHash signatures (uint32)."""
    norm = [normalise(t, max_chars) for t in texts]
    norm = [t if len(t) >= k else t.ljust(k, "\x00") for t in norm]
    lengths = np.array([len(t) for t in norm])
    codes = np.frombuffer("".join(norm).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    # 5-gram code: a polynomial hash of k consecutive code points, for every position
    pos = np.arange(len(codes) - k + 1) if len(codes) >= k else np.zeros(0, dtype=np.int64)
    gram = np.zeros(len(pos), dtype=np.uint64)
    for off in range(k):
        gram = gram * np.uint64(1_000_003) + codes[pos + off]
    # keep the grams that start and end inside one text
    owner = np.searchsorted(starts, pos, side="right") - 1
    valid = pos + k <= starts[owner] + lengths[owner]
    gram, owner = gram[valid], owner[valid]
    seg = np.searchsorted(owner, np.arange(len(texts)))
    # 32-bit multiply-add hashes (wrapping): a quarter of the memory traffic of 64-bit ones
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**32, num_perm, dtype=np.uint64).astype(np.uint32) | np.uint32(1)
    b = rng.integers(0, 2**32, num_perm, dtype=np.uint64).astype(np.uint32)
    g32 = (gram ^ (gram >> np.uint64(29))).astype(np.uint32)
    out = np.zeros((len(texts), num_perm), dtype=np.uint32)
    h = np.empty_like(g32)
    for p in range(num_perm):
        if len(g32):
            np.multiply(g32, a[p], out=h)
            h += b[p]
            out[:, p] = np.minimum.reduceat(h, seg)
    return out


def near_duplicate_groups(
    texts: list[str], *, num_perm: int = 40, rows: int = 5, threshold: float = 0.7, seed: int = 1
) -> np.ndarray:
    """Group number per text (0..G-1, the group of a text's first member comes first)."""
    n = len(texts)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    sig = signatures(texts, num_perm=num_perm, seed=seed)
    src, dst = [], []
    for band in range(num_perm // rows):
        key = np.zeros(n, dtype=np.uint64)  # the band's values folded into one 64-bit key
        for col in range(band * rows, (band + 1) * rows):
            key = key * np.uint64(0x9E3779B97F4A7C15) + sig[:, col].astype(np.uint64)
        _, first_idx, inverse = np.unique(key, return_index=True, return_inverse=True)
        head = first_idx[inverse.ravel()]
        cand = np.flatnonzero(head != np.arange(n))
        if len(cand):
            agree = (sig[cand] == sig[head[cand]]).mean(axis=1)
            ok = cand[agree >= threshold]
            src.append(ok)
            dst.append(head[ok])
    if src:
        s, d = np.concatenate(src), np.concatenate(dst)
        graph = csr_matrix((np.ones(len(s)), (s, d)), shape=(n, n))
    else:
        graph = csr_matrix((n, n))
    _, labels = connected_components(graph, directed=False)
    # renumber by first appearance
    _, first = np.unique(labels, return_index=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[labels]
