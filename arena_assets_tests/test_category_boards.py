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

from arena_assets.labels.tags import CRITERIA, VISION_TAGS, tag_from_flat
from arena_assets.ranking.boards import (
    BOARDS_WITHOUT_LABELS,
    CATEGORY_BOARDS,
    arena_boards,
    attach_topic_labels,
    board_options,
)

# topic_labels' flat columns; `category_tag` is made from them as the boards read it
FLAT = {
    **dict.fromkeys(CRITERIA, pl.Boolean),
    "math": pl.Boolean,
    "creative_writing": pl.Boolean,
    "if_score": pl.Int8,
    "code": pl.Boolean,
    "is_vision": pl.Boolean,
    "refusal": pl.Boolean,
    "user_tokens": pl.Int32,
    **{f"vision_{v}": pl.Boolean for v in (*VISION_TAGS, "creative_writing")},
}


def _labels(rows: list[dict]) -> pl.DataFrame:
    """Hand-written label rows; ``hard`` sets all seven criteria (True) or none (False)."""
    out = []
    for r in rows:
        r = dict(r)
        hard = r.pop("hard", None)
        out.append(
            dict.fromkeys(FLAT) | (dict.fromkeys(CRITERIA, hard) if hard is not None else {}) | r
        )
    frame = pl.DataFrame(out, schema={"conv_id": pl.String, **FLAT})
    return frame.with_columns(category_tag=tag_from_flat())


def test_labels_join_on_both_sides_and_refusal_on_either():
    battles = pl.DataFrame(
        {
            "battle_id": ["b1", "b2", "b3"],
            "conv_id_a": ["a1", "a2", "zz"],
            "conv_id_b": ["c1", "c2", "c3"],
            "turn": [1, 2, 1],
        }
    )
    labels = _labels(
        [
            {"conv_id": "a1", "hard": True, "math": True, "refusal": False, "if_score": 4},
            {"conv_id": "c1", "refusal": True},
            {
                "conv_id": "a2",
                "hard": False,
                "refusal": False,
                "is_vision": True,
                "vision_ocr": True,
            },
            {"conv_id": "c2", "refusal": False},
        ]
    )
    out = attach_topic_labels(battles, labels).sort("battle_id")
    assert out["labelled"].to_list() == [True, True, False]
    tag = out["category_tag"].struct
    assert tag.field("refusal_v0.1").struct.field("refusal").to_list() == [
        True,
        False,
        None,
    ]  # b3: no labels
    assert tag.field("criteria_v0.1").struct.field("creativity").to_list() == [True, False, None]
    picked = {
        name: out.filter(pred.fill_null(False) & pl.col("labelled"))["battle_id"].to_list()
        for name, pred in CATEGORY_BOARDS.items()
    }
    assert picked["hard_6"] == ["b1"] and picked["math"] == ["b1"] and picked["if"] == ["b1"]
    assert picked["no_refusal"] == ["b2"] and picked["ocr"] == ["b2"] and picked["vision"] == ["b2"]
    assert attach_topic_labels(battles, None)["labelled"].sum() == 0
    # every board's rule is written out for the leaderboard's metadata, maybe / unparsed included
    from arena_assets.labels.tags import BOARD_NOTES, board_rules_markdown

    assert set(BOARD_NOTES) == set(CATEGORY_BOARDS) and '"maybe"' in BOARD_NOTES["no_refusal"]
    assert board_rules_markdown().count("\n| ") == len(CATEGORY_BOARDS)


def test_long_user_board_takes_prompts_of_500_tokens_measured_before_the_cut():
    """LMArena's long_user board: at least 500 user tokens over the conversation, measured
    on the whole text (``user_tokens`` is recorded before labelling cuts it)."""
    battles = pl.DataFrame(
        {
            "battle_id": ["short", "edge", "long"],
            "conv_id_a": ["a", "b", "c"],
            "conv_id_b": ["x", "y", "z"],
            "turn": [1, 1, 1],
        }
    )
    labels = _labels(
        [
            {"conv_id": "a", "user_tokens": 80},
            {"conv_id": "b", "user_tokens": 499},
            {"conv_id": "c", "user_tokens": 3200},
        ]
    )
    out = attach_topic_labels(battles, labels)
    picked = out.filter(CATEGORY_BOARDS["long_user"].fill_null(False))["battle_id"].to_list()
    assert picked == ["long"]


def test_boards_without_labels_say_why_and_multiturn_needs_none():
    from arena_assets.ranking import sample_bt_battles

    battles = sample_bt_battles({"m1": 1100.0, "m2": 1000.0, "m3": 900.0}, 600, seed=1)
    battles = battles.with_columns(
        *[
            pl.lit(0).alias(f"{c}_{s}")
            for c in ("sum_assistant_tokens", "header_count", "list_count", "bold_count")
            for s in "ab"
        ],
        keep=pl.lit(True),
        removed_reason=pl.lit(None, pl.String),
        language=pl.lit("en"),
        turn=pl.lit(2),
        conv_id_a=pl.lit("x"),
        conv_id_b=pl.lit("y"),
    )
    boards, info = arena_boards(
        battles,
        month="2024-01",
        min_category_battles=100,
        options=board_options(bootstrap_rounds=0, min_battles=10),
    )
    assert info["boards"]["multiturn"] == 600
    assert info["boards"]["hard_6"] == "skipped: 0 battles < 100"
    assert info["labelled_battles"] == 0
    assert set(boards["board"]) == {"overall", "style_control", "language:en", "multiturn"}


def _separated_share(board: pl.DataFrame) -> float:
    """Share of model pairs whose intervals do not overlap."""
    rows = board.select("lower", "upper").rows()
    pairs = list(itertools.combinations(rows, 2))
    return sum(a[1] < b[0] or b[1] < a[0] for a, b in pairs) / len(pairs)


def _true_labels(raw: str, month: str) -> pl.DataFrame:
    """Every conversation's labels from the simulator's truth, named as ``topic_labels``,
    in LMArena's ``category_tag`` (the long_user board measures the truth's whole first
    prompt with the same token counter)."""
    from arena_assets.tokens import approx_tokens

    prompts = pl.read_parquet(f"{raw}/_truth/prompts/{month}.parquet")
    labels = prompts.select(
        "prompt_id",
        *CRITERIA,
        "code",
        "math",
        "creative_writing",
        pl.col("if_score").cast(pl.Int8),
        approx_tokens(pl.col("text")).cast(pl.Int32).alias("user_tokens"),
        pl.col("image").alias("is_vision"),
        pl.col("^vision_.*$"),
    )
    convs = pl.read_parquet(f"{raw}/_truth/conversations/{month}.parquet")
    return (
        convs.select("conv_id", "prompt_id", pl.col("refused").alias("refusal"))
        .join(labels, on="prompt_id", how="left")
        .drop("prompt_id")
        .with_columns(category_tag=tag_from_flat())
    )


def _true_board_skills(kept: pl.DataFrame, raw: str, month: str, config) -> dict[str, pl.DataFrame]:
    """board -> (model, true_skill): the strength the simulator's votes gave each model on
    the battles a board holds by the TRUE labels of their prompts.

    A board mixes prompts of several simulator categories (an `if` board holds coding and
    math prompts with many constraints) and difficulties, and cautious models lose votes
    by refusing, so its true order is not one skill column: per battle a model's share of
    the vote logit is gain(criteria)·(skill in the prompt's category − that category's
    mean) − refusal_penalty·refused (``simulator/votes.py``), averaged over its battles
    on the board. Boards chosen by the true labels, so labelling errors count against the
    product's boards."""
    from arena_assets.simulator.votes import difficulty_gain

    truth = pl.read_parquet(f"{raw}/_truth/votes/{month}.parquet").select(
        "conv_id_a", "category", "criteria_count", "refused_a", "refused_b"
    )
    models = pl.read_parquet(f"{raw}/_truth/models.parquet")
    skills = (
        models.unpivot(
            pl.selectors.starts_with("skill_"),
            index="name",
            variable_name="category",
            value_name="skill",
        )
        .with_columns(pl.col("category").str.strip_prefix("skill_"))
        .with_columns(centered=pl.col("skill") - pl.col("skill").mean().over("category"))
    )
    rows = (
        attach_topic_labels(kept, _true_labels(raw, month))
        .join(truth, on="conv_id_a", how="left")
        .with_columns(
            gain=pl.col("criteria_count").map_elements(
                lambda c: difficulty_gain(c, config), return_dtype=pl.Float64
            )
        )
    )
    out = {}
    for name, predicate in CATEGORY_BOARDS.items():
        needs = pl.lit(True) if name in BOARDS_WITHOUT_LABELS else pl.col("labelled")
        subset = rows.filter(needs & predicate.fill_null(False))
        sides = pl.concat(
            [
                subset.select(
                    pl.col(f"model_{s}").alias("name"),
                    "category",
                    "gain",
                    pl.col(f"refused_{s}").alias("refused"),
                )
                for s in "ab"
            ]
        )
        out[name] = (
            sides.join(skills, on=["name", "category"], how="left")
            .with_columns(
                share=pl.col("gain") * pl.col("centered")
                - config.refusal_penalty * pl.col("refused").cast(pl.Float64)
            )
            .group_by("name")
            .agg(true_skill=pl.col("share").mean())
            .rename({"name": "model"})
        )
    return out


# boards that hold one simulator category's prompts: also compared with that skill column
ONE_CATEGORY = {
    "coding": "skill_coding",
    "math": "skill_math",
    "creative_writing": "skill_creative_writing",
}
# reported only: the `if` board also holds coding, math... prompts with many constraints
NAMED_SKILL = ONE_CATEGORY | {"if": "skill_instruction_following"}
MIN_CATEGORY_BATTLES = 800


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
    # wide per-category offsets, so a category's order differs from the overall one
    config = WorldConfig(
        style_strength=0.0, position_bias=0.0, abusive_fraction=0.0, category_skill_spread=80.0
    )
    simulate_months(raw, [month], 40_000, seed=21, config=config)
    ingest_month(lake, raw, month, salt="s", known_models=load_model_registry(raw))
    clean_month(lake, month)
    battles_month(lake, month)
    with start_endpoint(seed=21, config=config, truth_root=raw) as ep:
        task = LLMTask(model="sim-labeler-large", base_url=ep.base_url, max_concurrency=16)
        topic_labels_month(lake, month, task, cache_root=str(tmp_path / "cache"))
    options = board_options(bootstrap_rounds=0, min_battles=50)
    step = arena_leaderboard_month(lake, month, options, min_category_battles=MIN_CATEGORY_BATTLES)
    kept = lake.read("battles", month).filter(pl.col("keep") & pl.col("winner").is_not_null())
    truth = _true_board_skills(kept, raw, month, config)
    models = load_truth(raw)["models"]
    theta = dict(zip(models["name"], models["theta"]))

    # every category board published (>= MIN_CATEGORY_BATTLES votes) against its true order
    lines, rho, rho_skill = [], {}, {}
    for board in CATEGORY_BOARDS:
        used = step.info["boards"].get(board)
        rows = step.boards.filter(pl.col("board") == board).join(truth[board], on="model")
        if rows.is_empty():
            lines.append(f"  {board:<24} {used}")
            continue
        rho[board] = spearmanr(rows["rating"], rows["true_skill"]).statistic
        vs_theta = spearmanr(rows["rating"], [theta[m] for m in rows["model"]]).statistic
        line = (
            f"  {board:<24} {used:>6} battles {rows.height:>3} models  Spearman vs true "
            f"order {rho[board]:.3f}  (vs overall skill theta {vs_theta:.3f}"
        )
        if board in NAMED_SKILL:
            skill = dict(zip(models["name"], models[NAMED_SKILL[board]]))
            rho_skill[board] = spearmanr(
                rows["rating"], [skill[m] for m in rows["model"]]
            ).statistic
            line += f", vs {NAMED_SKILL[board]} {rho_skill[board]:.3f}"
        lines.append(line + ")")

    # hard prompts stretch the skill gap: at the hard board's vote count, the overall
    # board (its battles subsampled to that count, 5 seeds) separates fewer pairs
    hard = step.boards.filter(pl.col("board") == "hard_6")
    n_hard = step.info["boards"]["hard_6"]
    shares = [
        _separated_share(
            fit_bt(kept.sample(n_hard, seed=seed), options).table.filter(
                pl.col("model").is_in(hard["model"].implode())
            )
        )
        for seed in range(5)
    ]
    with capsys.disabled():
        print(f"\ncategory boards of a 40,000-session month (min {MIN_CATEGORY_BATTLES} votes):")
        print("\n".join(lines))
        print(
            f"separated pairs at {n_hard} votes: hard_6 {_separated_share(hard):.3f}, overall "
            f"subsampled {np.mean(shares):.3f} (seeds 0-4: {', '.join(f'{x:.3f}' for x in shares)})"
        )
    assert len(rho) >= 5, step.info["boards"]
    assert min(rho.values()) >= 0.9, rho
    assert all(rho_skill[b] >= 0.9 for b in ONE_CATEGORY if b in rho_skill), rho_skill
    assert _separated_share(hard) > max(shares), (_separated_share(hard), shares)


def test_a_battle_file_with_category_tag_feeds_the_boards_without_a_labeller(real_data, tmp_path):
    """LMArena's refusal test set carries `category_tag = {"refusal_v0.2": bool}` (12 of 100
    true): `--category no_refusal` keeps the other 88 by LMArena's rule; boards the tag
    cannot answer (hard_6: no criteria) hold nothing rather than guessing."""
    from arena_assets.cli import main
    from arena_assets.ranking.io import read_battles

    path = real_data / "battles" / "clean_battles_2024_full_conversations.jsonl"
    battles = read_battles(path)
    assert battles["category_tag"].struct.field("refusal_v0.2").struct.field("refusal").sum() == 12
    assert read_battles(path, category="no_refusal").height == 88
    assert read_battles(path, category="multiturn").height == int((battles["turn"] > 1).sum())
    assert read_battles(path, category="hard_6").height == 0
    out = tmp_path / "board.parquet"
    assert main(["leaderboard", str(path), "--category", "no_refusal", "--out", str(out)]) == 0
    assert (pl.read_parquet(out)["category"] == "no_refusal").all()
