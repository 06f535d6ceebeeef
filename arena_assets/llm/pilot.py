"""A pilot: a few real answers where a plan has none to measure, so that a first month's
bill is an estimate, not the ``max_tokens`` bound.

A plan estimates output tokens from the cache's earlier answers to the same model and
prompt version (``llm.plan``). A first month has none, and its plan counts every answer at
``max_tokens``: on the simulated 500,000-conversation month, $658.59 for a month billed
$130.45. ``run_pilots`` asks, for each batch planned at that bound, ``answers`` of its
requests drawn at random (``PilotSample``, kept by plans made in
``llm.plan.sampling_pilots``; seeded) through ``run_batch``, the run's own path. The
answers that parse are cached like any run's, so a plan made after the pilot estimates from
them (``MIN_HISTORY`` of them at least), and the month's run, asking the same requests,
does not pay for them again. A projected batch (its inputs not in the lake yet, e.g. the
agreement's sample drawn before the labels) is piloted too: the lengths hold, though the
run may ask other requests. ``arena-assets plan --pilot N`` is the way in; nothing calls
unless asked to.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arena_assets.llm.batch import run_batch
from arena_assets.llm.budget import spending
from arena_assets.llm.client import LLMEndpointError
from arena_assets.llm.plan import (
    BOUND_BASIS,
    MIN_HISTORY,
    PILOT_SAMPLE,
    AssetPlan,
    BudgetExceeded,
    input_scale,
    output_estimate,
)

PRECISION = 0.15  # the plan's target: an estimate within 15 % (two standard errors under it)


@dataclass
class PilotReport:
    """What one batch's pilot asked and learnt."""

    asset: str
    month: str
    what: str
    model: str
    calls: int
    answers: int  # parsed (asked now, or cached since the plan): the history the next plan reads
    completion_tokens: int  # of the parsed answers
    cost: float
    mean: float  # completion tokens an answer, over the parsed ones
    stderr: float  # its standard error
    before: int  # output tokens a call the plan counted before (max_tokens: no history)
    still_bound: bool  # the cache's history still too short: the next plan stays at the bound
    projected: bool  # a projected batch: the run may ask other requests
    input_scale: float = (
        1.0  # billed input over the plan's count, its answers so far (llm.plan.input_scale)
    )

    def line(self) -> str:
        spread = f" ± {self.stderr:.1f}" if self.answers > 1 else ""
        notes = []
        if self.still_bound:
            notes.append(
                f"fewer than the {MIN_HISTORY} answers a plan needs: still planned at the bound"
            )
        elif self.mean and 2 * self.stderr > PRECISION * self.mean:  # a wide spread of lengths
            need = math.ceil(self.answers * (2 * self.stderr / (PRECISION * self.mean)) ** 2)
            more = (
                f"--pilot {need} for {100 * PRECISION:.0f} %"
                if need <= PILOT_SAMPLE
                else f"more than the {PILOT_SAMPLE} a pilot asks for {100 * PRECISION:.0f} %"
            )
            notes.append(f"± {200 * self.stderr / self.mean:.0f} % at two standard errors ({more})")
        if self.input_scale != 1.0:
            notes.append(
                f"the endpoint billed {self.input_scale:.2f}x the plan's count of input tokens: "
                "the next plans scale it"
            )
        if self.projected:
            notes.append("a projected batch: the run may ask other requests")
        length = (
            f"{self.mean:.1f}{spread} output tokens an answer"
            if self.answers
            else "no answer parsed"
        )
        return (
            f"pilot {self.asset} {self.month} {self.what} to {self.model}: {self.calls:,} calls, "
            f"{self.answers:,} answers, {length} (planned at {self.before:,} before), "
            f"${self.cost:,.4f} spent, {self.answers:,} cached" + "".join(f"; {n}" for n in notes)
        )


def check_answers(answers: int) -> int:
    """``answers`` if a pilot can ask that many of a batch, else ValueError (one line)."""
    if not MIN_HISTORY <= answers <= PILOT_SAMPLE:
        raise ValueError(
            f"a pilot asks {MIN_HISTORY} to {PILOT_SAMPLE} answers a batch (the history "
            f"a plan needs, the sample a plan keeps), got {answers}"
        )
    return answers


def run_pilots(
    plans: Sequence[AssetPlan],
    answers: int,
    budget: float | None = None,
    done: Callable[[PilotReport], None] | None = None,
    failed: Callable[[AssetPlan, Exception], None] | None = None,
) -> list[PilotReport]:
    """For every batch in ``plans`` that kept a sample (``sampling_pilots(answers)``: its
    estimate rests on fewer than ``answers`` earlier answers), ask as many sampled requests
    as bring it to ``answers``, once per cache, endpoint, model and prompt versions (a
    range's later months learn from the first's); each asset's month under one ``budget``
    (``ARENA_LLM_BUDGET_USD``: the pilot's own, the month's run then has its own as
    before). ``done`` gets each report as its pilot ends (a failure later leaves what was
    spent said). An asset's month whose pilot fails (its endpoint, its budget) raises, or,
    with ``failed``, is handed to it and the other assets' pilots go on."""
    check_answers(answers)
    reports: list[PilotReport] = []
    asked: set = set()
    for plan in plans:
        try:
            _pilot_month(plan, answers, budget, done, reports, asked)
        except (LLMEndpointError, BudgetExceeded) as exc:
            if failed is None:
                raise
            failed(plan, exc)
    return reports


def _pilot_month(
    plan: AssetPlan,
    answers: int,
    budget: float | None,
    done: Callable[[PilotReport], None] | None,
    reports: list[PilotReport],
    asked: set,
) -> None:
    """One asset's month: its batches' pilots under one budget. A stop's line is read again
    once its batch has drained (as ``defs.llm_plan.within_budget`` does): a projection's stop
    comes with calls in flight, which settle after it."""
    held = None
    try:
        with spending(budget, f"{plan.asset} {plan.month} pilot") as held:
            _pilot_batches(plan, answers, done, reports, asked)
    except BudgetExceeded as exc:
        if held is not None and held.stopped is not None:
            raise BudgetExceeded(held.line()) from exc
        raise


def _pilot_batches(
    plan: AssetPlan,
    answers: int,
    done: Callable[[PilotReport], None] | None,
    reports: list[PilotReport],
    asked: set,
) -> None:
    for b in plan.batches:
        if b.pilot is None or not b.calls:
            continue
        p = b.pilot
        # a plan reads history per cache, model and prompt version: one pilot each
        # (the agreement's judge and the bench's are one model, two caches)
        where = (p.cache.fs.protocol, p.cache.dir, b.base_url, b.model, b.what)
        if where in asked:
            continue
        versions = {r.prompt_version for r in p.requests}
        known = sum(p.cache.completion_tokens(p.task.model, v)[1] for v in versions)
        if known >= answers:  # a pilot of another month of the range asked them
            continue
        # online even where the task runs in batch mode: a pilot's few answers are wanted
        # now, not within a batch's day, and cost little at the online price
        results, report = run_batch(
            p.task.online(), p.requests[: answers - known], p.cache, p.parse
        )
        asked.add(where)  # once it is done: a stopped one is tried again in a later month
        tokens = [r.completion_tokens for r in results if r.status == "ok"]  # cached ones too
        n = len(tokens)
        mean = sum(tokens) / n if n else 0.0
        var = sum((t - mean) ** 2 for t in tokens) / (n - 1) if n > 1 else 0.0
        left = b.calls - report.calls  # calls the month still has to make
        still = left > 0 and output_estimate(p.task, p.cache, list(versions))[1].startswith(
            BOUND_BASIS
        )
        reports.append(
            PilotReport(
                plan.asset,
                plan.month,
                b.what,
                b.model,
                report.calls,
                n,
                sum(tokens),
                report.cost,
                mean,
                math.sqrt(var / n) if n else 0.0,
                round(b.completion_per_call),
                still,
                not b.exact,
                input_scale(p.task, p.cache, list(versions))[0],
            )
        )
        if done is not None:
            done(reports[-1])
