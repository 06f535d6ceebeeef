"""Stage evaluators: how far the judges agree with the arena's voters, and which models
refuse benign-but-sensitive prompts, one monthly partition each.

Both call LLMs (judges, reward models, the risk labeller): they run in the ``llm`` pool,
backfill a few months per run and follow no automation (a run costs money you approve).
"""

import base64

import dagster as dg
import polars as pl

from arena_assets.defs.evaluators.resources import EvaluatorSettings
from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.llm_plan import gate, month_settings, plan_metadata, within_budget
from arena_assets.defs.llm_resources import LLMCache, LLMTaskResource
from arena_assets.defs.metadata import table_metadata
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.resources import ArenaStorage
from arena_assets.evaluators.agreement import TIE_RULE
from arena_assets.evaluators.refusal import QUANTITY, TOXIC_RULE
from arena_assets.llm import ResponseCache
from arena_assets.pipeline import LLM_MONTHS_PER_RUN
from arena_assets.pipeline.evaluators import (
    JUDGE_HUMAN_VERDICTS,
    OVER_REFUSAL_CACHE,
    OVER_REFUSAL_RATES,
    RISK_MAX_TOKENS,
    agreement_sample,
    judge_human_agreement_month,
    over_refusal_month,
)
from arena_assets.pipeline.plan import plan_judge_human_agreement, plan_over_refusal, plan_run
from arena_assets.report import markdown_table

LLM_BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=LLM_MONTHS_PER_RUN)
_OVERALL = (
    "judge",
    "judged",
    "accuracy",
    "accuracy_lower",
    "accuracy_upper",
    "accuracy_tie_half",
    "agreement_with_ties",
    "agreement_without_ties",
    "kappa",
    "flip_rate",
    "length_preference",
    "row_wise_pearson",
    "spearman",
    "kendall",
    "brier",
    "separability",
    "confidence_agreement",
)


def _rounded(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col(pl.Float64).round(3))


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="evaluators",
    kinds={"openai", "parquet"},
    deps=["battles", "conversations", "topic_labels"],
    pool="llm",
    backfill_policy=LLM_BACKFILL,
    check_specs=[
        dg.AssetCheckSpec(
            "every_judge_answered",
            asset="judge_human_agreement",
            description="WARN when a judge gave no verdict on over 5 % of the sample.",
        ),
        dg.AssetCheckSpec(
            "metrics_in_range",
            asset="judge_human_agreement",
            blocking=True,
            description="Accuracy, agreement and rates in [0, 1], kappa and "
            "correlations in [-1, 1] (or null).",
        ),
    ],
)
@one_line_failures
def judge_human_agreement(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    evaluator_settings: EvaluatorSettings,
    llm_cache: LLMCache,
    judge: LLMTaskResource,
    reward_model: LLMTaskResource,
):
    """How well each configured judge (LLM judges asked with the bench's pairwise prompt in
    both orders, reward models scoring each side, the "longer wins" and "more markdown
    wins" baselines) agrees with the human votes on a stratified sample of the month's
    battles: PPE's accuracy (clustered bootstrap interval, per category and language),
    MT-Bench's agreement with and without ties, Cohen's kappa, position flips, length
    preference, and the judge's implied board against the human one (row-wise Pearson,
    separability, agreement with confidence, Spearman, Kendall, Brier), with the
    published yardsticks beside, each on the slice it was measured on (PPE's 68.59 % and
    59.81 % on the `hard` slice, as PPE's hard-prompt subset). A judge tie on a decided
    vote is a miss in `accuracy`: the project's rule (PPE states none), with
    `accuracy_tie_half` beside. Per-battle verdicts in `judge_human_verdicts`."""
    lake = storage.lake()
    s = evaluator_settings
    judge_task, reward_task = s.tasks(judge, reward_model)
    root, options = llm_cache.root_for(storage), llm_cache.storage_options(storage)
    caches: dict[str, ResponseCache] = {}

    def cache_of(
        namespace: str,
    ) -> ResponseCache:  # one per judge, read once by the plan and the run
        if namespace not in caches:
            caches[namespace] = ResponseCache(root, namespace, storage_options=options)
        return caches[namespace]

    # each month's sample drawn once, for the plan and the run (a few hundred battles each)
    months = list(months_in_window(context))
    drawn = {
        m: agreement_sample(lake, m, size=s.agreement_sample_size, seed=s.seed)
        for m in months
        if lake.exists("battles", m) and lake.exists("conversations", m)
    }
    settings = month_settings(
        storage, llm_cache, judge=judge, reward_model=reward_model, evaluator_settings=s
    )
    plans = plan_run(
        months, lambda m: plan_judge_human_agreement(lake, m, settings, drawn.get(m), cache_of)
    )
    gate(context, list(plans.values()), judge.budget())  # the bill first, before any call
    bad, silent, per_month = 0, {}, {}
    for month in months_in_window(context):
        with within_budget(plans[month], judge.budget()):
            step = judge_human_agreement_month(
                lake,
                month,
                s.judges(),
                size=s.agreement_sample_size,
                seed=s.seed,
                judge_task=judge_task,
                reward_task=reward_task,
                cache_of=cache_of,
                options=s.agreement_options(),
                drawn=drawn.pop(month, None),
            )
        t = step.table
        bad += _out_of_range(t)
        overall = t.filter(pl.col("slice") == "overall")
        for judge_name, battles, judged in overall.select("judge", "battles", "judged").iter_rows():
            if battles and judged < 0.95 * battles:
                silent[f"{month}:{judge_name}"] = battles - judged
        per_month[month] = step.verdicts.height
        context.add_asset_metadata(
            {
                **table_metadata(t, step.urls[0]),
                "month": month,
                "agreement": dg.MetadataValue.md(
                    markdown_table(
                        _rounded(overall.select([c for c in _OVERALL if c in overall.columns])),
                        max_rows=50,
                    )
                ),
                # each published figure beside our figure on the slice it was measured on
                # (PPE's two: its hard-prompt subset, our `hard` slice)
                "yardsticks": dg.MetadataValue.md(
                    markdown_table(_rounded(pl.DataFrame(step.yardsticks)), 10)
                ),
                "tie_rule": TIE_RULE,
                "sample_strata": dg.MetadataValue.json(step.strata),
                "battles_in_month": step.population,
                "calls": dg.MetadataValue.json(step.reports),
                "verdicts_path": dg.MetadataValue.path(step.urls[1]),
                **plan_metadata(plans[month]),
            },
            partition_key=month,
        )
    storage.publish("judge_human_agreement", context.log)
    storage.publish(JUDGE_HUMAN_VERDICTS, context.log)
    yield dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(per_month)})
    yield dg.AssetCheckResult(
        check_name="every_judge_answered",
        passed=not silent,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"unanswered": dg.MetadataValue.json(silent)},
    )
    yield dg.AssetCheckResult(
        check_name="metrics_in_range", passed=bad == 0, metadata={"bad_values": bad}
    )


def _out_of_range(table: pl.DataFrame) -> int:
    unit = (
        "accuracy",
        "accuracy_lower",
        "accuracy_upper",
        "accuracy_tie_half",
        "agreement_with_ties",
        "agreement_without_ties",
        "flip_rate",
        "a_share",
        "length_preference",
        "separability",
        "confidence_agreement",
        "brier",
    )
    signed = ("kappa", "row_wise_pearson", "spearman", "kendall")
    bad = 0
    for cols, lo in ((unit, 0.0), (signed, -1.0)):
        for c in cols:
            v = table[c].drop_nulls().drop_nans()
            bad += int(((v < lo - 1e-9) | (v > 1 + 1e-9)).sum())
    return bad


@dg.asset(
    partitions_def=monthly_partitions,
    group_name="evaluators",
    kinds={"openai", "parquet", "matplotlib"},
    deps=["conversations", "topic_labels", "arena_leaderboard", "battles"],
    pool="llm",
    backfill_policy=LLM_BACKFILL,
    check_specs=[
        dg.AssetCheckSpec(
            "rates_in_range",
            asset="over_refusal",
            blocking=True,
            description="Every refusal rate and bound in [0, 1], lower <= rate <= upper.",
        )
    ],
)
@one_line_failures
def over_refusal(
    context: dg.AssetExecutionContext,
    storage: ArenaStorage,
    evaluator_settings: EvaluatorSettings,
    llm_cache: LLMCache,
    labeler: LLMTaskResource,
):
    """OR-Bench's question asked of the arena's own traffic, as the project's own quantity
    (not an OR-Bench figure: the month's prompts carry none of OR-Bench's labels, and the
    classes, risk labeller, refusal label and threshold are the project's): per model, the
    refusal rate (Wilson interval) on benign-but-sensitive prompts (the risk labeller says
    sensitive, and the prompt is not toxic), on toxic prompts and on the rest. A prompt is
    toxic when the moderation endpoint flags it or the risk labeller calls it harmful:
    either suffices. Then the over-refusal board (over-refusers: the benign-sensitive
    rate's lower bound above the threshold), its relation to the `no_refusal` arena board,
    and the over- vs under-refusal plot. Rates per class in `over_refusal_rates`. OR-Bench's
    own prompt sets and judge: the `or-bench` command."""
    lake = storage.lake()
    s = evaluator_settings
    task = labeler.task(max_tokens=RISK_MAX_TOKENS)
    cache = llm_cache.cache(storage, OVER_REFUSAL_CACHE)
    settings = month_settings(storage, llm_cache, labeler=labeler, evaluator_settings=s)
    plans = plan_run(
        months_in_window(context), lambda m: plan_over_refusal(lake, m, settings, cache)
    )
    gate(context, list(plans.values()), labeler.budget())  # the bill first, before any call
    bad, per_month = 0, {}
    for month in months_in_window(context):
        with within_budget(plans[month], labeler.budget()):
            step = over_refusal_month(
                lake,
                month,
                task,
                cache=cache,
                options=s.refusal_options(),
                max_prompt_chars=s.max_prompt_chars,
            )
        r = step.rates
        bad += r.filter(
            ~(
                pl.col("rate").is_between(0, 1)
                & (pl.col("lower") <= pl.col("rate") + 1e-12)
                & (pl.col("rate") <= pl.col("upper") + 1e-12)
            )
        ).height
        per_month[month] = step.board.height
        png = base64.b64encode(step.png).decode()
        board = step.board.select(
            "rank",
            "model",
            "benign_sensitive_n",
            "benign_sensitive_rate",
            "benign_sensitive_lower",
            "benign_sensitive_upper",
            "toxic_n",
            "toxic_rate",
            "other_rate",
            "over_refuser",
        )
        context.add_asset_metadata(
            {
                **table_metadata(step.board, step.urls[0]),
                "month": month,
                "board": dg.MetadataValue.md(markdown_table(_rounded(board), max_rows=60)),
                "over_refusers": dg.MetadataValue.json(
                    step.board.filter(pl.col("over_refuser").fill_null(False))["model"].to_list()
                ),
                "quantity": QUANTITY,
                "toxic_rule": TOXIC_RULE,
                "prompt_classes": dg.MetadataValue.json(step.classes),
                "toxic_sources": dg.MetadataValue.json(step.toxic_sources),
                "conversations_without_refusal_label": step.unlabelled,
                # release battles carry no topic labels: their is_refusal (battle-level) says
                # "neither side refused" where false (pipeline.evaluators.release_refusals)
                "refusal_from_release_is_refusal": step.from_release,
                "no_refusal_board": dg.MetadataValue.json(step.relation),
                "risk_calls": dg.MetadataValue.json(step.report),
                "plot": dg.MetadataValue.md(
                    f"![over- vs under-refusal](data:image/png;base64,{png})"
                ),
                "plot_png": dg.MetadataValue.path(step.urls[2]),
                **plan_metadata(plans[month]),
            },
            partition_key=month,
        )
    storage.publish("over_refusal", context.log)
    storage.publish(OVER_REFUSAL_RATES, context.log)
    yield dg.MaterializeResult(metadata={"months_in_run": dg.MetadataValue.json(per_month)})
    yield dg.AssetCheckResult(
        check_name="rates_in_range", passed=bad == 0, metadata={"bad_rows": bad}
    )
