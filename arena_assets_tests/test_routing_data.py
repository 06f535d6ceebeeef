"""Router training data without Dagster: near-duplicate groups (against the simulator's
planted near-duplicates), time splits that keep a group whole, and the 55k CSV read the
way RouteLLM's ``preprocess_battles`` reads it."""

from __future__ import annotations

import csv
import io
import json
import random
from datetime import UTC, datetime, timedelta

import polars as pl

from arena_assets.routing.neardup import near_duplicate_groups
from arena_assets.routing.training_data import build_training_rows, layouts
from arena_assets.simulator.compose import PromptComposer
from arena_assets.simulator.config import LANGUAGES, TEXT_CATEGORIES
from arena_assets.simulator.text import TextMaker


def test_planted_near_duplicates_share_a_group_and_distinct_prompts_do_not():
    rng = random.Random(0)
    composer, text = PromptComposer(rng), TextMaker(rng)
    originals = [
        composer.compose(rng.choice(LANGUAGES), rng.choice(TEXT_CATEGORIES))[0] for _ in range(600)
    ]
    originals = list(dict.fromkeys(originals))
    pairs = [(i, text.near_duplicate(originals[i], "en")) for i in range(0, len(originals), 3)]
    texts = originals + [t for _, t in pairs]
    groups = near_duplicate_groups(texts)
    together = sum(groups[i] == groups[len(originals) + j] for j, (i, _) in enumerate(pairs))
    assert together / len(pairs) >= 0.9
    # composed prompts share templates, yet nearly all stay apart
    assert len(set(groups[: len(originals)].tolist())) >= 0.9 * len(originals)
    assert near_duplicate_groups(texts).tolist() == groups.tolist()  # deterministic


def _messages(user: str, answer: str) -> list[dict]:
    return [
        {"role": "user", "content": user, "images": []},
        {"role": "assistant", "content": answer, "images": []},
    ]


def _month(n: int = 40):
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    rng = random.Random(1)
    composer = PromptComposer(rng)
    prompts: list[str] = []
    while len(prompts) < n - 1:
        text = composer.compose("en", TEXT_CATEGORIES[len(prompts) % len(TEXT_CATEGORIES)])[0]
        if all(near_duplicate_groups([text, p])[1] == 1 for p in prompts):  # distinct from all
            prompts.append(text)
    prompts.append("Please, " + prompts[0])  # a near-duplicate of the first, at the very end
    winners = ["model_a", "model_b", "tie", "tie (bothbad)"]
    battles = pl.DataFrame(
        {
            "battle_id": [f"b{i:03d}" for i in range(n)],
            "tstamp": [t0 + timedelta(hours=i) for i in range(n)],
            "model_a": ["m1"] * n,
            "model_b": ["m2"] * n,
            "winner": [winners[i % 4] for i in range(n)],
            "language": ["en"] * n,
            "turn": [1] * n,
            "conv_id_a": [f"a{i}" for i in range(n)],
            "conv_id_b": [f"c{i}" for i in range(n)],
            "dedup_key": [f"k{i}" for i in range(n)],
            "keep": [True] * (n - 1) + [True],
            "voter_hash": ["v"] * n,
            **{
                f"{f}_{s}": [1] * n
                for s in "ab"
                for f in (
                    "sum_assistant_tokens",
                    "header_count",
                    "ordered_list_count",
                    "unordered_list_count",
                    "list_count",
                    "bold_count",
                )
            },
        }
    )
    conv = pl.DataFrame(
        {
            "conv_id": [f"a{i}" for i in range(n)] + [f"c{i}" for i in range(n)],
            "messages": [_messages(p, f"answer A{i}") for i, p in enumerate(prompts)]
            + [_messages(p, f"answer B{i}") for i, p in enumerate(prompts)],
        }
    )
    return battles, conv


def test_a_near_duplicate_group_stays_in_the_split_of_its_first_battle():
    battles, conv = _month()
    rows, counts = build_training_rows("2024-01", battles, conv, None, {"m1": 0, "m2": 3})
    assert rows.height == 40 and counts["missing_conversation"] == 0
    first, last = (
        rows.filter(pl.col("battle_id") == "b000"),
        rows.filter(pl.col("battle_id") == "b039"),
    )
    assert first["prompt_id"].item() == last["prompt_id"].item() == "k0"
    assert last["split"].item() == "train"  # by time it would have been test
    assert counts["moved_with_group"] == 1
    assert counts["by_split"] == {"train": 33, "val": 4, "test": 3}
    assert rows["tier_a"].unique().to_list() == [0] and rows["tier_b"].unique().to_list() == [3]


def test_55k_csv_reads_as_routellm_reads_it():
    battles, conv = _month(12)
    rows, _ = build_training_rows("2024-01", battles, conv, None, {})
    files = layouts(rows)
    parsed = list(csv.DictReader(io.StringIO(files["train.csv"].decode())))
    train = rows.filter(pl.col("split") == "train")
    assert len(parsed) == train.height
    for rec, row in zip(parsed, train.iter_rows(named=True), strict=True):
        # RouteLLM: first_turn = json.loads(prompt)[0]; winner from the three 0/1 columns
        assert json.loads(rec["prompt"])[0] == row["prompt"][0]
        assert json.loads(rec["response_a"]) == [
            m["content"] for m in row["conversation_a"] if m["role"] == "assistant"
        ]
        winner = (
            "model_a"
            if rec["winner_model_a"] == "1"
            else "model_b"
            if rec["winner_model_b"] == "1"
            else "tie"
        )
        assert winner == row["winner"].replace("tie (bothbad)", "tie")
    lines = [json.loads(x) for x in files["train.jsonl"].decode().splitlines()]
    assert [x["question_id"] for x in lines] == train["battle_id"].to_list()
    assert lines[0]["conv_metadata"]["list_count_a"] == {"ordered": 1, "unordered": 1}
    assert "voter_hash" not in lines[0]  # the hash stays in the lake table


def test_clean_battle_jsonl_reads_as_p2l_reads_it():
    """P2L's train.py: model list = sorted unique model_a ∪ model_b of the file
    (``get_model_list``); ``labels`` = (winner index, loser index, tie indicator: 0 none,
    1 tie, 2 both bad); the collator takes ``prompt`` as a string or a list of user turns."""
    battles, conv = _month(12)
    battles = battles.with_columns(pl.Series("model_b", ["m2", "m0"] * 6))
    rows, _ = build_training_rows("2024-01", battles, conv, None, {})
    for split in ("train", "val", "test"):
        lines = [json.loads(x) for x in layouts(rows)[f"{split}.jsonl"].decode().splitlines()]
        models = sorted({x["model_a"] for x in lines} | {x["model_b"] for x in lines})
        for x in lines:
            win, lose, tie = x["labels"]
            a, b = models.index(x["model_a"]), models.index(x["model_b"])
            expected = {
                "model_a": [a, b, 0],
                "model_b": [b, a, 0],
                "tie": [a, b, 1],
                "tie (bothbad)": [a, b, 2],
            }[x["winner"]]
            assert [win, lose, tie] == expected
            assert (
                isinstance(x["prompt"], list)
                and x["prompt"][0] == x["conversation_a"][0]["content"]
            )
            assert set(x["prompt_labels"]) >= {"math", "code"}
