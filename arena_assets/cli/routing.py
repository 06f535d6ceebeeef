"""`arena-assets p2l-board --prompts FILE`: the leaderboard of any prompt set from a month's
P2L model (the lake's ``p2l_model``), aggregated as P2L does, with bootstrap intervals.

FILE: ``.txt`` (one prompt per line), ``.jsonl`` / ``.json`` (records), ``.csv`` or
``.parquet`` with a ``prompt`` column (a JSON list of turns, as in the 55k CSV, counts by
its first turn); optional ``language`` and topic-label columns (``math``, ``code``,
``hard`` criteria…; missing labels take the training mean). Prompts are embedded with the
model's own embedder: offline wordllama, or the endpoint it names (its answers cached in
the lake's LLM cache, so a rerun makes no call).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "p2l-board",
        help="leaderboard of a prompt set from the monthly P2L model",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument(
        "--prompts", type=Path, required=True, help="prompt file (.txt .jsonl .json .csv .parquet)"
    )
    p.add_argument(
        "--lake", default="", help="lake root (default: ARENA_LAKE_ROOT from the shell or .env)"
    )
    p.add_argument("--month", default="", help="the p2l_model month (default: the latest)")
    p.add_argument(
        "--bootstrap", type=int, default=200, help="resamples of the prompts (0 = no interval)"
    )
    p.add_argument("--level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--api-key-env",
        default="ARENA_EMBED_API_KEY",
        help="variable holding the embedding endpoint's key",
    )
    p.add_argument("--out", type=Path, help="also write the board (.csv, .json or .parquet)")
    p.set_defaults(func=run)


def _first_turn(text: str) -> str:
    if text.startswith("["):
        try:
            turns = json.loads(text)
            if isinstance(turns, list) and turns:
                return str(turns[0])
        except json.JSONDecodeError:
            pass
    return text


def read_prompts(path: Path):
    import polars as pl

    suffix = path.suffix.lower()
    if suffix == ".txt":
        lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        frame = pl.DataFrame({"prompt": lines}, schema={"prompt": pl.String})
    elif suffix in (".jsonl", ".ndjson"):
        frame = pl.read_ndjson(path)
    elif suffix == ".json":
        frame = pl.DataFrame(json.loads(path.read_text(encoding="utf-8")))
    elif suffix == ".csv":
        frame = pl.read_csv(path, infer_schema_length=0)
    elif suffix == ".parquet":
        frame = pl.read_parquet(path)
    else:
        raise ValueError(
            f"{path}: unknown prompt file type {suffix!r} (txt, jsonl, json, csv, parquet)"
        )
    if "prompt" not in frame.columns:
        raise ValueError(f"{path}: no 'prompt' column (columns: {', '.join(frame.columns)})")
    if frame.schema["prompt"] == pl.List(pl.String):
        frame = frame.with_columns(pl.col("prompt").list.first())
    frame = frame.with_columns(
        pl.col("prompt")
        .cast(pl.String)
        .fill_null("")
        .map_elements(_first_turn, return_dtype=pl.String)
    )
    return frame.filter(pl.col("prompt").str.strip_chars() != "")


def _embedder(name: str, lake_root: str, key_env: str):
    """The model's embedder from its recorded name."""
    from arena_assets.envfile import setting

    if name.startswith("wordllama-"):
        from arena_assets.labels.clusters import OfflineEmbedder

        return OfflineEmbedder(int(name.rsplit("-", 1)[1]))
    model, _, base_url = name.partition(" at ")
    from arena_assets.llm import LLMTask, embed_texts, embeddings_cache
    from arena_assets.llm.endpoints import SIMULATED, simulated_arena_url

    if base_url == SIMULATED:
        base_url = simulated_arena_url(
            setting("ARENA_SIM_BASE_URL", ""),
            int(setting("ARENA_SIM_WORLD_SEED", "7")),
            "the P2L model's embedder",
        )
    cache_root = setting("ARENA_LLM_CACHE_ROOT", "") or f"{lake_root.rstrip('/')}/_llm_cache"
    task = LLMTask(
        model=model, base_url=base_url, api_key=os.environ.get(key_env, "") or "sk-no-key"
    )
    cache = embeddings_cache(cache_root)
    return lambda texts: embed_texts(task, texts, cache)[0]


def run(args: argparse.Namespace) -> int:
    import numpy as np
    import polars as pl

    from arena_assets.clean.language import detect_languages
    from arena_assets.envfile import setting
    from arena_assets.pipeline.routing import P2L_MODEL, load_model
    from arena_assets.ranking.leaderboard import rank_upper_bounds, ranks
    from arena_assets.routing.boards import BoardOptions, set_board
    from arena_assets.routing.features import LABEL_FEATURES
    from arena_assets.storage import Lake

    try:
        lake = Lake(
            args.lake or setting("ARENA_LAKE_ROOT", "./data/lake"),
            setting="--lake" if args.lake else "ARENA_LAKE_ROOT",
        )
        months = lake.months(P2L_MODEL)
        month = args.month or (months[-1] if months else "")
        if month not in months:
            raise ValueError(
                f"no p2l_model for {month or 'any month'} in {lake.root}: materialize p2l_model first"
            )
        model = load_model(lake, month)
        frame = read_prompts(args.prompts)
        if frame.is_empty():
            raise ValueError(f"{args.prompts}: no prompts")
        if "language" not in frame.columns:
            frame = frame.with_columns(detect_languages(frame["prompt"])["language"])
        frame = frame.with_columns(pl.col("prompt").str.len_chars().alias("prompt_chars"))
        labels = [c for c in LABEL_FEATURES if c in frame.columns]
        embed = _embedder(model.features.embedder, lake.root, args.api_key_env)
        X = model.features.transform(
            frame, np.asarray(embed(frame["prompt"].to_list()), np.float32)
        )
        opts = BoardOptions(
            rounds=args.bootstrap, level=args.level, seed=args.seed, max_prompts=10**9
        )
        rating, lower, upper, n = set_board(model, X, opts, args.seed)
    except (ValueError, OSError) as exc:
        print(f"p2l-board: {exc}", file=sys.stderr)
        return 2
    board = pl.DataFrame(
        {
            "rank": ranks(rating),
            "rank_ub": rank_upper_bounds(lower, upper),
            "model": model.models,
            "rating": rating,
            "lower": lower,
            "upper": upper,
        }
    ).sort("rank", "model")
    print(
        f"P2L board of {n} prompts ({args.prompts}) from the {month} model; labels given: "
        f"{', '.join(labels) or 'none (training means)'}; {args.level:.0%} intervals over "
        f"{args.bootstrap} prompt resamples"
    )
    with pl.Config(tbl_rows=-1, tbl_hide_dataframe_shape=True, float_precision=1):
        print(board)
    if args.out:
        {
            ".csv": board.write_csv,
            ".json": lambda p: Path(p).write_text(json.dumps(board.to_dicts())),
            ".parquet": board.write_parquet,
        }.get(args.out.suffix.lower(), board.write_csv)(args.out)
    return 0
