"""The routing steps: the monthly P2L model and what reads it (boards for prompt sets, the
router and its evaluation), and the router training data; the prompt embeddings they read
are ``pipeline.embeddings``'.

Each step reads its inputs from the lake, calls ``arena_assets.routing`` and writes one
partition (atomically, as every stage); the P2L model's coefficients and features are a
JSON file beside its table (``<lake>/p2l_model/_files/<month>.json``), which the later
steps and ``arena-assets p2l-board`` load with ``load_model``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from arena_assets.pipeline.embeddings import PROMPT_EMBEDDINGS
from arena_assets.ranking.boards import month_seed
from arena_assets.ranking.cells import BOTHBAD, TIE, aggregate_codes
from arena_assets.ranking.leaderboard import RatingScale, bootstrap_betas
from arena_assets.routing.boards import BoardOptions, p2l_boards
from arena_assets.routing.data import (
    BATTLE_COLUMNS,
    BOARD_LABELS,
    encode,
    labels_per_prompt,
    prompt_frame,
)
from arena_assets.routing.features import LABEL_FEATURES, FeatureSpace
from arena_assets.routing.holdout import prediction_figures, routing_rows
from arena_assets.routing.p2l import (
    Coded,
    P2LConfig,
    P2LFit,
    P2LInputError,
    P2LModel,
    Params,
    fit_p2l,
    map_params,
)
from arena_assets.routing.router import router_rows
from arena_assets.routing.schema import (
    P2L_BOARDS_SCHEMA,
    P2L_MODEL_SCHEMA,
    PROMPT_EMBEDDINGS_SCHEMA,
    ROUTER_EVAL_SCHEMA,
    ROUTER_SCHEMA,
)
from arena_assets.routing.tiers import compute_tiers
from arena_assets.routing.training_data import BATTLE_INPUT as TRAINING_INPUT
from arena_assets.routing.training_data import build_training_rows, layouts
from arena_assets.storage import Lake

P2L_MODEL = "p2l_model"
P2L_BOARDS, ROUTER, ROUTER_EVAL = "p2l_boards", "router", "router_eval"
ROUTER_TRAINING_DATA = "router_training_data"
ELO = RatingScale()  # scale 400, base 10, mean 1000: the boards' scale


def read_blob(lake: Lake, asset: str, name: str) -> bytes:
    with lake.fs.open(_blob_path(lake, asset, name), "rb") as fh:
        return fh.read()


def month_prompts(
    lake: Lake, months: list[str], keys: list[str] | None = None
) -> tuple[pl.DataFrame, np.ndarray]:
    """Prompt rows (features' inputs) and embeddings of ``months``; ``keys`` limits them."""
    emb_parts, lab_parts = [], []
    wanted = (
        pl.DataFrame({"dedup_key": keys}, schema={"dedup_key": pl.String})
        if keys is not None
        else None
    )

    def only_wanted(frame: pl.DataFrame) -> pl.DataFrame:  # a semi-join: fast for ~1M keys
        return frame if wanted is None else frame.join(wanted, on="dedup_key", how="semi")

    for m in months:
        if lake.exists(PROMPT_EMBEDDINGS, m):
            emb_parts.append(only_wanted(lake.read(PROMPT_EMBEDDINGS, m)))
        if lake.exists("topic_labels", m):
            labels = lake.read("topic_labels", m)
            lab_parts.append(
                only_wanted(
                    labels.select(
                        [
                            c
                            for c in labels.columns
                            if c in ("conv_id", "dedup_key", *LABEL_FEATURES, *BOARD_LABELS)
                        ]
                    )
                )
            )
    if not emb_parts:
        return pl.DataFrame(
            schema={k: v for k, v in PROMPT_EMBEDDINGS_SCHEMA.items() if k != "embedding"}
        ), np.zeros((0, 1), np.float32)
    embeddings = pl.concat(emb_parts, how="vertical_relaxed").reverse()  # latest month first
    labels = labels_per_prompt(pl.concat(lab_parts, how="diagonal_relaxed")) if lab_parts else None
    return prompt_frame(embeddings, labels)


# -- p2l_model -----------------------------------------------------------------------------
@dataclass(frozen=True)
class RoutingConfig:
    p2l: P2LConfig = field(default_factory=P2LConfig)
    replay_months: int = 6  # earlier months replayed into each monthly fit
    max_battles: int = 1_000_000  # training battles per fit (the replay is sampled to fit)
    min_battles: int = 0  # the boards' rule: fewer battles -> not on the model at all
    bootstrap_rounds: int = 100  # of the intercepts (the boards' interval, see intercept_bootstrap)
    seed: int = 0


@dataclass
class P2LMonth:
    month: str
    table: pl.DataFrame
    model: P2LModel | None  # None: nothing to fit (info["nothing_to_fit"] says why)
    fit: P2LFit | None
    url: str
    model_url: str
    info: dict


def _training_battles(lake: Lake, month: str, cfg: RoutingConfig) -> tuple[pl.DataFrame, dict]:
    months = lake.months("battles", upto=month)[-(cfg.replay_months + 1) :]
    frames = {
        m: lake.read("battles", m, columns=BATTLE_COLUMNS).filter(pl.col("keep")) for m in months
    }
    current = frames.get(month, pl.DataFrame(schema=dict.fromkeys(BATTLE_COLUMNS, pl.String)))
    earlier = [frames[m] for m in months if m != month]
    rng = np.random.default_rng(month_seed(cfg.seed, month))
    if current.height > cfg.max_battles:
        current = current[np.sort(rng.choice(current.height, cfg.max_battles, replace=False))]
    room = cfg.max_battles - current.height
    replay = pl.concat(earlier, how="vertical_relaxed") if earlier else current.clear()
    if replay.height > room:
        replay = replay[np.sort(rng.choice(replay.height, max(room, 0), replace=False))]
    battles = pl.concat([replay, current], how="vertical_relaxed")
    per_month = battles.group_by("month").len().sort("month")
    return battles, {
        "months": months,
        "battles_per_month": dict(
            zip(per_month["month"].to_list(), per_month["len"].to_list(), strict=True)
        ),
    }


def intercept_bootstrap(coded: Coded, b: np.ndarray, rounds: int, seed: int) -> np.ndarray:
    """(rounds × K) bootstrap shifts of the intercepts: the marginal board's multinomial
    bootstrap of the training cells (ties as half wins, as the boards'), centred, minus
    the point fit. The boards add them to their prompt resamples so an interval also
    carries the battles' sampling error (exactly so while W = 0); NaN -> 0 (a round that
    could not rate a model moves it by nothing)."""
    if rounds <= 0 or coded.n == 0:
        return np.zeros((0, len(coded.models)))
    half = np.where(coded.outcome == BOTHBAD, TIE, coded.outcome)
    agg = aggregate_codes(coded.models, coded.a, coded.b, half)
    point = b - b.mean()
    boot = bootstrap_betas(agg, point, rounds, seed)
    boot = boot - np.nanmean(boot, axis=1, keepdims=True)
    return np.nan_to_num(boot - point)


def load_model(lake: Lake, month: str) -> P2LModel:
    return P2LModel.from_dict(json.loads(read_blob(lake, P2L_MODEL, f"{month}.json")))


def _blob_path(lake: Lake, asset: str, name: str) -> str:
    return f"{lake.partition_path(asset, 'x').rsplit('/', 1)[0]}/_files/{name}"


def has_model(lake: Lake, month: str) -> bool:
    """A month with nothing to fit (no battles, no embeddings) has an empty table and no model."""
    return lake.fs.exists(_blob_path(lake, P2L_MODEL, f"{month}.json"))


def _previous_model(lake: Lake, month: str) -> P2LModel | None:
    earlier = [m for m in lake.months(P2L_MODEL) if m < month and has_model(lake, m)]
    return load_model(lake, earlier[-1]) if earlier else None


def _nothing_to_fit(lake: Lake, month: str, reason: str, info: dict) -> P2LMonth:
    """An empty table and no model file (a stale one from an earlier run is removed, so the
    boards and the router of the month say "no model" instead of reading it)."""
    stale = _blob_path(lake, P2L_MODEL, f"{month}.json")
    if lake.fs.exists(stale):
        lake.fs.rm(stale)
    table = pl.DataFrame(schema=P2L_MODEL_SCHEMA)
    return P2LMonth(
        month,
        table,
        None,
        None,
        lake.write(P2L_MODEL, month, table),
        "",
        {**info, "nothing_to_fit": reason},
    )


def p2l_model_month(lake: Lake, month: str, cfg: RoutingConfig = RoutingConfig()) -> P2LMonth:
    """Fit the month's P2L model on its battles plus replayed earlier months (warm-started
    from the previous month's model: known models keep their coefficients, new ones start
    at W = 0) and write its table and JSON."""
    battles, info = _training_battles(lake, month, cfg)
    keys = battles.get_column("dedup_key").drop_nulls().unique().to_list()
    prompts, emb = month_prompts(lake, info["months"], keys)
    if prompts.is_empty():
        return _nothing_to_fit(
            lake,
            month,
            f"no prompt_embeddings for the {battles.height} training battles' prompts",
            info,
        )
    try:
        return _fit_month(lake, month, cfg, battles, info, prompts, emb)
    except P2LInputError as exc:  # e.g. no battle between two rankable models
        return _nothing_to_fit(lake, month, str(exc), info)


def _fit_month(
    lake: Lake,
    month: str,
    cfg: RoutingConfig,
    battles: pl.DataFrame,
    info: dict,
    prompts: pl.DataFrame,
    emb: np.ndarray,
) -> P2LMonth:
    embedder = prompts.get_column("embedder")[0]
    prev = _previous_model(lake, month)
    if prev is not None and prev.features.embedder == embedder:
        space = prev.features  # the same feature space month after month (warm start)
    else:
        space = FeatureSpace.fit(prompts, emb, embedder, cfg.p2l.features)
        prev = None
    X = space.transform(prompts, emb)
    enc = encode(
        battles,
        prompts,
        X,
        loss=cfg.p2l.loss,
        tie_mode=cfg.p2l.tie_mode,
        min_battles=cfg.min_battles,
    )
    init = map_params(prev, enc.coded.models, space.dim, cfg.p2l) if prev is not None else None
    fit = fit_p2l(enc.coded, cfg.p2l, init)
    meta = {
        "month": month,
        **info,
        "left_out": enc.left_out,
        "dropped": enc.dropped,
        "intercept_boot": intercept_bootstrap(
            enc.coded, fit.marginal.b, cfg.bootstrap_rounds, month_seed(cfg.seed, month)
        ).tolist(),
        "path": fit.path,
        "fit": fit.info,
        "cut_tstamp": fit.cut_tstamp,
        "warm_start": init is not None,
        "marginal": fit.marginal.to_dict(),
        "holdout_marginal": fit.holdout_marginal.to_dict(),
    }
    model = P2LModel(enc.coded.models, space, fit.params, cfg.p2l, fit.alpha, fit.holdout, meta)
    month_rows = (
        prompts.get_column("dedup_key")
        .is_in(
            lake.read(PROMPT_EMBEDDINGS, month, columns=["dedup_key"])["dedup_key"].to_list()
            if lake.exists(PROMPT_EMBEDDINGS, month)
            else []
        )
        .to_numpy()
    )
    spread = (
        model.betas(X[month_rows]).std(axis=0) * ELO.factor
        if month_rows.any()
        else np.zeros(len(model.models))
    )
    k_battles = enc.coded.model_battles()
    table = pl.DataFrame(
        {
            "month": month,
            "model": model.models,
            "battles": k_battles.astype(np.int64),
            "rating": ELO.ratings(fit.params.b - fit.params.b.mean(), model.models),
            "marginal_rating": ELO.ratings(fit.marginal.b - fit.marginal.b.mean(), model.models),
            "prompt_sd": spread,
            "has_w": (np.abs(fit.params.U).sum(axis=1) > 0),
        }
    ).cast(P2L_MODEL_SCHEMA)  # type: ignore[arg-type]
    model_url = lake.write_blob(P2L_MODEL, f"{month}.json", json.dumps(model.to_dict()).encode())
    url = lake.write(P2L_MODEL, month, table)
    return P2LMonth(month, table, model, fit, url, model_url, meta)


def month_features(lake: Lake, month: str, model: P2LModel) -> tuple[pl.DataFrame, np.ndarray]:
    """The month's prompts and their x in the model's feature space."""
    prompts, emb = month_prompts(lake, [month])
    if prompts.height and prompts.get_column("embedder")[0] != model.features.embedder:
        raise ValueError(
            f"{month}: prompt_embeddings come from {prompts['embedder'][0]!r}, the "
            f"P2L model reads {model.features.embedder!r}: refit p2l_model"
        )
    return prompts, model.features.transform(prompts, emb)


def params_named(model: P2LModel, key: str) -> Params:
    """A parameter set stored in the model's meta (``marginal``, ``holdout_marginal``)."""
    return Params.from_dict(
        model.meta[key], len(model.models), model.features.dim, model.config.rank
    )


# -- p2l_boards ----------------------------------------------------------------------------
@dataclass
class BoardsMonth:
    month: str
    table: pl.DataFrame
    url: str


def p2l_boards_month(lake: Lake, month: str, opts: BoardOptions = BoardOptions()) -> BoardsMonth:
    if not has_model(lake, month):  # nothing was fitted this month: no boards
        empty = pl.DataFrame(schema=P2L_BOARDS_SCHEMA)
        return BoardsMonth(month, empty, lake.write(P2L_BOARDS, month, empty))
    model = load_model(lake, month)
    prompts, X = month_features(lake, month, model)
    clusters = lake.read("topic_clusters", month) if lake.exists("topic_clusters", month) else None
    boards = p2l_boards(
        month, model, prompts, X, clusters, replace(opts, seed=month_seed(opts.seed, month))
    )
    return BoardsMonth(month, boards, lake.write(P2L_BOARDS, month, boards))


# -- router --------------------------------------------------------------------------------
@dataclass
class RouterMonth:
    month: str
    table: pl.DataFrame
    url: str
    opponent_mix: dict[str, float]


def opponent_mix(lake: Lake, month: str, models: list[str]) -> np.ndarray:
    """Each model's share of the month's kept battle appearances (the arena's own mix, as
    P2L's router weighs opponents by the arena's sampling weights)."""
    b = lake.read("battles", month, columns=["model_a", "model_b", "keep"]).filter(pl.col("keep"))
    seen = pl.concat([b["model_a"], b["model_b"]]).value_counts()
    count = dict(zip(seen[seen.columns[0]].to_list(), seen["count"].to_list(), strict=True))
    q = np.array([count.get(m, 0) for m in models], float)
    return q / q.sum() if q.sum() else np.full(len(models), 1.0 / len(models))


def router_month(
    lake: Lake,
    month: str,
    prices: dict[str, float],
    budgets: list[float] | None,
    *,
    max_prompts: int = 2000,
    seed: int = 0,
) -> RouterMonth:
    if not has_model(lake, month):
        empty = pl.DataFrame(schema=ROUTER_SCHEMA)
        return RouterMonth(month, empty, lake.write(ROUTER, month, empty), {})
    model = load_model(lake, month)
    prompts, X = month_features(lake, month, model)
    if prompts.height > max_prompts:
        rng = np.random.default_rng(month_seed(seed, month))
        X = X[np.sort(rng.choice(prompts.height, max_prompts, replace=False))]
    q = opponent_mix(lake, month, model.models)
    rows = router_rows(model.models, model.betas(X), q, prices, budgets) if len(X) else []
    table = (
        pl.DataFrame(rows, schema={k: v for k, v in ROUTER_SCHEMA.items() if k != "month"})
        .with_columns(pl.lit(month).alias("month"))
        .select(list(ROUTER_SCHEMA))
    )
    return RouterMonth(
        month,
        table,
        lake.write(ROUTER, month, table),
        dict(zip(model.models, q.round(6).tolist(), strict=True)),
    )


# -- router_eval ---------------------------------------------------------------------------
@dataclass
class RouterEvalMonth:
    month: str
    table: pl.DataFrame
    prediction: dict  # log loss / ECE of the holdout P2L vs the holdout marginal board
    tiers: dict[str, int]
    url: str


def router_eval_month(lake: Lake, month: str, seed: int = 0) -> RouterEvalMonth:
    """The model fitted before the month's validation cut, on the battles after it."""
    if not has_model(lake, month):
        empty = pl.DataFrame(schema=ROUTER_EVAL_SCHEMA)
        return RouterEvalMonth(month, empty, {}, {}, lake.write(ROUTER_EVAL, month, empty))
    model = load_model(lake, month)
    battles = lake.read("battles", month, columns=BATTLE_COLUMNS)
    prompts, X = month_features(lake, month, model)
    enc = encode(
        battles,
        prompts,
        X,
        loss=model.config.loss,
        tie_mode=model.config.tie_mode,
        models=model.models,
    )
    coded = enc.coded
    after = np.flatnonzero(coded.tstamp >= model.meta["cut_tstamp"])
    val = Coded(
        coded.models,
        coded.a[after],
        coded.b[after],
        coded.outcome[after],
        coded.prompt[after],
        coded.tstamp[after],
        coded.X,
    )
    holdout, marginal = model.holdout or model.params, params_named(model, "holdout_marginal")
    prediction = prediction_figures(val, holdout, marginal, model.config)
    chars = prompts.get_column("prompt_chars").fill_null(0).to_numpy()
    scores, tiers = routing_rows(val, holdout, marginal, chars, seed=seed)
    table = pl.DataFrame(
        [
            {
                "month": month,
                "evaluation": "arena_holdout",
                "router": s.router,
                "apgr": s.apgr,
                "cpt50": s.cpt50,
                "cpt80": s.cpt80,
                "battles": s.prompts,
                "strong_quality": s.strong_quality,
                "weak_quality": s.weak_quality,
            }
            for s in scores
        ],
        schema=ROUTER_EVAL_SCHEMA,
    )
    return RouterEvalMonth(month, table, prediction, tiers, lake.write(ROUTER_EVAL, month, table))


# -- router_training_data ------------------------------------------------------------------
@dataclass
class TrainingDataMonth:
    month: str
    table: pl.DataFrame
    counts: dict
    url: str
    files: dict[str, str]


def month_tiers(lake: Lake, month: str) -> dict[str, int]:
    """RouteLLM tiers of the month's overall arena board (empty when it is not there)."""
    if not lake.exists("arena_leaderboard", month):
        return {}
    board = lake.read("arena_leaderboard", month).filter(pl.col("board") == "overall")
    return compute_tiers(board["model"].to_list(), board["rating"].to_numpy())


def router_training_data_month(lake: Lake, month: str) -> TrainingDataMonth:
    battles = lake.read("battles", month, columns=TRAINING_INPUT)
    conv = lake.read("conversations", month, columns=["conv_id", "messages"])
    labels = (
        labels_per_prompt(lake.read("topic_labels", month))
        if lake.exists("topic_labels", month)
        else None
    )
    rows, counts = build_training_rows(month, battles, conv, labels, month_tiers(lake, month))
    files = {
        name: lake.write_blob(ROUTER_TRAINING_DATA, f"{month}-{name}", data)
        for name, data in layouts(rows).items()
    }
    return TrainingDataMonth(
        month, rows, counts, lake.write(ROUTER_TRAINING_DATA, month, rows), files
    )
