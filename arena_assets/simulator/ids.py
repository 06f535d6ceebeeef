"""Unique, random-looking, reproducible identifiers and fake image hashes."""

from __future__ import annotations

import hashlib

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15  # odd, so multiplication mod 2^64 is a bijection


class IdMaker:
    """``prefix-<16 hex>`` ids: a bijection of a counter, so never repeated within a maker."""

    def __init__(self, prefix: str, salt: int) -> None:
        self.prefix = prefix
        self.salt = salt & _MASK
        self.count = 0

    def __call__(self) -> str:
        self.count += 1
        return f"{self.prefix}-{((self.count * _GOLDEN) & _MASK) ^ self.salt:016x}"


def image_hash(month: str, seed: int, n: int) -> str:
    """sha256 of (stand-in) image bytes: 64 lowercase hex characters."""
    return hashlib.sha256(f"fake-image:{seed}:{month}:{n}".encode()).hexdigest()
