"""The detection-text cap (MAX_DETECT_CHARS) costs no accuracy against the longer 200 chars.

The figures behind the choice are in `arena_assets.clean.language`'s docstring
(benchmarks/langid_chars.py); this keeps the real-data half of that claim checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from arena_assets.clean.language import MAX_DETECT_CHARS, FastTextLid, detection_text


def _codes(detector: FastTextLid, texts: list[str], chars: int) -> list[str]:
    prepared = pl.DataFrame({"t": texts}).select(detection_text(pl.col("t"), chars)).to_series()
    return detector.detect(prepared.to_list())[0]


def test_cap_keeps_accuracy_and_agrees_on_real_prompts(real_data: Path) -> None:
    rows = [
        json.loads(line)
        for line in (real_data / "battles/votes_2023_hard_english_with_prompts.jsonl")
        .read_text()
        .splitlines()
    ]
    texts = [" ".join(r["turns"]) for r in rows]
    assert {r["language"] for r in rows} == {"English"} and len(texts) > 1000
    detector = FastTextLid()
    long, capped = _codes(detector, texts, 200), _codes(detector, texts, MAX_DETECT_CHARS)
    assert sum(c == "en" for c in capped) >= sum(c == "en" for c in long)
    assert sum(a == b for a, b in zip(long, capped)) / len(texts) >= 0.99
    # the cap is what the detector sees: text past it cannot change the answer
    full = [
        t
        for t in pl.DataFrame({"t": texts}).select(detection_text(pl.col("t"))).to_series()
        if len(t) == MAX_DETECT_CHARS
    ][:50]
    padded = [t + " Дополнительный текст на другом языке." * 20 for t in full]
    assert len(full) == 50 and _codes(detector, padded, MAX_DETECT_CHARS) == _codes(
        detector, full, MAX_DETECT_CHARS
    )


def test_detection_text_folds_whitespace_like_plain_pattern(real_data: Path) -> None:
    """detection_text folds only the whitespace runs that change; same text as `\\s+` -> " "."""
    from arena_assets.clean.language import NOISE_PATTERN

    texts = [
        " a  b\tc\n\nd \t e\u00a0f\u3000g\u2028h\u0085i ",
        "",
        "   ",
        "x",
        "\r\n",
        "a \u200b b",
        "Ｆｕｌｌ　ｗｉｄｔｈ",
        "see ```code\n  here``` and `x  y` at https://a.b/c  <EMAIL>  ok",
    ]
    for line in (
        (real_data / "battles/clean_battles_2024_full_conversations.jsonl").read_text().splitlines()
    ):
        texts += [m["content"] for m in json.loads(line)["conversation_a"]]
    frame = pl.DataFrame({"t": texts})
    for chars in (MAX_DETECT_CHARS, 200, 10_000):
        plain = frame.select(
            pl.col("t")
            .str.slice(0, 4 * chars)
            .str.replace_all(NOISE_PATTERN, " ")
            .str.replace_all(r"\s+", " ")
            .str.strip_chars()
            .str.slice(0, chars)
        ).to_series()
        assert frame.select(detection_text(pl.col("t"), chars)).to_series().equals(plain)
