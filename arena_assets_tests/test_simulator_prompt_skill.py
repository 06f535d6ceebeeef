"""The simulator's per-prompt skill offsets: off by default (every raw and truth file of a
seed as before), and when on, the same sessions with votes that follow skill + offset."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl

from arena_assets.simulator import (
    World,
    WorldConfig,
    load_truth,
    read_prompt_truth,
    simulate_months,
)
from arena_assets.simulator.prompt_skill import PromptSkills, true_strengths
from arena_assets.simulator.votes import difficulty_gain, style_logit, win_probability

MONTH = "2024-01"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in ("world.json", "README.md")
    }


def test_off_by_default_changes_nothing(tmp_path):
    simulate_months(tmp_path / "a", [MONTH], 300, seed=11)
    simulate_months(
        tmp_path / "b",
        [MONTH],
        300,
        seed=11,
        config=WorldConfig(prompt_skill_spread=0.0, prompt_skill_rank=7),
    )
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert not (tmp_path / "a" / "_truth" / "prompt_skills.parquet").exists()


def test_offsets_move_only_the_votes_and_follow_the_truth(tmp_path):
    cfg = WorldConfig(prompt_skill_spread=120.0)
    simulate_months(tmp_path / "off", [MONTH], 800, seed=3)
    simulate_months(tmp_path / "on", [MONTH], 800, seed=3, config=cfg)
    off, on = load_truth(tmp_path / "off"), load_truth(tmp_path / "on")
    # the first battle is the same session either way; its P(a) moved by the offsets (after
    # it the streams part: a vote's outcome decides how many draws it takes)
    first_off, first_on = off["votes"].row(0, named=True), on["votes"].row(0, named=True)
    assert (first_off["model_a"], first_off["len_a"]) == (first_on["model_a"], first_on["len_a"])
    assert first_off["p_a"] != first_on["p_a"]
    # each honest vote's P(a) = the votes.py formula on skill + the prompt's offset
    world = World.build(cfg, 3)
    skills = PromptSkills.of(world)
    table = pl.read_parquet(tmp_path / "on" / "_truth" / "prompt_skills.parquet")
    assert (
        table.height == len(world.models) * table["topic"].n_unique() * table["language"].n_unique()
    )
    prompts = read_prompt_truth(tmp_path / "on", MONTH)
    conv = on["conversations"].select("conv_id", "prompt_id")
    votes = (
        on["votes"]
        .filter(~pl.col("abusive"))
        .join(conv.rename({"conv_id": "conv_id_a"}), on="conv_id_a")
        .join(prompts.select("prompt_id", "topic", "language"), on="prompt_id")
    )
    idx = {m: i for i, m in enumerate(world.model_names)}
    for row in votes.head(200).iter_rows(named=True):
        off_ = skills.offsets(row["topic"], row["language"])
        a, b = world.model(row["model_a"]), world.model(row["model_b"])
        p = win_probability(
            a.skill(row["category"]) + off_[idx[a.name]],
            b.skill(row["category"]) + off_[idx[b.name]],
            style_logit(row["len_a"], row["len_b"], row["md_a"], row["md_b"]),
            cfg,
            difficulty_gain(row["criteria_count"], cfg),
            row["refused_a"],
            row["refused_b"],
        )
        assert math.isclose(p, row["p_a"], abs_tol=2e-6)
        t = table.filter(
            (pl.col("model") == a.name)
            & (pl.col("topic") == row["topic"])
            & (pl.col("language") == row["language"])
        )["offset"].item()
        assert math.isclose(t, off_[idx[a.name]], abs_tol=1e-9)
    # true_strengths: category skill + offset, times the difficulty gain, minus refusals
    strengths = true_strengths(world, prompts.head(50))
    r = prompts.row(0, named=True)
    i = idx[world.model_names[0]]
    expect = (
        world.models[0].skill(r["category"]) + skills.offsets(r["topic"], r["language"])[i]
    ) * difficulty_gain(r["criteria_count"], cfg) - cfg.refusal_penalty * cfg.refusal_rate * float(
        r["would_refuse"] and world.models[0].cautious
    )
    assert math.isclose(strengths[0, 0], expect, rel_tol=1e-12)
    assert np.std(table["offset"].to_numpy()) > 100  # ~spread·√1.25
