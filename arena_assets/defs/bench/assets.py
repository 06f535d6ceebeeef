"""Stage 6, bench: BenchBuilder prompts, candidate answers, LLM-judge judgments and the
bench leaderboard, one monthly partition each (Arena-Hard-Auto refreshed every month).

LLM assets run in the ``llm`` pool and backfill a few months per run (their calls are
cached, so a rerun or a retried run only pays for what is new).
"""

import base64

import dagster as dg
import polars as pl

from arena_assets.bench.relabel import StrongRelabel
from arena_assets.defs.bench.resources import BenchSettings
from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.llm_plan import gate, month_settings, plan_metadata, within_budget
from arena_assets.defs.llm_resources import LLMCache, LLMTaskResource
from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage, SiteSettings
from arena_assets.defs.topics.resources import TopicSettings
from arena_assets.judging.protocol import ProtocolMismatchError
from arena_assets.llm.plan import AssetPlan
from arena_assets.pipeline import LLM_MONTHS_PER_RUN
from arena_assets.pipeline.bench import (
    answer_grades_month,
    bench_leaderboard_month,
    bench_prompts_month,
    duplicate_games,
    judgments_month,
    model_answers_month,
)
from arena_assets.pipeline.plan import (
    plan_bench_prompts,
    plan_judgments,
    plan_model_answers,
    plan_run,
)
from arena_assets.report import counts_table, markdown_table, rounded

LLM_BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=LLM_MONTHS_PER_RUN)


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="bench",
    kinds={"parquet", "polars"},
    deps=[
        "topic_labels",
        "topic_clusters",
        # decontamination reads every earlier bench: backfills run months in order
        dg.AssetDep(
            "bench_prompts",
            partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1),
        ),
    ],
    backfill_policy=dg.BackfillPolicy.single_run(),
)
@one_line_failures
def bench_prompts(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    bench_settings: BenchSettings,
    llm_cache: LLMCache,
    labeler: LLMTaskResource,
    topic_settings: TopicSettings,
):
    """BenchBuilder's monthly bench, the paper's two passes: the month's labels keep prompts
    meeting at least `ARENA_BENCH_MIN_QUALITY` of the 7 hard-prompt criteria (default 5) in
    topic clusters whose mean is at least 3; with `ARENA_BENCH_RELABEL_MODEL` set, that
    strong labeler re-labels the survivors and keeps those meeting at least 6 in clusters
    whose re-scored mean is at least 6 (its calls in `relabel_calls`). Then
    `ARENA_BENCH_PER_CLUSTER` prompts per cluster (default 2; seeded), best clusters first,
    up to the bench size; a separate vision bench from image prompts. The thresholds used
    and, when the bench is short, why, are in the metadata. Decontaminated against every
    earlier month's bench (exact and MinHash near-duplicates); each bench carries a
    `bench_version`."""
    lake = storage.lake()
    relabel_task = bench_settings.relabel_task(labeler)
    plans = {m: AssetPlan("bench_prompts", m) for m in months_in_window(context)}
    if relabel_task:  # only the optional second labelling pass calls an LLM
        settings = month_settings(
            storage,
            llm_cache,
            labeler=labeler,
            bench_settings=bench_settings,
            topic_settings=topic_settings,
        )
        plans = plan_run(plans, lambda m: plan_bench_prompts(lake, m, settings))
        gate(context, list(plans.values()), labeler.budget())
    versions = {}
    for month in months_in_window(context):
        relabel = (
            StrongRelabel(
                relabel_task,
                llm_cache.root_for(storage),
                llm_cache.storage_options(storage),
                prompt_set=topic_settings.prompt_set(),
                reask_unreadable=topic_settings.reask_on(),
            )
            if relabel_task
            else None
        )
        with within_budget(plans[month], labeler.budget() if relabel_task else None):
            step = bench_prompts_month(lake, month, bench_settings.bench_options(), relabel=relabel)
        versions[month] = {k: b.version for k, b in step.benches.items()}
        meta = {
            **table_metadata(step.prompts, step.url),
            "month": month,
            "bench_versions": dg.MetadataValue.json(versions[month]),
            "selection_rule": bench_settings.bench_options().describe(relabel is not None),
            "relabel_calls": dg.MetadataValue.json(
                relabel.as_metadata() if relabel else {"model": None}
            ),
        }
        for kind, b in step.benches.items():
            meta[f"{kind}_stats"] = dg.MetadataValue.json(b.stats)
            if b.stats.get("dropped"):
                meta[f"{kind}_dropped_by_rule"] = dg.MetadataValue.md(
                    counts_table(b.stats["dropped"])
                )
        # one materialization per month, each with its own figures (a backfill range too)
        context.add_asset_metadata(meta, partition_key=month)
    storage.publish("bench_prompts", context.log)  # a catalog view, like every table
    return dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(versions)})


@dg.asset(
    partitions_def=monthly_partitions,
    deps=[bench_prompts],
    group_name="bench",
    kinds={"parquet", "openai"},
    pool="llm",
    backfill_policy=LLM_BACKFILL,
    check_specs=[
        dg.AssetCheckSpec(
            "answers_within_token_cap",
            asset="model_answers",
            description="Share of answers that used the whole token cap (cut), per model (WARN over 1 %).",
        )
    ],
)
@one_line_failures
def model_answers(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    bench_settings: BenchSettings,
    llm_cache: LLMCache,
    judge: LLMTaskResource,
):
    """Every candidate model's answer to every bench prompt (candidates from
    `ARENA_CANDIDATES`), cached, capped at the protocol's answer tokens (4,096 in Arena-Hard
    v0.1) unless a candidate's params say otherwise; reasoning (`<think>` blocks, reasoning
    fields) kept apart; answer tokens, the battles' style features and whether the answer
    used the whole cap, per answer; failed calls kept as rows."""
    lake = storage.lake()
    tasks = bench_settings.candidate_tasks(judge)
    settings = month_settings(storage, llm_cache, judge=judge, bench_settings=bench_settings)
    plans = plan_run(months_in_window(context), lambda m: plan_model_answers(lake, m, settings))
    gate(context, list(plans.values()), judge.budget())  # the bill first, before any call
    answered, worst = {}, {}
    for month in months_in_window(context):
        with within_budget(plans[month], judge.budget()):
            step = model_answers_month(
                lake,
                month,
                tasks,
                cache_root=llm_cache.root_for(storage),
                storage_options=llm_cache.storage_options(storage),
            )
        answered[month] = step.answers.height
        hits = step.cap_hits()
        worst = {m: max(worst.get(m, 0.0), v) for m, v in hits.items()}
        context.add_asset_metadata(
            {
                **table_metadata(step.answers, step.url),
                "month": month,
                "failed_answers": step.failed,
                "protocol": bench_settings.bench_protocol().name,
                "max_tokens": dg.MetadataValue.json({n: t.max_tokens for n, t in tasks}),
                "cap_hit_share": dg.MetadataValue.json(hits),
                "calls": dg.MetadataValue.json(
                    {k: r.as_metadata() for k, r in step.reports.items()}
                ),
                "avg_tokens": dg.MetadataValue.json(
                    dict(
                        step.answers.group_by("model")
                        .agg(pl.col("answer_tokens").mean())
                        .sort("model")
                        .iter_rows()
                    )
                ),
                **plan_metadata(plans[month]),
            },
            partition_key=month,
        )
    storage.publish("model_answers", context.log)  # a catalog view, like every table
    yield dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(answered)})
    limit = bench_settings.cap_hit_limit()
    yield dg.AssetCheckResult(
        check_name="answers_within_token_cap",
        passed=max(worst.values(), default=0.0) <= limit,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"cap_hit_share": dg.MetadataValue.json(worst), "limit": limit},
    )


@dg.asset(
    partitions_def=monthly_partitions,
    deps=[model_answers],
    group_name="bench",
    kinds={"parquet", "openai"},
    pool="llm",
    backfill_policy=LLM_BACKFILL,
    check_specs=[
        dg.AssetCheckSpec(
            "judge_parse_failure_rate",
            asset="judgments",
            description="Share of games whose verdict stayed unparsed (WARN over 5 %).",
        ),
        dg.AssetCheckSpec(
            "no_duplicate_games",
            asset="judgments",
            blocking=True,
            description="One row per (question, model, judge, game).",
        ),
        dg.AssetCheckSpec(
            "judgments_within_token_cap",
            asset="judgments",
            description="Share of judge replies that used the whole token cap, "
            "per judge (WARN over 1 %).",
        ),
    ],
)
@one_line_failures
def judgments(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    bench_settings: BenchSettings,
    llm_cache: LLMCache,
    judge: LLMTaskResource,
):
    """Pairwise LLM-judge games as Arena-Hard-Auto plays them (`ARENA_BENCH_PROTOCOL`:
    arena-hard-v0.1 or arena-hard-v2 send the anchor's own judge text, read from the
    checkout at `ARENA_ARENA_HARD_DIR`; arena-assets-pairwise and arena-assets-pairwise-v2
    the project's own wording under v0.1's or v2's rules; each row records the texts' hash,
    the metadata their source): two per prompt and candidate with the positions
    swapped against `ARENA_BENCH_BASELINE` (v2: one per question category), for each judge
    of `ARENA_BENCH_JUDGES`, capped at the protocol's judge tokens; the protocol's verdict
    rule, and in v0.1 a reply without a label continued once in the same conversation; what
    stays unparsed kept and counted, failed calls recorded.
    With `ARENA_BENCH_SINGLE_GRADES=true` every judge also grades each answer alone,
    MT-Bench style (`Rating: [[x]]`, -1 unparsed), into the `answer_grades` table."""
    lake = storage.lake()
    judges = bench_settings.judge_tasks(judge)
    baseline = bench_settings.baselines()
    protocol = bench_settings.bench_protocol()
    prompts = bench_settings.judge_prompts()
    settings = month_settings(storage, llm_cache, judge=judge, bench_settings=bench_settings)
    plans = plan_run(months_in_window(context), lambda m: plan_judgments(lake, m, settings))
    gate(context, list(plans.values()), judge.budget())  # the bill first, before any call
    played_by_month, dups, unparsed, games, worst = {}, 0, 0, 0, {}
    cache_root, options = llm_cache.root_for(storage), llm_cache.storage_options(storage)
    for month in months_in_window(context):
        with within_budget(plans[month], judge.budget()):  # the month's grades too, below
            step = judgments_month(
                lake,
                month,
                judges,
                baseline,
                cache_root=cache_root,
                storage_options=options,
                protocol=protocol,
                prompts=prompts,
            )
            graded = (
                answer_grades_month(
                    lake, month, judges, cache_root=cache_root, storage_options=options
                )
                if bench_settings.grades_on()
                else None
            )
        hits = step.cap_hits()
        worst = {j: max(worst.get(j, 0.0), v) for j, v in hits.items()}
        dups += duplicate_games(step.judgments)
        played = step.judgments.filter(pl.col("status") != "no_answer")
        games += played.height
        unparsed += int((~played["parsed"]).sum())
        played_by_month[month] = played.height
        meta = {
            **table_metadata(step.judgments, step.url),
            "month": month,
            "statuses": dg.MetadataValue.json(
                dict(step.judgments.group_by("status").len().iter_rows())
            ),
            "bias_report": dg.MetadataValue.json(rounded(step.bias)),
            "protocol": protocol.name,
            # the judge's texts: where they came from and their hash (each row has the hash)
            "judge_prompts": dg.MetadataValue.json(prompts.describe()),
            "baselines": dg.MetadataValue.json(baseline),
            "max_tokens": dg.MetadataValue.json({n: t.max_tokens for n, t in judges}),
            "cap_hit_share": dg.MetadataValue.json(hits),
            "games_by_attempts": dg.MetadataValue.json(step.attempts()),
            "calls": dg.MetadataValue.json({k: r.as_metadata() for k, r in step.reports.items()}),
            **plan_metadata(plans[month]),
        }
        if graded is not None:
            meta |= {
                "single_grades": dg.MetadataValue.md(_grades_table(graded.summary)),
                "single_grade_statuses": dg.MetadataValue.json(
                    dict(graded.grades.group_by("status").len().sort("status").iter_rows())
                ),
                "single_grade_calls": dg.MetadataValue.json(
                    {k: r.as_metadata() for k, r in graded.reports.items()}
                ),
                "answer_grades_path": dg.MetadataValue.path(graded.url),
            }
        context.add_asset_metadata(meta, partition_key=month)
    storage.publish("judgments", context.log)  # a catalog view, like every table
    if bench_settings.grades_on():
        storage.publish("answer_grades", context.log)
    yield dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(played_by_month)})
    rate = unparsed / games if games else 0.0
    yield dg.AssetCheckResult(
        check_name="judge_parse_failure_rate",
        passed=rate <= 0.05,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"rate": rate, "games": games},
    )
    yield dg.AssetCheckResult(
        check_name="no_duplicate_games", passed=dups == 0, metadata={"duplicates": dups}
    )
    limit = bench_settings.cap_hit_limit()
    yield dg.AssetCheckResult(
        check_name="judgments_within_token_cap",
        passed=max(worst.values(), default=0.0) <= limit,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"cap_hit_share": dg.MetadataValue.json(worst), "limit": limit},
    )


@dg.asset(
    partitions_def=monthly_partitions,
    deps=[judgments, "arena_leaderboard"],
    group_name="bench",
    kinds={"parquet", "numpy"},
    backfill_policy=dg.BackfillPolicy.single_run(),
    check_specs=[
        dg.AssetCheckSpec(
            "win_rates_in_range",
            asset="bench_leaderboard",
            description="Every win rate and bound lies in [0, 1].",
        )
    ],
)
@one_line_failures
def bench_leaderboard(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    bench_settings: BenchSettings,
    site_settings: SiteSettings,
):
    """The month's bench leaderboard as Arena-Hard-Auto computes it (`ARENA_BENCH_PROTOCOL`):
    per question category, each candidate's score against that category's baseline with
    the protocol's bootstrap interval (v0.1 95 %, v2 90 %) and its style-controlled win
    rate and interval; beside them our Bradley-Terry and style-controlled ratings of the
    same battles and the mean answer tokens; and the bench against the same month's human
    `arena_leaderboard`: separability, agreement with confidence, Spearman, Kendall, Brier."""
    lake = storage.lake()
    bad, rows = 0, {}
    for month in months_in_window(context):
        s = bench_settings
        try:
            step = bench_leaderboard_month(
                lake,
                month,
                protocol=s.bench_protocol(),
                weight=s.strong_weight,
                rounds=s.bootstrap_rounds,
                seed=s.bootstrap_seed,
                style_control=s.style_control,
                single_grades=s.grades_on(),
            )
        except (
            ProtocolMismatchError
        ) as exc:  # judgments played by another protocol: one line, nothing written
            raise dg.Failure(description=str(exc)) from None
        b = step.board
        rows[month] = b.height
        ranged = [
            c
            for c in ("win_rate", "lower", "upper", "sc_win_rate", "sc_lower", "sc_upper")
            if c in b.columns
        ]
        bad += b.filter(
            ~pl.all_horizontal(pl.col(c).is_between(0, 1).fill_null(True) for c in ranged)
        ).height
        meta = {
            "month": month,
            "board": dg.MetadataValue.md(step.markdown),
            "site_page": dg.MetadataValue.url(site_settings.page_url(month) + "#bench"),
            **table_metadata(b, step.urls[0]),
            "protocol": s.bench_protocol().name,
            "interval_level": s.bench_protocol().level,
            "vs_human": dg.MetadataValue.json(rounded(step.vs_human or {})),
            # a model whose games were all unparsed or dropped: its row, no score
            "models_without_win_rate": step.meta.get("models_without_win_rate", 0),
            "without_win_rate": dg.MetadataValue.json(step.meta.get("without_win_rate", {})),
            "style_control": dg.MetadataValue.json(rounded(step.meta.get("style_control", {}))),
        }
        if step.png:  # no plot for an empty board
            png = base64.b64encode(step.png).decode()
            meta["plot"] = dg.MetadataValue.md(f"![bench leaderboard](data:image/png;base64,{png})")
            meta["plot_png"] = dg.MetadataValue.path(step.urls[1])
        context.add_asset_metadata(meta, partition_key=month)
    storage.publish("bench_leaderboard", context.log)  # a catalog view, like every table
    yield dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(rows)})
    yield dg.AssetCheckResult(
        check_name="win_rates_in_range", passed=bad == 0, metadata={"bad_rows": bad}
    )


def _grades_table(summary: pl.DataFrame) -> str:
    """Each judge's mean grade per model (MT-Bench's single-answer score)."""
    cols = [c for c in ("judge", "model", "score", "n_valid", "n_invalid") if c in summary.columns]
    return markdown_table(summary.select(cols).with_columns(pl.col("score").round(3)), max_rows=100)
