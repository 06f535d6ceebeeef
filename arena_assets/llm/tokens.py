"""Approximate token counts of chat requests and answers, as an OpenAI-style endpoint bills them.

Used twice: the plan (``llm.plan``) estimates the bill of a batch before any call, and the
simulated arena reports ``usage`` with the same counts, so its figures look like a real
endpoint's. A text's count is the project's cl100k approximation
(``arena_assets.tokens.TOKEN_PATTERN``: English within ~2 % of tiktoken's cl100k,
other languages under-counted by up to ~20 %; see that module), through the ``regex``
module for one text (the simulated arena's bill) and polars over a batch's texts (the
plan): the same counts. A chat request adds OpenAI's
documented framing: 3 tokens per message (4 with a ``name``) and 3 to prime the reply; an
image part counts 85 tokens (OpenAI's low-detail image; a high-detail one costs more).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import polars as pl
import regex

from arena_assets.tokens import TOKEN_PATTERN

TOKEN_REGEX = regex.compile(TOKEN_PATTERN)
PER_MESSAGE = 3
PER_NAME = 1
REPLY_PRIMING = 3
IMAGE_TOKENS = 85


def text_tokens(text: str | None) -> int:
    """Approximate cl100k tokens of one text (0 for None or empty)."""
    if not text:
        return 0
    if len(text) <= 4096:  # system prompts and templates repeat: remembered
        return _short_tokens(text)
    return _count(text)


def _count(text: str) -> int:
    if (
        len(text) > LONG_TEXT_CHARS
    ):  # polars' regex engine: 5x less CPU from ~8 KB (a judge's prompt)
        try:
            return int(_count_many([text])[0])
        except UnicodeEncodeError:  # a lone surrogate: not UTF-8, polars cannot hold it
            pass
    # subn counts its matches in C: ~30 % less CPU than iterating them in Python
    return TOKEN_REGEX.subn("", text)[1]


# above this many characters a text is counted by polars (~80 us a call, then fast) rather
# than the regex module (~0.15 us a character), as a plan counts a batch (text_tokens_many):
# the same counts on real text in 10+ languages (test_llm_plan), measured 650 -> 240 us at
# 4 KB, 1,180 -> 230 us at 8 KB, 2,570 -> 360 us at 20 KB. Characters added in Unicode 17
# are letters to the regex module and unassigned to polars' engine (each counts alone
# there): with them the two differ, and a long text counts as the plan counts it
LONG_TEXT_CHARS = 1024


@lru_cache(maxsize=8192)
def _short_tokens(text: str) -> int:
    return _count(text)


def content_tokens(content: object) -> int:
    """Tokens of a message's ``content``: a string, or a list of text / image parts."""
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict):
                if part.get("type") == "text":
                    total += text_tokens(part.get("text"))
                elif part.get("type") in ("image_url", "image", "input_image"):
                    total += IMAGE_TOKENS
            elif isinstance(part, str):
                total += text_tokens(part)
        return total
    return 0


_SLICE = 20_000  # requests whose texts are counted in one polars column


def chat_prompt_tokens_many(requests: Sequence[list[dict]]) -> list[int]:
    """``chat_prompt_tokens`` of many requests, the same numbers, their texts counted by
    polars: a plan counts every request of a batch (a 30,000-conversation month's labels:
    63,000 requests, 34M tokens), where one ``regex`` call per text took ~9 s of the plan's
    ~12 s and the column count takes ~1 s. Counted ``_SLICE`` requests at a time (a
    production month's batch is ~700,000 requests: its texts copied into one column were
    ~1 GB), each distinct text once (every request of a task repeats its system prompt)."""
    out: list[int] = []
    for start in range(0, len(requests), _SLICE):
        out += _prompt_tokens_slice(requests[start : start + _SLICE])
    return out


def _prompt_tokens_slice(requests: Sequence[list[dict]]) -> list[int]:
    totals = np.full(len(requests), REPLY_PRIMING, dtype=np.int64)
    texts: dict[str, int] = {}  # distinct text -> its position
    owners: list[int] = []
    positions: list[int] = []
    for i, messages in enumerate(requests):
        for m in messages:
            totals[i] += PER_MESSAGE + (PER_NAME if m.get("name") else 0)
            content = m.get("content")
            parts = content if isinstance(content, list) else [content]
            for part in parts:
                if isinstance(part, str):
                    text = part
                elif isinstance(part, dict) and isinstance(content, list):
                    if part.get("type") in ("image_url", "image", "input_image"):
                        totals[i] += IMAGE_TOKENS
                    text = part.get("text") if part.get("type") == "text" else None
                else:
                    text = None
                if isinstance(text, str) and text:
                    positions.append(texts.setdefault(text, len(texts)))
                    owners.append(i)
    if texts:
        counts = _count_many(list(texts))
        np.add.at(
            totals,
            np.asarray(owners, dtype=np.int64),
            counts[np.asarray(positions, dtype=np.int64)],
        )
    return totals.tolist()


def text_tokens_many(texts: Sequence[str | None]) -> list[int]:
    """``text_tokens`` of many texts, in one polars pass (the same numbers)."""
    return _count_many(list(texts)).tolist() if texts else []


def _count_many(texts: list[str | None]) -> np.ndarray:
    # polars' Rust regex gives the ``regex`` module's counts on this pattern: checked on
    # every message of the real battles, 10+ languages (test_llm_plan)
    return (
        pl.Series(texts, dtype=pl.String)
        .str.count_matches(TOKEN_PATTERN)
        .fill_null(0)
        .to_numpy()
        .astype(np.int64)
    )


def chat_prompt_tokens(messages: list[dict]) -> int:
    """Prompt tokens of a chat request (messages + OpenAI's per-message framing)."""
    total = REPLY_PRIMING
    for m in messages:
        total += PER_MESSAGE + content_tokens(m.get("content"))
        if m.get("name"):
            total += PER_NAME
    return total
