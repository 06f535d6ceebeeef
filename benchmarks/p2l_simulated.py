"""P2L on the simulated arena, scored against its hidden truth (results: docs/methods/routing.md).

Simulates ``--months`` training months and one test month with per-prompt skill offsets
(``--spread`` Elo; ``--null`` = a world with no prompt effect at all: no offsets, no
category spread, no difficulty gain, no refusals), runs every stage through Dagster
in-process (ingest ... topic labels and clusters, prompt_embeddings, p2l_model month by
month), then scores the last training month's model on the test month's battles:
share of the marginal-to-truth log-loss gap closed, per-prompt Spearman, ECE, and
category boards against Bradley-Terry on n battles of the category.

    .venv/bin/python benchmarks/p2l_simulated.py --out benchmarks/out/p2l-sim
    .venv/bin/python benchmarks/p2l_simulated.py --out benchmarks/out/p2l-null --null
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def env_for(root: Path, embed: str) -> dict[str, str]:
    """Every setting of `.env.example` (so a setting added later has its default), with
    this benchmark's folders, small boards and the embedder asked for."""
    from arena_assets.envfile import dotenv_file

    return dotenv_file(Path(__file__).resolve().parents[1] / ".env.example") | {
        "ARENA_RAW_ROOT": str(root / "raw"),
        "ARENA_LAKE_ROOT": str(root / "lake"),
        "ARENA_CATALOG": str(root / "arena.duckdb"),
        "ARENA_DUCKDB_MEMORY_LIMIT": "2GB",
        "ARENA_S3_ENDPOINT_URL": "",
        "ARENA_S3_ACCESS_KEY_ID": "",
        "ARENA_S3_SECRET_ACCESS_KEY": "",
        "ARENA_S3_REGION": "",
        "ARENA_USER_SALT": "bench",
        "ARENA_INGEST_WORKERS": "1",
        "ARENA_ALLOW_PARTIAL_FILES": "false",
        "ARENA_RAW_LOGS_RETENTION_MONTHS": "0",
        "ARENA_MODERATION_BASE_URL": "",
        "ARENA_MODERATION_API_KEY": "",
        "ARENA_MODERATION_MODEL": "x",
        "ARENA_ALIAS_TABLE": "",
        "ARENA_IDENTITY_NAMES": "",
        "ARENA_DAILY_VOTE_CAP": "50",
        "ARENA_ANOMALY_ALPHA": "0.001",
        "ARENA_BOOTSTRAP_ROUNDS": "20",
        "ARENA_MIN_BATTLES": "20",
        "ARENA_MIN_CATEGORY_BATTLES": "300",
        "ARENA_ANCHOR_MODEL": "",
        "ARENA_RELEASE_ROOT": str(root / "release"),
        "ARENA_RELEASE_SECRET": "bench",
        "ARENA_RELEASE_LICENSE": "cc-by-4.0",
        "ARENA_LABELER_BASE_URL": "simulated",
        "ARENA_LABELER_API_KEY": "",
        "ARENA_LABELER_MODEL": "sim-labeler-large",
        "ARENA_LABELER_MAX_CONCURRENCY": "8",
        "ARENA_LABELER_PRICE_INPUT_PER_1M": "",
        "ARENA_LABELER_PRICE_OUTPUT_PER_1M": "",
        "ARENA_EMBED_BASE_URL": "simulated" if embed == "simulated" else "",
        "ARENA_EMBED_API_KEY": "",
        "ARENA_EMBED_MODEL": "sim-embed-large",
        "ARENA_EMBED_MAX_CONCURRENCY": "8",
        "ARENA_EMBED_PRICE_INPUT_PER_1M": "",
        "ARENA_EMBED_PRICE_OUTPUT_PER_1M": "",
        "ARENA_LLM_CACHE_ROOT": "",
        "ARENA_SIM_WORLD_SEED": "",
        "ARENA_SIM_LATENCY": "",
        "ARENA_LABEL_MAX_PROMPT_CHARS": "4000",
        "ARENA_LABEL_MAX_PARSE_FAILURE_RATE": "0.05",
        "ARENA_P2L_LOSS": "bt",
        "ARENA_P2L_RANK": "8",
        "ARENA_P2L_REPLAY_MONTHS": "12",
        "ARENA_P2L_MAX_BATTLES": "1000000",
        "ARENA_P2L_MIN_MODEL_BATTLES": "100",
        "ARENA_P2L_BOOTSTRAP_ROUNDS": "20",
        "ARENA_ROUTER_PRICES": "",
        "ARENA_ROUTER_BUDGETS": "",
    }


UPSTREAM = "raw_logs,raw_rejects,conversations,battles,topic_labels,topic_clusters"


def world_config(args):
    from arena_assets.simulator import WorldConfig

    if args.null:
        return WorldConfig(
            prompt_skill_spread=0.0,
            category_skill_spread=0.0,
            hardness_gain=0.0,
            cautious_fraction=0.0,
        )
    return WorldConfig(prompt_skill_spread=args.spread)


def build(args, root: Path, months: list[str]) -> None:
    from arena_assets.simulator import simulate_months
    from arena_assets.storage import Lake
    from arena_assets_tests.harness import materialize

    if not (root / "raw" / months[-1]).exists():
        simulate_months(root / "raw", months, args.per_month, args.seed, world_config(args))
    lake = Lake(str(root / "lake"))
    for m in months:
        if not lake.exists("topic_clusters", m):
            t = time.perf_counter()
            assert materialize(m, UPSTREAM).success
            print(f"{m}: upstream stages {time.perf_counter() - t:.0f} s", flush=True)
        if not lake.exists("prompt_embeddings", m):
            assert materialize(m, "prompt_embeddings").success
    for m in months[:-1]:
        t = time.perf_counter()
        assert materialize(m, "p2l_model").success
        print(f"{m}: p2l_model {time.perf_counter() - t:.1f} s", flush=True)


def score(args, root: Path, months: list[str]) -> dict:
    import polars as pl

    from arena_assets.pipeline.routing import (
        load_model,
        month_features,
        month_prompts,
        params_named,
    )
    from arena_assets.routing.data import BATTLE_COLUMNS, encode
    from arena_assets.simulator import World
    from arena_assets.simulator import p2l_scoring as simscore
    from arena_assets.storage import Lake

    lake = Lake(str(root / "lake"))
    world = World.build(world_config(args), args.seed)
    train_months, test = months[:-1], months[-1]
    model = load_model(lake, train_months[-1])
    marginal = params_named(model, "marginal")
    prompts, X = month_features(lake, test, model)
    battles = lake.read("battles", test, columns=[*BATTLE_COLUMNS, "conv_id_a"])
    enc = encode(battles, prompts, X, loss="bt", tie_mode="half", models=model.models)
    truth = simscore.conversation_truth(str(root / "raw"), months)
    used = battles.filter(pl.col("battle_id").is_in(enc.battle_ids))
    bt = (
        pl.DataFrame({"battle_id": enc.battle_ids})
        .join(
            used.select("battle_id", "conv_id_a"), on="battle_id", how="left", maintain_order="left"
        )
        .join(
            truth.rename({"conv_id": "conv_id_a"}),
            on="conv_id_a",
            how="left",
            maintain_order="left",
        )
    )
    true_battle = simscore.truth_betas(world, bt, model.models)
    figures = {
        "model_month": train_months[-1],
        "test_month": test,
        "chosen_ridge": model.alpha,
        "ridge_path": [(p["alpha"], round(p["val_nll"], 5)) for p in model.meta["path"]],
        **simscore.prediction_scores(model, marginal, enc.coded, true_battle),
    }
    # per prompt: the test month's prompts that a truth row describes
    conv = lake.read("conversations", test, columns=["conv_id", "dedup_key"]).sort("conv_id")
    per_key = conv.join(truth, on="conv_id", how="inner").unique("dedup_key", keep="first")
    rows = prompts.with_row_index("_row").join(per_key, on="dedup_key", how="inner")
    tb = simscore.truth_betas(world, rows, model.models)
    xr = X[rows["_row"].to_numpy()]
    figures["per_prompt_spearman_p2l"] = simscore.per_prompt_spearman(model.params.betas(xr), tb)
    figures["per_prompt_spearman_marginal"] = simscore.per_prompt_spearman(marginal.betas(xr), tb)
    # category boards: test prompts define the set; BT on n training battles of the category
    train_prompts, temb = month_prompts(lake, train_months)
    tx = model.features.transform(train_prompts, temb)
    tb_all = lake.read_months("battles", train_months, columns=BATTLE_COLUMNS)
    train = encode(tb_all, train_prompts, tx, loss="bt", tie_mode="half", models=model.models).coded
    sub = prompts[rows["_row"].to_numpy()]
    figures["category_boards"] = {
        n: simscore.small_n_category_boards(
            model, sub, xr, tb, train, train_prompts, n, seed=args.seed
        )
        for n in args.sizes
    }
    figures["p2l_models"] = len(model.models)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument(
        "--months", type=int, default=4, help="training months (one more is the test month)"
    )
    ap.add_argument("--per-month", type=int, default=20000, help="sessions per month")
    ap.add_argument("--spread", type=float, default=80.0, help="sd (Elo) of the per-prompt offsets")
    ap.add_argument("--null", action="store_true")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--embed", choices=("simulated", "offline"), default="simulated")
    ap.add_argument(
        "--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[200, 500, 1000]
    )
    args = ap.parse_args()
    root = Path(args.out).resolve()
    env = env_for(root, args.embed)
    env["ARENA_SIM_WORLD_SEED"] = str(args.seed)
    os.environ.update(env)
    from arena_assets.simulator import month_range

    months = month_range("2024-01", args.months + 1)
    t = time.perf_counter()
    build(args, root, months)
    figures = score(args, root, months)
    figures["seconds"] = round(time.perf_counter() - t, 1)
    print(json.dumps(figures, indent=1, default=float))


if __name__ == "__main__":
    main()
