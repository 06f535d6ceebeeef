"""Stage 7, routing: prompt embeddings, the monthly prompt-to-leaderboard (P2L) model, the
boards it gives for prompt sets, a router and its evaluation, and router training data.

``p2l_model`` is refitted every month on the month's battles plus replayed earlier months,
warm-started from the previous month's model (its self-dependency orders a backfill);
everything after it reads the month's model file. Assets read, call the month step in
``arena_assets.pipeline.routing`` and attach what a user checks in the UI.
"""

import dagster as dg
import polars as pl

from arena_assets.defs import checks
from arena_assets.defs.automation import follow_upstream
from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.leaderboards.resources import LeaderboardSettings
from arena_assets.defs.llm_plan import gate, month_settings, plan_metadata, within_budget
from arena_assets.defs.llm_resources import LLMCache, LLMTaskResource
from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage
from arena_assets.defs.routing.resources import RoutingSettings
from arena_assets.llm import BatchReport, LLMEndpointError
from arena_assets.pipeline import LLM_MONTHS_PER_RUN
from arena_assets.pipeline import routing as step_lib
from arena_assets.pipeline.embeddings import embedding_inputs, prompt_embeddings_month
from arena_assets.pipeline.plan import plan_prompt_embeddings, plan_run
from arena_assets.report import markdown_table
from arena_assets.routing import schema as tables

LLM_BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=LLM_MONTHS_PER_RUN)
SINGLE = dg.BackfillPolicy.single_run()
PREVIOUS = dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)
# the replay window: the month and the earlier ones (the setting bounds how many are read)
WINDOW = dg.TimeWindowPartitionMapping(
    start_offset=-1200, end_offset=0, allow_nonexistent_upstream_partitions=True
)


def _embedder(
    embedder: LLMTaskResource,
    llm_cache: LLMCache,
    storage: ArenaStorage,
    reports: list[BatchReport],
    cache=None,
):
    """The clusters' embedder: the ARENA_EMBED_* endpoint (cached in the same namespace as
    topic_clusters, so their calls are reused) or, with no base URL, offline wordllama."""
    if embedder.configured():
        from arena_assets.llm import embed_texts

        task = embedder.task()
        cache = llm_cache.embeddings(storage) if cache is None else cache

        def embed(texts):
            vectors, report = embed_texts(task, texts, cache)
            reports.append(report)
            return vectors

        return embed, f"{task.model} at {embedder.base_url.strip()}"
    from arena_assets.labels.clusters import OfflineEmbedder

    model = OfflineEmbedder()
    return model, model.name


@dg.asset(
    partitions_def=monthly_partitions,
    deps=["conversations"],
    group_name="routing",
    kinds={"openai", "parquet", "numpy"},
    pool="llm",
    backfill_policy=LLM_BACKFILL,
    automation_condition=follow_upstream,
    check_specs=checks.table_specs("prompt_embeddings", "prompt embedding"),
)
@one_line_failures
def prompt_embeddings(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    embedder: LLMTaskResource,
    llm_cache: LLMCache,
):
    """One row per distinct first prompt of the month with its embedding vector, from the
    embedder the topic clusters use (the ARENA_EMBED_* endpoint, cached like every LLM
    call, or the offline wordllama model when ARENA_EMBED_BASE_URL is empty), plus its
    language, length and conversation count: what the P2L model reads about a prompt."""
    reports: list[BatchReport] = []
    lake = storage.lake()
    months = list(months_in_window(context))
    settings, cache = (
        month_settings(storage, llm_cache, embedder=embedder),
        llm_cache.embeddings(storage),
    )
    # a one-month run reads its prompts once, for the plan and the run (~1.5 s at 500,000);
    # a range re-reads them rather than hold every month's (~0.7 GB a month at 500,000)
    inputs = (
        {months[0]: embedding_inputs(lake, months[0])}
        if len(months) == 1 and lake.exists("conversations", months[0])
        else {}
    )
    plans = plan_run(
        months, lambda m: plan_prompt_embeddings(lake, m, settings, inputs.get(m), cache)
    )
    gate(context, list(plans.values()), embedder.budget())  # the bill first, before any call
    embed, name = _embedder(embedder, llm_cache, storage, reports, cache)
    results: list[dg.AssetCheckResult] = []
    for month in months_in_window(context):
        try:
            with within_budget(plans[month], embedder.budget()):
                step = prompt_embeddings_month(
                    lake, month, embed, name, inputs=inputs.pop(month, None)
                )
        except LLMEndpointError as exc:
            raise dg.Failure(
                description=f"{exc} (nothing was written; the previous partition is intact)"
            ) from exc
        context.add_asset_metadata(
            {
                **table_metadata(step.frame, step.url),
                "month": month,
                "embedder": name,
                "dim": int(step.frame["dim"][0]) if step.frame.height else 0,
                "embedding_calls": sum(r.calls for r in reports),
                "embedding_cache_hits": sum(r.cache_hits for r in reports),
                "calls": dg.MetadataValue.json(
                    {f"embeddings {i + 1}": r.as_metadata() for i, r in enumerate(reports)}
                ),
                **plan_metadata(plans[month]),
            },
            partition_key=month,
        )
        reports.clear()
        if not results or all(r.passed for r in results):
            results = _shape(
                "prompt_embeddings",
                step.frame,
                tables.PROMPT_EMBEDDINGS_SCHEMA,
                ["month", "dedup_key"],
            )
    storage.publish("prompt_embeddings", context.log)
    yield dg.MaterializeResult()
    yield from results


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="routing",
    kinds={"numpy", "scipy", "parquet"},
    deps=[
        dg.AssetDep("battles", partition_mapping=WINDOW),
        dg.AssetDep("prompt_embeddings", partition_mapping=WINDOW),
        dg.AssetDep("topic_labels", partition_mapping=WINDOW),
        # warm start from the previous month's model: backfills run months in order
        dg.AssetDep("p2l_model", partition_mapping=PREVIOUS),
    ],
    automation_condition=follow_upstream,
    check_specs=[
        *checks.table_specs("p2l_model", "model"),
        dg.AssetCheckSpec(
            "chosen_ridge_not_worse_than_marginal",
            asset="p2l_model",
            blocking=True,
            description="On the held-out latest battles the chosen "
            "model's log loss is at most the marginal "
            "board's (W = 0 is on the path).",
        ),
    ],
)
@one_line_failures
def p2l_model(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    routing_settings: RoutingSettings,
    leaderboard_settings: LeaderboardSettings,
):
    """The month's prompt-to-leaderboard model: every model's Bradley-Terry coefficient as
    a function of the prompt, β(x) = b + W x (x: embedding, topic labels, language,
    length; W low-rank, ridge chosen on the latest held-out battles; W = 0 is the marginal
    board and is kept when nothing beats it). One row per model (its prompt-average
    rating, the marginal board's rating and how much its rating moves across the month's
    prompts); the whole model is the JSON file in `model_path`."""
    s = routing_settings
    cfg = step_lib.RoutingConfig(
        p2l=s.p2l_config(),
        replay_months=s.p2l_replay_months,
        max_battles=s.p2l_max_battles,
        min_battles=leaderboard_settings.min_battles,
        bootstrap_rounds=s.p2l_bootstrap_rounds,
        seed=s.seed,
    )
    (month,) = months_in_window(context)
    step = step_lib.p2l_model_month(storage.lake(), month, cfg)
    if step.model is None:  # an empty or tiny month: an empty table, no model, and why
        context.log.warning(f"{month}: no P2L model: {step.info['nothing_to_fit']}")
        storage.publish("p2l_model", context.log)
        yield dg.MaterializeResult(
            metadata={
                **table_metadata(step.table, step.url),
                "month": month,
                "nothing_to_fit": step.info["nothing_to_fit"],
                "training_battles": dg.MetadataValue.json(step.info["battles_per_month"]),
            }
        )
        yield from _shape("p2l_model", step.table, tables.P2L_MODEL_SCHEMA, ["month", "model"])
        yield dg.AssetCheckResult(
            check_name="chosen_ridge_not_worse_than_marginal",
            passed=True,
            metadata={"note": "no model this month"},
        )
        return
    path = pl.DataFrame(step.fit.path).select(
        pl.col("alpha").cast(pl.String).fill_null("W = 0"),
        pl.col("val_nll").round(5),
        pl.col("se_vs_marginal").round(5),
        "iterations",
    )
    shown = step.table.sort("rating", descending=True).with_columns(
        pl.col("rating", "marginal_rating", "prompt_sd").round(1)
    )
    storage.publish("p2l_model", context.log)
    chosen = min(
        (p for p in step.fit.path if p["alpha"] == step.fit.alpha), key=lambda p: p["val_nll"]
    )
    base = step.fit.path[0]["val_nll"]
    yield dg.MaterializeResult(
        metadata={
            **table_metadata(step.table, step.url),
            "month": month,
            "model_path": dg.MetadataValue.path(step.model_url),
            "chosen_ridge": "W = 0 (marginal board)" if step.fit.alpha is None else step.fit.alpha,
            "training_battles": dg.MetadataValue.json(step.info["battles_per_month"]),
            "validation_battles": step.fit.info["validation_battles"],
            "warm_start": step.info["warm_start"],
            "battles_not_used": dg.MetadataValue.json(step.info["dropped"]),
            "models_left_out": dg.MetadataValue.json(step.info["left_out"]),
            "ridge_path": dg.MetadataValue.md(markdown_table(path, 20)),
            "models": dg.MetadataValue.md(markdown_table(shown.drop("month"), 30)),
        }
    )
    yield from _shape("p2l_model", step.table, tables.P2L_MODEL_SCHEMA, ["month", "model"])
    yield dg.AssetCheckResult(
        check_name="chosen_ridge_not_worse_than_marginal",
        passed=not chosen["val_nll"] > base + 1e-12,  # NaN (no held-out battle) passes
        metadata={"val_nll_chosen": chosen["val_nll"], "val_nll_marginal": base},
    )


def _monthly(context, storage: ArenaStorage, asset: str, fn, meta_fn, check_fn):
    """Run the month step for every month of the run (each month's own metadata), then
    yield the result and the checks of the first month that failed one (else the last)."""
    results: list[dg.AssetCheckResult] = []
    for month in months_in_window(context):
        step = fn(month)
        context.add_asset_metadata(
            {**table_metadata(step.table, step.url), "month": month, **meta_fn(step)},
            partition_key=month,
        )
        if not results or all(r.passed for r in results):
            results = check_fn(step)
    storage.publish(asset, context.log)
    yield dg.MaterializeResult()
    yield from results


def _shape(
    asset: str, frame: pl.DataFrame, schema: dict, keys: list[str]
) -> list[dg.AssetCheckResult]:
    return checks.table_results(asset, frame, schema, keys)


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="routing",
    kinds={"numpy", "parquet"},
    deps=["p2l_model", "prompt_embeddings", "topic_labels", "topic_clusters"],
    backfill_policy=SINGLE,
    automation_condition=follow_upstream,
    check_specs=[
        *checks.table_specs("p2l_boards", "board"),
        dg.AssetCheckSpec(
            "intervals_contain_ratings",
            asset="p2l_boards",
            description="lower <= rating <= upper, all finite.",
        ),
    ],
)
@one_line_failures
def p2l_boards(
    context: dg.AssetExecutionContext, storage: ArenaStorage, routing_settings: RoutingSettings
):
    """Leaderboards for prompt sets from the month's P2L model: all the month's prompts,
    each prompt-level category (hard_6, coding, math, creative_writing, if, long_user,
    vision…) and each topic cluster. A set's ratings are the Bradley-Terry ratings that
    best fit its prompts' mean pairwise win probabilities (P2L's aggregation), with
    percentile intervals from resampling the set's prompts. Any other set:
    `arena-assets p2l-board --prompts FILE`."""
    lake, opts = storage.lake(), routing_settings.board_options()

    def meta(step):
        sets = step.table.group_by("prompt_set").agg(pl.col("prompts").first()).sort("prompt_set")
        top = step.table.filter(pl.col("rank") == 1).select(
            "prompt_set", "set_name", "model", pl.col("rating").round(1), "prompts"
        )
        return {
            "prompt_sets": dg.MetadataValue.json(dict(sets.iter_rows())),
            "top_model_per_set": dg.MetadataValue.md(markdown_table(top, 40)),
        }

    def check(step):
        t = step.table
        bad = t.filter(
            ~(pl.col("lower") <= pl.col("rating"))
            | ~(pl.col("rating") <= pl.col("upper"))
            | ~pl.col("rating").is_finite()
        ).height
        return [
            *_shape("p2l_boards", t, tables.P2L_BOARDS_SCHEMA, ["month", "prompt_set", "model"]),
            dg.AssetCheckResult(
                asset_key="p2l_boards",
                check_name="intervals_contain_ratings",
                passed=bad == 0,
                metadata={"bad_rows": bad},
            ),
        ]

    yield from _monthly(
        context,
        storage,
        "p2l_boards",
        lambda m: step_lib.p2l_boards_month(lake, m, opts),
        meta,
        check,
    )


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="routing",
    kinds={"numpy", "parquet"},
    deps=["p2l_model", "prompt_embeddings", "topic_labels", "battles"],
    backfill_policy=SINGLE,
    automation_condition=follow_upstream,
    check_specs=[
        *checks.table_specs("router", "routing row"),
        dg.AssetCheckSpec(
            "within_budget",
            asset="router",
            blocking=True,
            description="Every budgeted policy's expected price per "
            "prompt is within its budget; shares sum to 1.",
        ),
    ],
)
@one_line_failures
def router(
    context: dg.AssetExecutionContext, storage: ArenaStorage, routing_settings: RoutingSettings
):
    """How the month's P2L router routes the month's prompts: the argmax policy (each
    prompt to its top model) and, with ARENA_ROUTER_PRICES, the strict and the anchor's LP
    policy per budget (the LP maximises the expected win rate against the arena's mix of
    opponents under the budget). Per policy and model: share of prompts, expected win rate
    and expected price per prompt."""
    lake = storage.lake()
    try:
        prices, budgets = routing_settings.prices(), routing_settings.budgets()
    except ValueError as exc:  # a setting a person typed: one line saying which and why
        raise dg.Failure(description=f"{exc} (nothing was written)") from None

    def meta(step):
        return {
            "priced_models": len(prices),
            "opponent_mix": dg.MetadataValue.json(step.opponent_mix),
            "policies": dg.MetadataValue.md(
                markdown_table(
                    step.table.filter(pl.col("share") > 0).select(
                        "policy",
                        "budget",
                        "model",
                        pl.col("share").round(3),
                        pl.col("expected_win_rate").round(3),
                        pl.col("expected_cost").round(4),
                    ),
                    40,
                )
            ),
        }

    def check(step):
        t = step.table
        over = t.filter(
            pl.col("budget").is_not_null() & (pl.col("expected_cost") > pl.col("budget") + 1e-9)
        ).height
        sums = t.group_by("policy", "budget").agg(pl.col("share").sum())
        off = sums.filter((pl.col("share") - 1).abs() > 1e-6).height
        # argmax has no budget (null): the key reads it as -1
        keyed = t.with_columns(pl.col("budget").fill_null(-1.0))
        return [
            *_shape("router", keyed, tables.ROUTER_SCHEMA, ["month", "policy", "budget", "model"]),
            dg.AssetCheckResult(
                asset_key="router",
                check_name="within_budget",
                passed=over == 0 and off == 0,
                metadata={"over_budget_rows": over, "shares_not_summing_to_1": off},
            ),
        ]

    yield from _monthly(
        context,
        storage,
        "router",
        lambda m: step_lib.router_month(lake, m, prices, budgets, seed=routing_settings.seed),
        meta,
        check,
    )


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="routing",
    kinds={"numpy", "parquet"},
    deps=["p2l_model", "prompt_embeddings", "topic_labels", "battles"],
    backfill_policy=SINGLE,
    automation_condition=follow_upstream,
    check_specs=[
        dg.AssetCheckSpec(
            "p2l_no_worse_than_marginal",
            asset="router_eval",
            description="WARN when the held-out log loss of P2L is "
            "worse than the marginal board's by more than "
            "two standard errors.",
        )
    ],
)
@one_line_failures
def router_eval(
    context: dg.AssetExecutionContext, storage: ArenaStorage, routing_settings: RoutingSettings
):
    """The P2L model fitted before the month's held-out latest battles, judged on them:
    log loss and calibration (ECE) against the marginal board, and as a router between the
    strong and the weak tiers (RouteLLM's APGR and CPT(50 %), CPT(80 %)) beside random
    routing and "the longer prompt goes to the strong model"."""
    lake = storage.lake()

    def meta(step):
        return {
            "prediction": dg.MetadataValue.json(step.prediction),
            "tiers": dg.MetadataValue.json(step.tiers),
            "routers": dg.MetadataValue.md(
                markdown_table(
                    step.table.drop("month").with_columns(
                        pl.col("apgr", "cpt50", "cpt80").round(3)
                    ),
                    10,
                )
            ),
        }

    def check(step):
        p = step.prediction
        worse = p.get("battles", 0) > 1 and p["gain"] < -2 * p["gain_se"]
        return [
            dg.AssetCheckResult(
                asset_key="router_eval",
                check_name="p2l_no_worse_than_marginal",
                severity=checks.WARN,
                passed=not worse,
                metadata={k: v for k, v in p.items() if isinstance(v, int | float)},
            )
        ]

    yield from _monthly(
        context,
        storage,
        "router_eval",
        lambda m: step_lib.router_eval_month(lake, m, routing_settings.seed),
        meta,
        check,
    )


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="routing",
    kinds={"parquet", "polars"},
    deps=["battles", "conversations", "topic_labels", "arena_leaderboard"],
    backfill_policy=SINGLE,
    automation_condition=follow_upstream,
    check_specs=[
        *checks.table_specs("router_training_data", "battle"),
        dg.AssetCheckSpec(
            "battles_conserved",
            asset="router_training_data",
            blocking=True,
            description="rows + battles without both conversations = the month's kept battles.",
        ),
        dg.AssetCheckSpec(
            "no_prompt_in_two_splits",
            asset="router_training_data",
            blocking=True,
            description="Every prompt id (near-duplicate group) lies in one split only.",
        ),
    ],
)
@one_line_failures
def router_training_data(context: dg.AssetExecutionContext, storage: ArenaStorage):
    """The month's kept battles as router / P2L training rows: a prompt id shared by
    near-duplicates (never in two splits), time splits (train / val / test), redacted turns,
    language, prompt labels, the 4-way winner, style features and RouteLLM tiers; also
    written as FastChat clean_battle JSON lines and the 55k CSV layout, one file per split
    (paths in `files`)."""
    lake = storage.lake()

    def meta(step):
        return {
            "counts": dg.MetadataValue.json(step.counts),
            "files": dg.MetadataValue.json(step.files),
        }

    def check(step):
        t, c = step.table, step.counts
        spread = (
            t.group_by("prompt_id")
            .agg(pl.col("split").n_unique())
            .filter(pl.col("split") > 1)
            .height
        )
        return [
            *_shape(
                "router_training_data", t, tables.ROUTER_TRAINING_SCHEMA, ["month", "battle_id"]
            ),
            dg.AssetCheckResult(
                asset_key="router_training_data",
                check_name="battles_conserved",
                passed=t.height + c["missing_conversation"] == c["kept"],
                metadata={"rows": t.height, **{k: v for k, v in c.items() if isinstance(v, int)}},
            ),
            dg.AssetCheckResult(
                asset_key="router_training_data",
                check_name="no_prompt_in_two_splits",
                passed=spread == 0,
                metadata={"prompt_ids_in_two_splits": spread},
            ),
        ]

    yield from _monthly(
        context,
        storage,
        "router_training_data",
        lambda m: step_lib.router_training_data_month(lake, m),
        meta,
        check,
    )
