"""The LLM assets' plans from their resources, and the gate every LLM run passes first.

``month_settings`` turns the resources an asset holds into the plan's ``MonthSettings``;
``gate`` writes each month's plan as the run's first log line, attaches it to the run, and
refuses the run, before any call, when a month is known to be over
``ARENA_LLM_BUDGET_USD`` (per asset and month; ``llm.plan.check_budget``: its estimate from
history, or its least cost, is over), and, where a task runs in batch mode, submits every
Batch-API job of the run before the run waits for the first (``llm.ahead``);
``within_budget`` holds each month's calls under it while they run (``llm.budget``). ``arena-assets plan`` builds the same
settings from every resource (``cli/plan.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import dagster as dg

from arena_assets.llm.ahead import submitting
from arena_assets.llm.budget import spending
from arena_assets.llm.plan import AssetPlan, BudgetExceeded, check_budget
from arena_assets.pipeline.plan import MonthSettings


def month_settings(
    storage,
    llm_cache,
    *,
    labeler=None,
    embedder=None,
    judge=None,
    reward_model=None,
    topic_settings=None,
    bench_settings=None,
    evaluator_settings=None,
) -> MonthSettings:
    """The plan's view of the configured resources (any subset an asset holds): the tasks
    built as the assets build them, so a plan names the endpoints and prices a run uses."""
    from arena_assets.pipeline.evaluators import RISK_MAX_TOKENS

    s = MonthSettings(
        cache_root=llm_cache.root_for(storage), storage_options=llm_cache.storage_options(storage)
    )
    if labeler is not None and labeler.configured():
        s.labeler = labeler.task()
        s.risk_labeler = labeler.task(max_tokens=RISK_MAX_TOKENS)
    if evaluator_settings is not None:
        s.agreement_size, s.agreement_seed = (
            evaluator_settings.agreement_sample_size,
            evaluator_settings.seed,
        )
        s.refusal_max_chars = evaluator_settings.max_prompt_chars
        try:  # a bad judge list or a listed judge's endpoint unset: the agreement's plan says
            # what its run would (other assets plan on)
            s.agreement_judges = evaluator_settings.judges()
            if judge is not None and reward_model is not None:
                s.agreement_judge, s.agreement_reward = evaluator_settings.tasks(
                    judge, reward_model
                )
        except ValueError as exc:
            s.agreement_error = str(exc)
    if topic_settings is not None:
        s.relabel_prompt_set = topic_settings.prompt_set()
        s.relabel_reask = topic_settings.reask_on()
        s.label_cfg = topic_settings.label_config()
        s.cluster_cfg = topic_settings.cluster_config()
        if topic_settings.name_clusters_by_llm:
            s.namer = s.labeler
    if embedder is not None and embedder.configured():
        s.embedder = embedder.task()
    if bench_settings is not None:
        s.bench_options = bench_settings.bench_options()
        if labeler is not None and labeler.configured():
            s.relabel = bench_settings.relabel_task(labeler)
        if judge is not None:
            s.candidates = bench_settings.candidate_tasks(judge)
            s.judges = bench_settings.judge_tasks(judge)
            s.baseline = bench_settings.baselines()
            s.protocol = bench_settings.bench_protocol()
            s.judge_prompts = bench_settings.judge_prompts()
            s.single_grades = bench_settings.grades_on()
    return s


def gate(context: dg.AssetExecutionContext, plans: list[AssetPlan], budget: float | None) -> None:
    """Log every month's plan (the run's first lines), then refuse the whole run if any
    month is over budget: nothing has been called yet."""
    for plan in plans:
        context.log.info(plan.line())
        if plan.note:
            context.log.info(f"plan {plan.asset} {plan.month}: {plan.note}")
    for plan in plans:
        try:
            if note := check_budget(plan, budget):
                context.log.warning(note)
        except BudgetExceeded as exc:
            raise dg.Failure(description=str(exc)) from exc
    batch = [p for p in plans if p.batch_calls and p.replay is not None]
    if batch:  # every job of the run submitted before it waits for the first (llm.ahead)
        with submitting(budget, batch[0].asset) as ahead:
            try:
                batch[0].replay()
            except BudgetExceeded as exc:  # the jobs submitted so far stay recorded
                raise dg.Failure(description=str(exc)) from exc
        if ahead.submitted or ahead.resumed:
            context.log.info(ahead.line())


@contextlib.contextmanager
def within_budget(plan: AssetPlan, budget: float | None) -> Iterator[None]:
    """The month's calls held under ``ARENA_LLM_BUDGET_USD`` while they run (``llm.budget``:
    never past it, stopped early when the answers say the month will not fit); a stop
    fails the run with its one line, the answers received cached."""
    held = None
    try:
        with spending(budget, f"{plan.asset} {plan.month}") as held:
            yield
    except BudgetExceeded as exc:  # the line again: the calls in flight at the stop are counted now
        raise dg.Failure(description=held.line() if held and held.stopped else str(exc)) from exc


def plan_metadata(plan: AssetPlan) -> dict:
    """The plan beside the run's counted figures in the asset's metadata."""
    return {"llm_plan": dg.MetadataValue.json(plan.as_metadata())}
