"""The routing stage through Dagster on two simulated months: every asset materializes with
its metadata, the tables keep their contracts, a rerun writes the same model, prices turn
on cost-aware routing within budget, and the training data's splits and file layouts hold
what the anchors' readers expect."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import polars as pl
import pytest

from arena_assets.errors import SettingError
from arena_assets.pipeline.routing import load_model, read_blob
from arena_assets.routing.schema import (
    P2L_BOARDS_SCHEMA,
    P2L_MODEL_SCHEMA,
    PROMPT_EMBEDDINGS_SCHEMA,
    ROUTER_EVAL_SCHEMA,
    ROUTER_SCHEMA,
    ROUTER_TRAINING_SCHEMA,
)
from arena_assets.simulator import WorldConfig, simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.conftest import arena_env_values, with_simulated_arena
from arena_assets_tests.harness import materialize

MONTHS = ["2024-01", "2024-02"]
UPSTREAM = (
    "raw_logs,raw_rejects,conversations,battles,topic_labels,topic_clusters,"
    "battle_cells,arena_leaderboard"
)
ROUTING = "prompt_embeddings,p2l_model,p2l_boards,router,router_eval,router_training_data"


def _meta(result, asset: str) -> dict:
    (event,) = [
        e
        for e in result.get_asset_materialization_events()
        if e.materialization.asset_key.to_user_string() == asset
    ]
    return {k: v.value for k, v in event.materialization.metadata.items()}


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("routing")
    env = with_simulated_arena(
        arena_env_values(root)
    )  # what the arena_env fixture sets, for the whole module
    for key, value in env.items():
        mp.setenv(key, value)
    simulate_months(
        env["ARENA_RAW_ROOT"],
        MONTHS,
        400,
        seed=int(env["ARENA_SIM_WORLD_SEED"]),
        config=WorldConfig(prompt_skill_spread=80.0),
    )
    results = {}
    for month in MONTHS:
        assert materialize(month, UPSTREAM).success
        results[month] = materialize(month, ROUTING)
        assert results[month].success
    yield env, Lake(env["ARENA_LAKE_ROOT"]), results, mp
    mp.undo()


def test_every_table_keeps_its_contract(routed):
    _env, lake, _, _ = routed
    for asset, schema in [
        ("prompt_embeddings", PROMPT_EMBEDDINGS_SCHEMA),
        ("p2l_model", P2L_MODEL_SCHEMA),
        ("p2l_boards", P2L_BOARDS_SCHEMA),
        ("router", ROUTER_SCHEMA),
        ("router_eval", ROUTER_EVAL_SCHEMA),
        ("router_training_data", ROUTER_TRAINING_SCHEMA),
    ]:
        for month in MONTHS:
            frame = lake.read(asset, month)
            assert dict(frame.schema) == schema, asset
            assert frame.height > 0, (asset, month)


def test_embeddings_model_and_boards(routed):
    env, lake, results, _ = routed
    month = MONTHS[1]
    emb = lake.read("prompt_embeddings", month)
    conv = lake.read("conversations", month, columns=["dedup_key"])
    assert emb["dedup_key"].is_unique().all() and emb.height == conv["dedup_key"].n_unique()
    assert emb["embedder"].unique().to_list() == [
        f"sim-embed-large at {env['ARENA_EMBED_BASE_URL']}"
    ]
    model = load_model(lake, month)
    table = lake.read("p2l_model", month)
    assert table["model"].to_list() == model.models
    assert table["rating"].mean() == pytest.approx(1000.0) and table[
        "marginal_rating"
    ].mean() == pytest.approx(1000.0)
    meta = _meta(results[month], "p2l_model")
    assert meta["warm_start"] is True  # the second month starts from the first one's model
    assert set(meta["training_battles"]) == set(MONTHS)  # the first month is replayed
    boards = lake.read("p2l_boards", month)
    assert "overall" in boards["prompt_set"].to_list()
    sets = set(boards["prompt_set"].unique().to_list())
    assert {"category:coding", "category:math", "category:if"} <= sets
    sizes = lake.read("topic_clusters", month).group_by("cluster_id").len()
    big = {f"cluster:{c}" for c in sizes.filter(pl.col("len") >= 20)["cluster_id"].to_list()}
    assert {s for s in sets if s.startswith("cluster:")} == big  # every cluster of >= 20 prompts
    assert (boards["lower"] <= boards["rating"]).all() and (
        boards["rating"] <= boards["upper"]
    ).all()
    # even with W = 0 (too few held-out battles here) an interval carries the intercepts' error
    overall = boards.filter(pl.col("prompt_set") == "overall")
    assert ((overall["upper"] - overall["lower"]) > 1.0).all()
    for _, board in boards.group_by("prompt_set"):
        assert sorted(board["model"].to_list()) == sorted(model.models)
        assert board["rating"].mean() == pytest.approx(1000.0)


def test_rerun_writes_the_same_model(routed):
    _, lake, _, _ = routed
    month = MONTHS[1]
    before = read_blob(lake, "p2l_model", f"{month}.json")
    assert materialize(month, "p2l_model").success
    assert read_blob(lake, "p2l_model", f"{month}.json") == before


def test_router_eval_and_router_with_prices(routed):
    _env, lake, _, mp = routed
    month = MONTHS[1]
    ev = lake.read("router_eval", month)
    assert ev["router"].to_list() == ["random", "length", "p2l"]
    assert (ev["battles"] > 0).all() and ev["battles"].n_unique() == 1  # the same battles for all
    # APGR exists wherever the strong and the weak side's qualities differ
    gap = ev["strong_quality"] != ev["weak_quality"]
    assert (ev["apgr"].is_finite() == gap).all()
    argmax = lake.read("router", month)
    assert argmax["policy"].unique().to_list() == ["argmax"]
    assert argmax["share"].sum() == pytest.approx(1.0)
    models = load_model(lake, month).models
    prices = {m: float(i + 1) for i, m in enumerate(models)}
    mp.setenv("ARENA_ROUTER_PRICES", json.dumps(prices))
    mp.setenv("ARENA_ROUTER_BUDGETS", "3.5")
    try:
        assert materialize(month, "router").success
    finally:
        mp.setenv("ARENA_ROUTER_PRICES", "")
        mp.setenv("ARENA_ROUTER_BUDGETS", "")
    table = lake.read("router", month)
    lp = table.filter(pl.col("policy") == "lp")
    assert lp["budget"].unique().to_list() == [3.5]
    assert lp["expected_cost"][0] <= 3.5 + 1e-9 and lp["share"].sum() == pytest.approx(1.0)
    strict = table.filter(pl.col("policy") == "strict")
    assert strict.filter(pl.col("share") > 0)["price"].max() <= 3.5


def test_bad_prices_are_one_clear_line(routed):
    _, lake, _, mp = routed
    before = lake.read("router", MONTHS[0])
    mp.setenv("ARENA_ROUTER_PRICES", "{not json")  # not JSON at all: the load stops
    try:
        with pytest.raises(SettingError) as refused:
            materialize(MONTHS[0], "router", raise_on_error=False)
        mp.setenv("ARENA_ROUTER_PRICES", '{"kelp-34b-pro": -1}')  # JSON, but no price: the step
        result = materialize(MONTHS[0], "router", raise_on_error=False)
    finally:
        mp.setenv("ARENA_ROUTER_PRICES", "")
    assert str(refused.value).startswith(
        "error: ARENA_ROUTER_PRICES='{not json' is not allowed: expected a JSON object"
    )
    assert not result.success
    (failure,) = result.get_step_failure_events()
    text = failure.step_failure_data.user_failure_data.description
    assert text == ("ARENA_ROUTER_PRICES must map each model to a price >= 0 (nothing was written)")
    assert lake.read("router", MONTHS[0]).equals(before)


def test_training_data_splits_and_layouts(routed):
    _, lake, results, _ = routed
    month = MONTHS[1]
    rows = lake.read("router_training_data", month)
    battles = lake.read("battles", month).filter(pl.col("keep"))
    meta = _meta(results[month], "router_training_data")
    counts = meta["counts"]
    assert rows.height + counts["missing_conversation"] == battles.height
    assert rows["battle_id"].is_unique().all()
    per_id = rows.group_by("prompt_id").agg(pl.col("split").n_unique().alias("n"))
    assert per_id["n"].max() == 1  # a near-duplicate group never spans two splits
    assert set(rows["split"].unique().to_list()) == {"train", "val", "test"}
    first_test = rows.filter(pl.col("split") == "test")["tstamp"].min()
    moved = rows.filter((pl.col("split") == "train") & (pl.col("tstamp") >= first_test))
    assert moved.height <= counts["moved_with_group"]
    assert rows["tier_a"].null_count() < rows.height  # tiers from the month's board
    files = meta["files"]
    csv_rows = list(csv.DictReader(io.StringIO(Path(files["train.csv"]).read_text())))
    assert list(csv_rows[0]) == [
        "id",
        "model_a",
        "model_b",
        "prompt",
        "response_a",
        "response_b",
        "winner_model_a",
        "winner_model_b",
        "winner_tie",
    ]
    train = rows.filter(pl.col("split") == "train").sort("tstamp", "battle_id")
    assert len(csv_rows) == train.height
    first = csv_rows[0]
    assert json.loads(first["prompt"]) == train["prompt"][0].to_list()
    assert sum(int(first[k]) for k in ("winner_model_a", "winner_model_b", "winner_tie")) == 1
    lines = [json.loads(x) for x in Path(files["test.jsonl"]).read_text().splitlines()]
    assert len(lines) == rows.filter(pl.col("split") == "test").height
    rec = lines[0]
    assert {
        "question_id",
        "model_a",
        "model_b",
        "winner",
        "conversation_a",
        "conversation_b",
        "turn",
        "language",
        "tstamp",
        "conv_metadata",
        "prompt",
    } <= set(rec)
    assert rec["conversation_a"][0]["role"] == "user"
    from arena_assets.ranking.io import read_battles  # our FastChat reader reads it back

    back = read_battles(files["test.jsonl"])
    assert back.height == len(lines) and "sum_assistant_tokens_a" in back.columns


def test_every_check_passes(routed):
    _, _, results, _ = routed
    for month, result in results.items():
        evaluations = result.get_asset_check_evaluations()
        names = {(e.asset_key.to_user_string(), e.check_name) for e in evaluations}
        assert ("router_training_data", "no_prompt_in_two_splits") in names
        assert ("p2l_model", "chosen_ridge_not_worse_than_marginal") in names
        assert all(e.passed for e in evaluations), [
            (e.check_name, month) for e in evaluations if not e.passed
        ]


def test_p2l_board_command_on_a_prompt_file(routed, tmp_path, capsys):
    """`arena-assets p2l-board --prompts FILE`: the month's model, the prompts embedded by
    the model's own embedder (the simulated endpoint here), one row per model."""
    env, lake, _, _ = routed
    from arena_assets.cli import main

    prompts = lake.read("conversations", MONTHS[1], columns=["first_prompt"])["first_prompt"].head(
        30
    )
    path = tmp_path / "prompts.jsonl"
    pl.DataFrame({"prompt": prompts}).write_ndjson(path)
    out = tmp_path / "board.csv"
    assert (
        main(
            [
                "p2l-board",
                "--prompts",
                str(path),
                "--lake",
                env["ARENA_LAKE_ROOT"],
                "--bootstrap",
                "30",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    board = pl.read_csv(out)
    model = load_model(lake, MONTHS[1])
    assert sorted(board["model"].to_list()) == sorted(model.models)
    assert board["rating"].mean() == pytest.approx(1000.0, abs=1e-6)
    assert "P2L board of 30 prompts" in capsys.readouterr().out
    assert (
        main(
            [
                "p2l-board",
                "--prompts",
                str(tmp_path / "missing.txt"),
                "--lake",
                env["ARENA_LAKE_ROOT"],
            ]
        )
        == 2
    )
    assert "p2l-board:" in capsys.readouterr().err
