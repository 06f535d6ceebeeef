"""The published yardsticks beside our figures, each on the slice it was measured on: PPE's
best judge (68.59 %) and "longer wins" (59.81 %) are figures of PPE's hard-prompt subset,
so they sit beside our `hard` slice, never beside `overall`; and the judge-tie rule named
as the project's own. Hand-built battles where the hard slice and the whole month disagree,
with the expected accuracies counted here by hand."""

from __future__ import annotations

import polars as pl
import pytest

from arena_assets.evaluators.agreement import TIE_RULE, AgreementOptions, agreement_table
from arena_assets.evaluators.yardsticks import AGREEMENT_YARDSTICKS, yardstick_rows

MODELS = ("m1", "m2", "m3", "m4")


def _battles(n: int, hard_every: int) -> pl.DataFrame:
    """``n`` decided battles round a 4-model cycle; every ``hard_every``-th one is hard.
    The human always prefers side a; the longer answer is side a on hard battles only."""
    rows = []
    for i in range(n):
        a, b = MODELS[i % 4], MODELS[(i + 1 + i // 4 % 3) % 4]
        hard = i % hard_every == 0
        rows.append(
            {
                "battle_id": f"b{i}",
                "model_a": a,
                "model_b": b,
                "winner": "model_a",
                "language": "en",
                "category": "other",
                "hard": hard,
                "dedup_key": f"p{i}",
                "tokens_a": 300 if hard else 100,
                "tokens_b": 100 if hard else 300,
                "markdown_a": 0,
                "markdown_b": 0,
            }
        )
    return pl.DataFrame(rows)


def _verdicts(sample: pl.DataFrame) -> pl.DataFrame:
    """An LLM judge right on every hard battle and on none of the rest (a tie there), and
    the ``longer`` baseline (right exactly where the longer side won: the hard battles)."""
    judge = sample.select(
        "battle_id",
        pick=pl.when(pl.col("hard")).then(pl.lit("a")).otherwise(pl.lit("tie")),
        judge=pl.lit("llm"),
        judge_kind=pl.lit("llm"),
    )
    longer = sample.select(
        "battle_id",
        pick=pl.when(pl.col("tokens_a") > pl.col("tokens_b"))
        .then(pl.lit("a"))
        .otherwise(pl.lit("b")),
        judge=pl.lit("longer"),
        judge_kind=pl.lit("baseline"),
    )
    return pl.concat([judge, longer]).with_columns(
        game1=pl.lit(None, pl.String), game2=pl.lit(None, pl.String)
    )


def test_ppe_yardsticks_sit_beside_the_hard_slice_not_overall() -> None:
    sample = _battles(120, hard_every=3)  # 40 hard battles
    table = agreement_table(_verdicts(sample), sample, AgreementOptions(rounds=20, board_rounds=5))
    hard = sample.filter("hard").height
    # counted by hand: both judges are right on exactly the hard battles
    expected_hard, expected_overall = 1.0, hard / sample.height
    got = {(r["judge"], r["slice"]): r["accuracy"] for r in table.iter_rows(named=True)}
    assert got["llm", "hard"] == expected_hard and got["longer", "hard"] == expected_hard
    assert got["llm", "overall"] == pytest.approx(expected_overall)
    rows = {(r["source"], r["judge"]): r for r in yardstick_rows(table)}
    for key, published in (
        (("PPE", "best judge / reward model"), 0.6859),
        (("PPE", "longer wins"), 0.5981),
    ):
        row = rows[key]
        assert row["published"] == published and row["slice"] == "hard prompts"
        assert row["ours_slice"] == "hard" and row["ours"] == expected_hard
    assert rows["PPE", "best judge / reward model"]["ours_judge"] == "llm"
    assert rows["PPE", "longer wins"]["ours_judge"] == "longer"
    mt = rows["MT-Bench", "GPT-4 (pairwise)"]
    assert mt["ours_slice"] == "overall" and mt["ours_judge"] == "llm"


def test_without_a_hard_slice_the_ppe_rows_say_so() -> None:
    sample = _battles(60, hard_every=10)  # 6 hard battles: under the slice minimum
    table = agreement_table(_verdicts(sample), sample, AgreementOptions(rounds=20, board_rounds=5))
    assert "hard" not in set(table["slice"])
    for row in yardstick_rows(table):
        if row["source"] == "PPE":
            assert row["ours"] is None and row["ours_judge"] is None
            assert "no `hard` slice this month" in row["note"]
        else:
            assert row["ours"] is not None


def test_the_published_figures_and_the_tie_rule_are_stated_as_they_are() -> None:
    ppe = [y for y in AGREEMENT_YARDSTICKS if y["source"] == "PPE"]
    assert [(y["value"], y["slice"]) for y in ppe] == [
        (0.6859, "hard prompts"),
        (0.5981, "hard prompts"),
    ]
    assert "project's rule" in TIE_RULE and "PPE states no tie rule" in TIE_RULE
