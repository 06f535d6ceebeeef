"""P2L boards for prompt sets: the month's prompts (overall), each category, each cluster,
or any set a user gives; aggregated as P2L does (``aggregate.py``)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl

from arena_assets.ranking.boards import CATEGORY_BOARDS
from arena_assets.ranking.leaderboard import RatingScale, rank_upper_bounds, ranks
from arena_assets.ranking.newton import single_threaded_blas
from arena_assets.routing.aggregate import aggregate_board
from arena_assets.routing.p2l import P2LModel, Params
from arena_assets.routing.schema import P2L_BOARDS_SCHEMA

# the category boards a prompt set can be: those decided by the prompt alone
# (multiturn is a property of the conversation, no_refusal of the answers)
PROMPT_LEVEL_CATEGORIES = tuple(b for b in CATEGORY_BOARDS if b not in ("multiturn", "no_refusal"))


@dataclass(frozen=True)
class BoardOptions:
    rounds: int = 100  # bootstrap resamples of the set's prompts
    level: float = 0.95
    min_prompts: int = 20  # smaller sets get no board
    max_prompts: int = 2000  # larger sets are aggregated on a seeded sample
    seed: int = 0


def prompt_sets(
    prompts: pl.DataFrame, clusters: pl.DataFrame | None
) -> dict[str, tuple[str, np.ndarray]]:
    """prompt_set -> (readable name, row indices into ``prompts``)."""
    sets = {"overall": ("all prompts of the month", np.arange(prompts.height))}
    frame = prompts.with_row_index("_row")
    for board in PROMPT_LEVEL_CATEGORIES:
        expr = CATEGORY_BOARDS[board]
        if all(c in frame.columns for c in expr.meta.root_names()):
            rows = frame.filter(expr.fill_null(False)).get_column("_row").to_numpy()
            sets[f"category:{board}"] = (board, rows)
    if clusters is not None and clusters.height:
        joined = frame.join(
            clusters.select("dedup_key", "cluster_id", "cluster_name"), on="dedup_key", how="inner"
        )
        for (cid, name), part in joined.group_by(
            ["cluster_id", "cluster_name"], maintain_order=True
        ):
            sets[f"cluster:{cid}"] = (name, part.get_column("_row").to_numpy())
    return sets


def set_board(
    model: P2LModel, X: np.ndarray, opts: BoardOptions, seed: int, params: Params | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(rating, lower, upper, prompts) on the Elo scale for the prompts X. The interval's
    rounds resample the prompts and add a bootstrap shift of the intercepts (stored with
    the model), so a set's interval carries both which prompts it holds and the battles'
    sampling error of the model's intercepts; W's own error is not in it."""
    prm = params or model.params
    etas = prm.eta(X) if model.config.loss == "grk" else None
    board = aggregate_board(
        prm.betas(X),
        loss=model.config.loss,
        etas=etas,
        rounds=opts.rounds,
        seed=seed,
        max_prompts=opts.max_prompts,
    )
    scale = RatingScale()
    rating = scale.ratings(board.ratings - board.ratings.mean(), model.models)
    if opts.rounds:
        boot = board.boot
        shifts = np.asarray(model.meta.get("intercept_boot") or np.zeros((0, len(model.models))))
        if len(shifts):  # the intercepts' sampling error, round r with shift r (cycled)
            boot = boot + shifts[np.arange(len(boot)) % len(shifts)]
        boot = scale.ratings(boot - boot.mean(axis=1, keepdims=True), model.models)
        tail = (1 - opts.level) / 2
        lower, upper = np.quantile(boot, [tail, 1 - tail], axis=0)
        lower, upper = np.minimum(lower, rating), np.maximum(upper, rating)
    else:
        lower = upper = rating
    return rating, lower, upper, board.prompts


def p2l_boards(
    month: str,
    model: P2LModel,
    prompts: pl.DataFrame,
    X: np.ndarray,
    clusters: pl.DataFrame | None,
    opts: BoardOptions = BoardOptions(),
) -> pl.DataFrame:
    """One board per prompt set with at least ``min_prompts`` prompts (P2L_BOARDS_SCHEMA)."""
    frames = []
    sets = [
        (i, key, name, rows)
        for i, (key, (name, rows)) in enumerate(prompt_sets(prompts, clusters).items())
        if len(rows) >= opts.min_prompts
    ]
    # the sets on up to 4 CPUs: a month has ~120, each a few large numpy products and
    # solves that release the interpreter lock (~2x on 2 cores); at most 4 because each set
    # holds ~230 MB while its pair probabilities are built. A set's seed is its index, so
    # the boards are the same whatever the order. BLAS held to one thread around the pool:
    # the limit aggregate_board enters and leaves in each thread then restores that one.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    workers = max(1, min(cpus, 4, len(sets)))
    with (
        single_threaded_blas(),
        ThreadPoolExecutor(workers, thread_name_prefix="p2l-board") as pool,
    ):
        boards = list(pool.map(lambda s: set_board(model, X[s[3]], opts, opts.seed + s[0]), sets))
    for (_, key, name, _), (rating, lower, upper, n) in zip(sets, boards):
        frames.append(
            pl.DataFrame(
                {
                    "month": month,
                    "prompt_set": key,
                    "set_name": name,
                    "prompts": n,
                    "model": model.models,
                    "rating": rating,
                    "lower": lower,
                    "upper": upper,
                    "rank": ranks(rating),
                    "rank_ub": rank_upper_bounds(lower, upper),
                    "ci_level": opts.level,
                }
            )
        )
    if not frames:
        return pl.DataFrame(schema=P2L_BOARDS_SCHEMA)
    return (
        pl.concat(frames)
        .cast(P2L_BOARDS_SCHEMA)
        .sort(  # type: ignore[arg-type]
            "prompt_set", "rank", "model"
        )
    )
