"""The simulated prompt space: composed prompts, their hidden labels, difficulty and refusals."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from arena_assets.simulator import (
    CATEGORIES,
    LANGUAGES,
    TEXT_CATEGORIES,
    TOPICS,
    VISION_CATEGORIES,
    PromptTruthIndex,
    WorldConfig,
    load_truth,
    lookup_prompt_truth,
    parse_prompt,
    read_prompt_truth,
    simulate_months,
)
from arena_assets.simulator.labeling import is_refusal
from arena_assets.simulator.topics import CRITERIA, LABEL_COLUMNS, prompt_labels
from arena_assets.simulator.votes import ELO_LOGIT, difficulty_gain

MONTH = "2024-05"
# no style / position bias, so a vote's logit is the stretched skill gap plus refusals
CLEAN = WorldConfig(
    style_strength=0.0,
    position_bias=0.0,
    abusive_fraction=0.0,
    cautious_fraction=0.3,
    toxic_rate=0.03,
)


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    out = tmp_path_factory.mktemp("prompts")
    simulate_months(out, [MONTH], 6000, seed=5, config=CLEAN)
    return out


def test_labels_follow_from_the_text(month):
    """Every recorded label is what the parts in the text imply (parser == generator)."""
    prompts = read_prompt_truth(month, MONTH)
    assert prompts.height == 6000
    mismatched = [
        row["text"]
        for row in prompts.iter_rows(named=True)
        if parse_prompt(row["text"]) != {c: row[c] for c in LABEL_COLUMNS}
    ]
    assert mismatched == []
    # duplicates and near duplicates carry the labels of their source
    src = prompts.select("prompt_id", *[pl.col(c).alias(f"src_{c}") for c in ("topic", "hard")])
    for key in ("duplicate_of", "near_duplicate_of"):
        copies = prompts.filter(pl.col(key).is_not_null() & ~pl.col("popular")).join(
            src, left_on=key, right_on="prompt_id"
        )
        assert copies.height > 50
        assert (copies["topic"] == copies["src_topic"]).all() and (
            copies["hard"] == copies["src_hard"]
        ).all()


def test_some_prompts_are_long_pastes_and_keep_their_labels(month):
    """~8 % of composed first prompts carry pasted code or config (the share measured on
    real 2024 first prompts), so LMArena's long_user board (>= 2,000 chars) gets votes; the
    paste changes neither the prompt's labels (test_pastes_hold_no_part_the_parser_looks_for) nor its
    language, and holds nothing the PII detectors take for personal data."""
    from arena_assets.clean import contains_pii
    from arena_assets.clean.language import detect_languages

    prompts = read_prompt_truth(month, MONTH)
    fresh = prompts.filter(
        pl.col("duplicate_of").is_null()
        & pl.col("near_duplicate_of").is_null()
        & ~pl.col("popular")
    )
    long = fresh.filter(
        pl.col("text").str.contains("```") & (pl.col("text").str.len_chars() >= 2000)
    )
    share = long.height / fresh.height
    assert 0.05 < share < 0.11, share
    pastes = long.select(pl.col("text").str.extract(r"(?s)(```.*```)").alias("paste"))
    assert pastes.select(contains_pii(pl.col("paste")).sum()).item() == 0
    clean_long = long.filter(~pl.col("has_pii") & pl.col("toxic_category").is_null())
    detected = detect_languages(clean_long["text"])["language"]
    agree = (detected == clean_long["language"]).mean()
    short = fresh.filter(~pl.col("text").str.contains("```") & ~pl.col("has_pii"))
    base = (detect_languages(short["text"])["language"] == short["language"]).mean()
    assert agree >= base - 0.05, (agree, base)


def test_pastes_hold_no_part_the_parser_looks_for():
    """parse_prompt skips the paste at a prompt's end; that is only right while no paste
    holds a topic phrase, part sentence, domain clause or toxic marker."""
    import random

    from arena_assets.simulator.paste import pasted_material
    from arena_assets.simulator.prompt_truth import normalized, parse_prompt, prompt_index

    idx, rng = prompt_index(), random.Random(0)
    # 25 draws (~1,000 template chunks) use every template and word of paste.py; each draw
    # costs ~0.25 s against the parser's hundreds of patterns
    for _ in range(25):
        paste = pasted_material(rng)
        t = normalized(paste)
        assert not any(phrase in t for phrase, _ in idx["topics"])
        assert not any(pat.search(t) for pats in idx["parts"].values() for pat, _ in pats)
        assert not any(p.search(t) for p in idx["domain"]) and not any(p in t for p in idx["toxic"])
    # only a paste at the very end is skipped: code quoted before the request is still read
    from arena_assets.simulator.compose import PromptComposer

    prompt, labels = PromptComposer(random.Random(1)).compose("en", "coding")
    assert parse_prompt(prompt) == labels
    assert parse_prompt("```python\nx = 1\n```\n" + prompt) == labels
    assert parse_prompt(prompt + "\n\n" + pasted_material(rng)) == labels


def test_prompt_space_is_wide(month):
    prompts = read_prompt_truth(month, MONTH)
    fresh = prompts.filter(pl.col("duplicate_of").is_null() & pl.col("near_duplicate_of").is_null())
    assert fresh["text"].n_unique() >= 0.97 * fresh.height
    assert set(prompts["language"]) == set(LANGUAGES)
    per_lang = dict(fresh.group_by("language").agg(pl.col("text").n_unique()).iter_rows())
    assert min(per_lang.values()) >= 100, per_lang
    assert len(TOPICS) >= 100
    seen = set(prompts["topic"])
    assert len(seen) >= 100
    assert {t.split("/")[0] for t in seen} == set(CATEGORIES)
    # popular greetings are kept and labelled as the easiest prompts
    greet = prompts.filter("popular")
    assert greet.height > 50 and set(greet["topic"]) == {"chit_chat/greeting"}
    assert (greet["criteria_count"] == 0).all()
    # a real spread of difficulty: every criteria count occurs, hard prompts are a minority
    assert set(prompts["criteria_count"]) == set(range(8))
    assert 0.03 < prompts["hard"].mean() < 0.25
    # vision labels exist exactly for image prompts, and name the prompt's category
    image = prompts.filter("image")
    assert set(image["category"]) <= set(VISION_CATEGORIES)
    assert (
        prompts.filter(~pl.col("image"))["vision_ocr"].null_count() == prompts.height - image.height
    )
    for cat in VISION_CATEGORIES:
        assert image.filter(pl.col("category") == cat)[f"vision_{cat}"].all()
    text = prompts.filter(~pl.col("image"))
    assert set(text["category"]) <= set(TEXT_CATEGORIES)
    assert text.filter(pl.col("category") == "coding")["code"].all()


def test_parts_carry_the_criteria():
    """Adding a part adds its criteria and nothing else."""
    topic = next(t for t in TOPICS if t.category == "chit_chat" and not t.sensitive)
    base = prompt_labels(topic)
    assert base["criteria_count"] == 0 and base["if_score"] == 0
    assert (
        prompt_labels(topic, constraints=1)["specificity"]
        and prompt_labels(topic, constraints=1)["if_score"] == 2
    )
    assert prompt_labels(topic, context=True)["real_world"]
    both = prompt_labels(topic, multistep=True)
    assert both["complexity"] and both["problem_solving"] and both["criteria_count"] == 2
    full = prompt_labels(
        topic, constraints=2, domain=True, context=True, multistep=True, twist=True
    )
    assert all(full[c] for c in CRITERIA) and full["hard"] and full["if_score"] == 5


def test_votes_stretch_the_gap_on_hard_prompts_and_punish_refusals(month):
    truth = load_truth(month)
    votes = truth["votes"].filter(~pl.col("abusive"))
    skill = {row["name"]: row for row in truth["models"].iter_rows(named=True)}
    n_checked = 0
    for row in votes.iter_rows(named=True):
        cat = row["category"]
        gap = skill[row["model_a"]][f"skill_{cat}"] - skill[row["model_b"]][f"skill_{cat}"]
        gap = gap * difficulty_gain(row["criteria_count"], CLEAN) + CLEAN.refusal_penalty * (
            int(row["refused_b"]) - int(row["refused_a"])
        )
        assert math.isclose(row["p_a"], 1 / (1 + math.exp(-gap * ELO_LOGIT)), abs_tol=2e-6)
        n_checked += 1
    assert n_checked > 1000
    assert difficulty_gain(7, CLEAN) > difficulty_gain(3, CLEAN) == 1.0 > difficulty_gain(0, CLEAN)
    # the easy/hard split shows in the outcomes: the stronger side wins more on hard prompts
    s = votes.filter(
        pl.col("winner").is_in(["model_a", "model_b"]) & ~pl.col("refused_a") & ~pl.col("refused_b")
    )
    strong_won = [
        (w == "model_a") == (skill[a][f"skill_{c}"] > skill[b][f"skill_{c}"])
        for a, b, w, c in zip(s["model_a"], s["model_b"], s["winner"], s["category"])
    ]
    s = s.with_columns(strong_won=pl.Series(strong_won))
    hard = s.filter(pl.col("criteria_count") >= 5)["strong_won"].mean()
    easy = s.filter(pl.col("criteria_count") <= 1)["strong_won"].mean()
    assert hard > easy + 0.03, (hard, easy)


def test_cautious_models_refuse_and_lose(month):
    truth = load_truth(month)
    cautious = set(truth["models"].filter("cautious")["name"])
    assert cautious and len(cautious) < truth["models"].height
    conv = truth["conversations"].join(
        truth["prompts"].select("prompt_id", "would_refuse"), on="prompt_id"
    )
    refused = conv.filter("refused")
    assert refused.height > 20
    assert set(refused["model"]) <= cautious and refused["would_refuse"].all()
    at_risk = conv.filter(pl.col("would_refuse") & pl.col("model").is_in(list(cautious)))
    assert 0.7 < refused.height / at_risk.height <= 1.0
    # the refusal is in the logs as a refusal sentence in the prompt's language
    votes = truth["votes"].filter(
        ~pl.col("abusive")
        & (pl.col("refused_a") != pl.col("refused_b"))
        & pl.col("winner").is_in(["model_a", "model_b"])
    )
    lost = [(w == "model_b") == ra for w, ra in zip(votes["winner"], votes["refused_a"])]
    assert len(lost) >= 10 and np.mean(lost) > 0.75


def test_refusal_sentences_are_recognised():
    from arena_assets.simulator.topics import PARTS

    for lang, parts in PARTS.items():
        for sentence in parts["refuse"]:
            assert is_refusal("  " + sentence), lang
    assert not is_refusal("Here is a clear explanation of the main idea.")


def test_topic_lookup_gives_the_full_lookups_category_and_topic(month):
    """``lookup_topic`` (the simulated embeddings' lookup) agrees with ``lookup_prompt_truth``
    on stored prompts, cut ones, ones whose PII was redacted after they were stored (the
    clean stage's placeholders: no longer in the table, parsed), ones followed by more user
    turns, and text the simulator never wrote; with the truth index and without."""
    from arena_assets.simulator.prompt_truth import lookup_topic

    index = PromptTruthIndex.from_root(month)
    stored = read_prompt_truth(month, MONTH)["text"].unique(maintain_order=True).head(400).to_list()
    texts = [
        *stored,
        *(t[:90] for t in stored),
        *(f"{t} Write to me at <EMAIL_ADDRESS>." for t in stored),
        *(f"{t}\nand one more thing" for t in stored[:50]),
        "zorbl quantum pickles",
        "def f(x):\n    return x ** 2",
        "Hello!",
        "",
        "   ",
    ]
    sources = set()
    for text in texts:
        for idx in (index, None):
            labels, source = lookup_prompt_truth(text, idx)
            assert lookup_topic(text, idx) == (labels["category"], labels["topic"], source), (
                text,
                idx,
            )
            sources.add(source)
    assert sources == {"table", "parsed", "heuristic"}


def test_truth_lookup_by_text_survives_truncation(month):
    prompts = read_prompt_truth(month, MONTH)
    index = PromptTruthIndex.from_root(month)
    assert len(index) == prompts["text"].n_unique()
    long = prompts.filter(pl.col("text").str.len_chars() > 120).head(200)
    assert long.height > 50
    texts = prompts["text"].unique().to_list()
    unique_prefix = 0
    for row in long.iter_rows(named=True):
        cut = row["text"][:90]
        labels, source = lookup_prompt_truth(cut, index)
        assert source == "table"
        candidates = prompts.filter(pl.col("text").str.starts_with(cut))
        assert labels in [
            {c: r[c] for c in LABEL_COLUMNS} for r in candidates.iter_rows(named=True)
        ]
        if sum(t.startswith(cut) for t in texts) == 1:  # unambiguous: exactly this prompt's labels
            unique_prefix += 1
            assert labels == {c: row[c] for c in LABEL_COLUMNS}
    assert unique_prefix > 20
    # text the simulator never wrote gets surface-cue labels
    labels, source = lookup_prompt_truth(
        "def f(x):\n    return x ** 2  # why does this fail? fix it"
    )
    assert source == "heuristic" and labels["code"] and labels["topic"] is None
    with pytest.raises(FileNotFoundError):
        read_prompt_truth(month, "1999-01")
