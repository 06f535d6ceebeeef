"""Category boards: topic labels joined onto battles, one board per LMArena category.

The fast tests check the join and the predicates on hand-written rows; the slow test runs a
simulated month through labelling by the simulated arena and compares each category board
with the simulator's true per-category skills."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from scipy.stats import spearmanr

from arena_assets.ranking.boards import CATEGORY_BOARDS, LABEL_COLUMNS, arena_boards, attach_topic_labels, board_options


def _labels(rows: list[dict]) -> pl.DataFrame:
    base = {c: None for c in LABEL_COLUMNS} | {"refusal": None}
    return pl.DataFrame([base | r for r in rows], schema={
        "conv_id": pl.String, **{c: (pl.Int32 if c in ("if_score", "prompt_chars") else pl.Boolean)
                                 for c in LABEL_COLUMNS}, "refusal": pl.Boolean})


def test_labels_join_on_both_sides_and_refusal_on_either():
    battles = pl.DataFrame({"battle_id": ["b1", "b2", "b3"], "conv_id_a": ["a1", "a2", "zz"],
                            "conv_id_b": ["c1", "c2", "c3"], "turn": [1, 2, 1]})
    labels = _labels([
        {"conv_id": "a1", "hard": True, "math": True, "refusal": False, "if_score": 4},
        {"conv_id": "c1", "refusal": True},
        {"conv_id": "a2", "hard": False, "refusal": False, "is_vision": True, "vision_ocr": True},
        {"conv_id": "c2", "refusal": False},
    ])
    out = attach_topic_labels(battles, labels).sort("battle_id")
    assert out["labelled"].to_list() == [True, True, False]
    assert out["refusal"].to_list() == [True, False, None]  # b3: side A has no labels
    assert out["hard"].to_list() == [True, False, None]
    picked = {name: out.filter(pred.fill_null(False) & pl.col("labelled"))["battle_id"].to_list()
              for name, pred in CATEGORY_BOARDS.items()}
    assert picked["hard_6"] == ["b1"] and picked["math"] == ["b1"] and picked["if"] == ["b1"]
    assert picked["no_refusal"] == ["b2"] and picked["ocr"] == ["b2"] and picked["vision"] == ["b2"]
    assert attach_topic_labels(battles, None)["labelled"].sum() == 0


def test_boards_without_labels_say_why_and_multiturn_needs_none():
    from arena_assets.ranking import sample_bt_battles

    battles = sample_bt_battles({"m1": 1100.0, "m2": 1000.0, "m3": 900.0}, 600, seed=1)
    battles = battles.with_columns(keep=pl.lit(True), removed_reason=pl.lit(None, pl.String),
                                   language=pl.lit("en"), turn=pl.lit(2),
                                   conv_id_a=pl.lit("x"), conv_id_b=pl.lit("y"),
                                   *[pl.lit(0).alias(f"{c}_{s}") for c in ("sum_assistant_tokens",
                                     "header_count", "list_count", "bold_count") for s in "ab"])
    boards, info = arena_boards(battles, month="2024-01", min_category_battles=100,
                                options=board_options(bootstrap_rounds=0, min_battles=10))
    assert info["boards"]["multiturn"] == 600
    assert info["boards"]["hard_6"] == "skipped: 0 battles < 100"
    assert info["labelled_battles"] == 0
    assert set(boards["board"]) == {"overall", "style_control", "language:en", "multiturn"}


def _separated_share(board: pl.DataFrame) -> float:
    rows = board.select("lower", "upper").rows()
    pairs = list(itertools.combinations(rows, 2))
    return sum(a[1] < b[0] or b[1] < a[0] for a, b in pairs) / len(pairs)


# board -> the simulator's skill column that drives its votes
TRUE_SKILL = {"coding": "skill_coding", "math": "skill_math", "creative_writing": "skill_creative_writing",
              "if": "skill_instruction_following", "captioning": "skill_captioning", "ocr": "skill_ocr",
              "entity_recognition": "skill_entity_recognition", "humor": "skill_humor",
              "homework": "skill_homework", "diagram": "skill_diagram"}


@pytest.mark.slow
def test_category_boards_recover_true_skills_and_hard_separates_more(tmp_path, capsys):
    from arena_assets.ingest import load_model_registry
    from arena_assets.llm import LLMTask
    from arena_assets.pipeline.battles import battles_month
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.pipeline.ingest import ingest_month
    from arena_assets.pipeline.leaderboards import arena_leaderboard_month
    from arena_assets.pipeline.topics import topic_labels_month
    from arena_assets.ranking import fit_bt
    from arena_assets.simulator import WorldConfig, load_truth, simulate_months, start_endpoint
    from arena_assets.storage import Lake

    month, raw, lake = "2024-06", str(tmp_path / "raw"), Lake(str(tmp_path / "lake"))
    config = WorldConfig(style_strength=0.0, position_bias=0.0, abusive_fraction=0.0,
                         category_skill_spread=80.0)
    simulate_months(raw, [month], 40_000, seed=21, config=config)
    ingest_month(lake, raw, month, salt="s", known_models=load_model_registry(raw))
    clean_month(lake, month)
    battles_month(lake, month)
    with start_endpoint(seed=21, config=config, truth_root=raw) as ep:
        task = LLMTask(model="sim-labeler-large", base_url=ep.base_url, max_concurrency=16)
        topic_labels_month(lake, month, task, cache_root=str(tmp_path / "cache"))
    options = board_options(bootstrap_rounds=0, min_battles=50)
    step = arena_leaderboard_month(lake, month, options, min_category_battles=800)
    truth = load_truth(raw)["models"]
    rhos = {}
    for board, skill_col in TRUE_SKILL.items():
        rows = step.boards.filter(pl.col("board") == board)
        if rows.height >= 5:
            skill = dict(zip(truth["name"], truth[skill_col]))
            rhos[board] = spearmanr(rows["rating"], [skill[m] for m in rows["model"]]).statistic
    with capsys.disabled():
        print(f"\ncategory boards: {step.info['boards']}\nSpearman vs true skill: {rhos}")
    assert len(rhos) >= 4, step.info["boards"]
    assert min(rhos.values()) >= 0.9, rhos
    # hard prompts stretch the skill gap: at equal votes the hard_6 board separates more pairs
    hard = step.boards.filter(pl.col("board") == "hard_6")
    n_hard = step.info["boards"]["hard_6"]
    kept = lake.read("battles", month).filter(pl.col("keep") & pl.col("winner").is_not_null())
    shares = []
    for seed in range(3):
        sample = kept.sample(n_hard, seed=seed)
        overall = fit_bt(sample, options).table.filter(pl.col("model").is_in(hard["model"].implode()))
        shares.append(_separated_share(overall))
    with capsys.disabled():
        print(f"separated pairs at {n_hard} battles: hard_6 {_separated_share(hard):.3f}, "
              f"overall {np.mean(shares):.3f}")
    assert _separated_share(hard) > np.mean(shares)
