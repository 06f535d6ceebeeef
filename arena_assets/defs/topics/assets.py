"""Stage 3, topics: LLM labels per conversation and clusters of the month's distinct prompts.

Both call an LLM (the shared ``labeler`` / ``embedder`` resources; by default the simulated
arena inside the run's process), so both run in the ``llm`` pool and a backfill runs a few
months per run (each month's answers are cached, so a retried run repeats no call). A month
is written only after every call finished: an unreachable endpoint, a refused key or an
unknown model fails the run with a message naming what to fix and leaves the previous
partition as it was.
"""

import time

import dagster as dg
import polars as pl

from arena_assets.defs.automation import follow_upstream
from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.llm_plan import gate, month_settings, plan_metadata, within_budget
from arena_assets.defs.llm_resources import LLMCache, LLMTaskResource
from arena_assets.defs.metadata import png_markdown, table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage
from arena_assets.defs.topics.resources import TopicSettings
from arena_assets.labels.prompts import CRITERIA
from arena_assets.llm import BatchReport, LLMEndpointError, Progress
from arena_assets.llm.endpoints import public_base_url
from arena_assets.pipeline import LLM_MONTHS_PER_RUN, quality
from arena_assets.pipeline.plan import plan_run, plan_topic_clusters, plan_topic_labels
from arena_assets.pipeline.topics import (
    TOPIC_CLUSTER_SUMMARY,
    TopicLabelsMonth,
    topic_clusters_month,
    topic_labels_month,
)
from arena_assets.report import markdown_table

# months per run in a backfill: enough to amortise a run's start, few enough that one
# failing month (an endpoint outage) does not hold many finished ones back
LLM_BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=LLM_MONTHS_PER_RUN)
_SHARE_COLUMNS = ["hard", "math", "creative_writing", "code", "refusal", "is_vision"]


def _progress_logger(context: dg.AssetExecutionContext, what: str, every_s: float = 5.0):
    """A run_batch progress callback that writes done/total, rate and ETA to the run log,
    at most every ``every_s`` seconds (and always for the last item)."""
    last = [0.0]

    def log(p: Progress) -> None:
        now = time.monotonic()
        if p.done == p.total or now - last[0] >= every_s:
            last[0] = now
            context.log.info(f"{what}: {p}")

    return log


def _fail(exc: LLMEndpointError) -> dg.Failure:
    return dg.Failure(description=f"{exc} (nothing was written; the previous partition is intact)")


def _label_shares(labels: pl.DataFrame) -> dict[str, float]:
    """Share of conversations with each boolean label, among those labelled ok."""
    out = {}
    for col in [*CRITERIA, *_SHARE_COLUMNS]:
        out[col] = round(float(labels[col].drop_nulls().mean() or 0.0), 4)
    out["mean_if_score"] = round(float(labels["if_score"].drop_nulls().mean() or 0.0), 3)
    return out


def _labels_metadata(step: TopicLabelsMonth) -> dict:
    rep = step.report.as_metadata()
    hits = sum(b.cache_hits for b in step.report.batches.values())
    return {
        **table_metadata(step.labels, step.url),
        "month": step.month,
        "distinct_prompts": rep["distinct_prompts"],
        "calls_made": rep["llm_calls"],
        "calls_by_group": dg.MetadataValue.json(
            {k: b.calls for k, b in step.report.batches.items()}
        ),
        "cache_hits": hits,
        "calls_avoided_by_dedup": rep["calls_avoided_by_dedup"],
        "prompt_tokens": rep["prompt_tokens"],
        "completion_tokens": rep["completion_tokens"],
        "estimated_cost": dg.MetadataValue.float(float(rep["estimated_cost"])),
        "label_shares": dg.MetadataValue.json(_label_shares(step.labels)),
        "parse_failure_rate": dg.MetadataValue.json(step.parse_failure_rate),
        "prompt_set": f"{step.labels['prompt_set'][0]} ({step.labels['prompt_set_hash'][0]})"
        if step.labels.height
        else "",
        "unparsed_by_tag": dg.MetadataValue.json(rep["unparsed_by_tag"]),
        "statuses": dg.MetadataValue.json({k: v.statuses for k, v in step.report.batches.items()}),
        # each label group's batch as the other LLM assets record theirs: when it ran and
        # for how long, its calls, tokens and cost
        "calls": dg.MetadataValue.json(
            {k: b.as_metadata() for k, b in step.report.batches.items()}
        ),
    }


@dg.asset(
    partitions_def=monthly_partitions,
    deps=["conversations"],
    group_name="topics",
    kinds={"openai", "parquet", "polars"},
    pool="llm",
    backfill_policy=LLM_BACKFILL,
    # labels feed the category boards, so the topic stage follows new conversations like
    # every SQL stage; the bench stages (candidate answers, judge calls) run only when
    # launched. Against a paid endpoint, stop the arena_automation sensor to decide by hand.
    automation_condition=follow_upstream,
    check_specs=[
        dg.AssetCheckSpec(
            "parse_failure_rate_low",
            asset="topic_labels",
            description="Per label group, the share of answers that failed "
            "to parse is under ARENA_LABEL_MAX_PARSE_FAILURE_RATE.",
        ),
        dg.AssetCheckSpec(
            "labels_answered",
            asset="topic_labels",
            blocking=True,
            description="Per label group, the share of conversations whose "
            "label call failed or whose answer did not parse is at "
            "most ARENA_LABEL_MAX_MISSING_RATE (a rerun asks them "
            "again: neither is cached).",
        ),
        dg.AssetCheckSpec(
            "labels_in_range",
            asset="topic_labels",
            blocking=True,
            description="if_score in 0-5, criteria_count = the criteria that "
            "hold, hard = criteria_count >= 6, no label without an "
            "ok status, no vision label on a text prompt.",
        ),
    ],
)
@one_line_failures
def topic_labels(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    labeler: LLMTaskResource,
    llm_cache: LLMCache,
    topic_settings: TopicSettings,
):
    """One row per conversation with LMArena's category labels, asked as its labeller asks
    them: the conversation's user turns joined (cut at 12,500 characters) once per distinct
    input for the 7 hard-prompt criteria (`hard` = at least 6), math and creative writing
    (yes / no) and how well the prompt tests instruction following (0-5; the `if` board
    takes >= 4); each answer classified as a refusal (yes / no / maybe); the vision
    categories of image prompts, each shown what LMArena's labeller shows it (captioning,
    entity recognition, creative writing: the text; ocr, humor: text and image; homework,
    diagram: the image alone);
    code by a heuristic. Stored in LMArena's `category_tag` structure (what the category
    boards read) and as flat columns (null unless parsed). The prompts come from
    `ARENA_LABEL_PROMPTS` (a YAML prompt set; default: the project's own), whose name and
    hash every row records."""
    task = labeler.task()
    settings = month_settings(storage, llm_cache, labeler=labeler, topic_settings=topic_settings)
    plans = plan_run(
        months_in_window(context), lambda m: plan_topic_labels(storage.lake(), m, settings)
    )
    gate(context, list(plans.values()), labeler.budget())  # the bill first, before any call
    context.log.info(f"labelling with {task.model} at {public_base_url(task.base_url)}")
    threshold = topic_settings.parse_failure_threshold()
    per_month: dict[str, dict] = {}
    worst: dict[str, float] = {}
    bad: dict[str, int] = {}
    missing: dict[str, dict] = {}  # per month and group: failed, parse_failed, share
    for month in months_in_window(context):
        try:
            with within_budget(plans[month], labeler.budget()):
                step = topic_labels_month(
                    storage.lake(),
                    month,
                    task,
                    cache_root=llm_cache.root_for(storage),
                    cfg=topic_settings.label_config(),
                    storage_options=llm_cache.storage_options(storage),
                    progress=_progress_logger(context, f"{month} labels"),
                )
        except LLMEndpointError as exc:
            raise _fail(exc) from exc
        per_month[month] = _labels_metadata(step) | plan_metadata(plans[month])
        for group, rate in step.parse_failure_rate.items():
            worst[group] = max(worst.get(group, 0.0), rate)
        for rule, n in step.out_of_range.items():
            bad[rule] = bad.get(rule, 0) + n
        missing[month] = quality.missing_label_shares(step.labels)
    storage.publish("topic_labels", context.log)
    # one result per run (a backfill run covers a few months): the last month's figures
    # and a line per month
    yield dg.MaterializeResult(
        metadata={
            **per_month[max(per_month)],
            "months_in_run": dg.MetadataValue.json(
                {
                    m: {
                        "rows": v["dagster/row_count"],
                        "calls_made": v["calls_made"],
                        "cache_hits": v["cache_hits"],
                    }
                    for m, v in per_month.items()
                }
            ),
        }
    )
    yield dg.AssetCheckResult(
        check_name="parse_failure_rate_low",
        passed=max(worst.values(), default=0.0) <= threshold,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"threshold": threshold, **{f"rate_{k}": round(v, 4) for k, v in worst.items()}},
    )
    limit = topic_settings.missing_label_threshold()
    worst_missing = max((g["share"] for m in missing.values() for g in m.values()), default=0.0)
    yield dg.AssetCheckResult(
        check_name="labels_answered",
        passed=worst_missing <= limit,
        metadata={
            "threshold": limit,
            "worst_share": round(worst_missing, 4),
            "by_month": dg.MetadataValue.json(missing),
        },
    )
    yield dg.AssetCheckResult(
        check_name="labels_in_range", passed=not any(bad.values()), metadata=bad
    )


def _endpoint_embedder(task, cache, reports: list[BatchReport]):
    from arena_assets.llm import embed_texts

    def embed(texts: list[str]):
        vectors, report = embed_texts(task, texts, cache)
        reports.append(report)
        return vectors

    return embed


@dg.asset(
    partitions_def=monthly_partitions,
    deps=["conversations", "topic_labels"],
    group_name="topics",
    kinds={"openai", "parquet", "scikitlearn"},
    pool="llm",
    backfill_policy=LLM_BACKFILL,
    # labels feed the category boards, so the topic stage follows new conversations like
    # every SQL stage; the bench stages (candidate answers, judge calls) run only when
    # launched. Against a paid endpoint, stop the arena_automation sensor to decide by hand.
    automation_condition=follow_upstream,
)
@one_line_failures
def topic_clusters(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    embedder: LLMTaskResource,
    labeler: LLMTaskResource,
    llm_cache: LLMCache,
    topic_settings: TopicSettings,
):
    """Every distinct first prompt of the month with a topic cluster id and name (plus the
    `topic_cluster_summary` table: per cluster its size, name, c-TF-IDF keywords, example
    prompts, mean criteria count and share of each category). Prompts are embedded by the
    `embedder` endpoint (or the offline wordllama model when ARENA_EMBED_BASE_URL is empty),
    clustered with a seeded scikit-learn/scipy method, and named by the labeller."""
    from arena_assets.labels.clusters import OfflineEmbedder
    from arena_assets.labels.plots import topic_clusters_png

    lake = storage.lake()
    settings = month_settings(
        storage, llm_cache, labeler=labeler, embedder=embedder, topic_settings=topic_settings
    )
    plans = plan_run(months_in_window(context), lambda m: plan_topic_clusters(lake, m, settings))
    gate(context, list(plans.values()), embedder.budget())  # the bill first, before any call
    root, opts = llm_cache.root_for(storage), llm_cache.storage_options(storage)
    reports: list[BatchReport] = []
    if embedder.configured():
        etask = embedder.task()
        embed = _endpoint_embedder(etask, llm_cache.embeddings(storage), reports)
        source = f"{etask.model} at {public_base_url(etask.base_url)}"
    else:
        embed, source = OfflineEmbedder(), "wordllama (offline)"
    namer = labeler.task() if topic_settings.name_clusters_by_llm and labeler.configured() else None
    per_month: dict[str, dict] = {}
    for month in months_in_window(context):
        try:
            with within_budget(plans[month], embedder.budget()):
                step = topic_clusters_month(
                    lake,
                    month,
                    embed,
                    cfg=topic_settings.cluster_config(),
                    namer=namer,
                    cache_root=root,
                    storage_options=opts,
                )
        except LLMEndpointError as exc:
            raise _fail(exc) from exc
        png = topic_clusters_png(step.summary, f"Topic clusters {month}")
        png_url = lake.write_blob("topic_clusters", f"{month}.png", png)
        per_month[month] = _clusters_metadata(
            step, reports, namer, source, png, png_url
        ) | plan_metadata(plans[month])
        reports.clear()
    storage.publish("topic_clusters", context.log)
    storage.publish(TOPIC_CLUSTER_SUMMARY, context.log)
    return dg.MaterializeResult(
        metadata={
            **per_month[max(per_month)],
            "months_in_run": dg.MetadataValue.json(
                {m: v["clusters"] for m, v in per_month.items()}
            ),
        }
    )


def _clusters_metadata(
    step, reports: list[BatchReport], namer, source: str, png: bytes, png_url: str
) -> dict:
    calls = sum(r.calls for r in reports) + (step.naming.calls if step.naming else 0)
    cost = sum(r.cost for r in reports) + (step.naming.cost if step.naming else 0.0)
    shown = step.summary.sort("n_conversations", descending=True).select(
        "cluster_id",
        "cluster_name",
        "size",
        "n_conversations",
        pl.col("keywords").list.head(5).list.join(", ").alias("keywords"),
        pl.col("mean_criteria").round(2),
        pl.col("share_hard").round(3),
        pl.col("share_code").round(3),
        pl.col("share_vision").round(3),
    )
    return {
        **table_metadata(step.assignments, step.urls[0]),
        "month": step.month,
        "clusters": step.summary.height,
        "outliers_reassigned": int(step.assignments["was_outlier"].sum()),
        "embeddings": source,
        "embedding_calls": sum(r.calls for r in reports),
        "embedding_cache_hits": sum(r.cache_hits for r in reports),
        "calls": dg.MetadataValue.json(
            {
                **{f"embeddings {i + 1}": r.as_metadata() for i, r in enumerate(reports)},
                **({"naming": step.naming.as_metadata()} if step.naming else {}),
            }
        ),
        "naming": f"llm {namer.model}" if namer else "c-TF-IDF keywords",
        "calls_made": calls,
        "prompt_tokens": sum(r.prompt_tokens for r in reports)
        + (step.naming.prompt_tokens if step.naming else 0),
        "completion_tokens": step.naming.completion_tokens if step.naming else 0,
        "estimated_cost": dg.MetadataValue.float(float(cost)),
        "summary_path": dg.MetadataValue.path(step.urls[1]),
        "cluster_summary": dg.MetadataValue.md(markdown_table(shown, 40)),
        "clusters_plot": png_markdown(png, "topic clusters"),
        "clusters_png": dg.MetadataValue.path(png_url),
    }
