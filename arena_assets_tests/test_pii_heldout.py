"""Redaction judged on text its rules were not written from: the held-out tail set
(`data/pii_heldout_tail.jsonl`, hand-written in 11 languages before the rules for
unlabelled IPv6, 7-digit local numbers and glued numbers were tuned on
`data/pii_tail_dev.jsonl`), alone and planted into real arena turns. Targets: at most 2 %
of each in-scope type leaked, at most 2 % of the look-alikes (versions, hashes, times,
IPv6-like hex in code, ISBNs, order numbers, years, prices, dates, arithmetic) redacted.
Figures: `benchmarks/pii_recall.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena_assets.clean.pii import find_pii
from arena_assets_tests.pii_scoring import (
    HELDOUT_TAIL,
    TAIL_DEV,
    kept_rate,
    leak_rates,
    load_corpus,
    plant,
    real_turns,
    score,
)

TARGET = 0.02
LANGUAGES = {"en", "de", "fr", "es", "zh", "ja", "ru"}


def _assert_targets(result: dict) -> None:
    leaks = leak_rates(result)
    assert all(rate <= TARGET for rate in leaks.values()), (leaks, result["misses"])
    hit, total = kept_rate(result)
    assert hit / total <= TARGET, (hit, total, result["false_positives"])


def test_the_held_out_set_is_disjoint_from_the_tuning_set_and_multilingual() -> None:
    held, dev = load_corpus(path=HELDOUT_TAIL), load_corpus(path=TAIL_DEV)

    def values(rows: list[dict]) -> set[str]:
        return {v for r in rows for _, v in r["pii"] + r.get("keep", [])}

    assert not {r["text"] for r in held} & {r["text"] for r in dev}
    assert not values(held) & values(dev)
    assert {r["lang"] for r in held} >= LANGUAGES
    for row in held:  # every label is found in its text, once
        for _, value in row["pii"] + row["keep"]:
            assert row["text"].count(value) == 1, (row["id"], value)
    kinds = {k for r in held for k, _ in r["keep"]}
    assert {
        "version",
        "hash",
        "time",
        "ipv6_like",
        "isbn",
        "order",
        "year",
        "price",
        "date",
    } <= kinds


def test_held_out_leaks_and_look_alikes_redacted_are_within_two_percent() -> None:
    result = score(find_pii, load_corpus(path=HELDOUT_TAIL))
    assert result["recall"]["ip_address"][1] >= 30 and result["recall"]["phone"][1] >= 40
    _assert_targets(result)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_held_out_lines_planted_in_real_turns_are_within_two_percent(
    real_data: Path, seed: int
) -> None:
    """Real words around each line: a phone word in a real sentence nearby, a numbered
    list right after a number, a code block around an address."""
    turns = real_turns(real_data)
    assert len(turns) > 1000
    _assert_targets(score(find_pii, plant(load_corpus(path=HELDOUT_TAIL), turns, seed)))
