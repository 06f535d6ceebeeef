"""`arena-assets plan --month M`: the bill of a month's LLM assets before anything is called.

Settings are the code location's own resources (every ``ARENA_*`` variable, the shell over
``.env``), so the plan is the one the runs will print as their first log line.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    from arena_assets.pipeline import (
        LLM_ASSETS,
        LLM_MONTHS_PER_RUN,
    )  # no import behind: the CLI starts fast

    p = subparsers.add_parser(
        "plan",
        help="what a month's LLM assets will call and cost, before any call",
        description="Per LLM asset of the month, per endpoint and model: items, distinct "
        "requests after dedup, cached answers, calls left, estimated input / output tokens "
        "and cost at the configured prices. Exact where the asset's inputs are in the lake, "
        "projected from the settings otherwise (marked). ARENA_LLM_BUDGET_USD (per asset and "
        "month) is the limit the runs enforce.",
    )
    p.add_argument("--month", required=True, metavar="YYYY-MM")
    p.add_argument(
        "--to",
        default=None,
        metavar="YYYY-MM",
        help="plan every month from --month to this one as `arena-assets backfill "
        "--from M --to N` (and a backfill from the UI) runs them: each asset in the runs "
        f"its backfill policy makes (an LLM asset {LLM_MONTHS_PER_RUN} months a run), "
        "a prompt two months of a run share asked once, in the first (default: "
        "--month alone)",
    )
    p.add_argument(
        "--parallel",
        action="store_true",
        help="with --to: as `arena-assets backfill --parallel` runs them, a month a "
        "run (a prompt two months share counted in each: months may run at once)",
    )
    p.add_argument(
        "--pilot",
        type=int,
        default=0,
        metavar="N",
        help="first ask requests (drawn at random) of every batch whose output estimate "
        "rests on fewer than N (20-200) earlier answers, as many as bring it to N, and "
        "plan again from their answers: a first month's estimate instead of its "
        "max_tokens bound. These are real, paid "
        "calls, held under ARENA_LLM_BUDGET_USD (per asset and month, the run's own "
        "budget apart); their answers are cached, so the run does not pay for them "
        "again (default 0: no call). An asset whose pilot stops (its endpoint, its "
        "budget) is said in one line and the others go on; the exit status is then 1",
    )
    p.add_argument(
        "--assets",
        default=None,
        help=f"comma-separated subset of {', '.join(LLM_ASSETS)} (default: all)",
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run_plan)


def code_location_resources() -> tuple[dict, dict]:
    """The code location's resources, their variables resolved (the shell over .env), and
    each asset's backfill policy: (kind, months per run). ``.env`` is applied to the
    environment only while they are built, so a caller in a longer-lived process (a test
    worker, a notebook) is left with the environment it had."""
    import dagster as dg

    from arena_assets.definitions import defs as load_defs
    from arena_assets.envfile import applied_to_environ
    from arena_assets.pipeline.backfill import policy_of

    with applied_to_environ():
        defs = load_defs()
        graph = defs.resolve_asset_graph()
        policies = {
            key.to_user_string(): policy_of(graph.get(key).backfill_policy)
            for key in graph.get_all_asset_keys()
        }
        with dg.build_resources(defs.resources) as res:
            return {
                name: getattr(res, name)
                for name in (
                    "storage",
                    "llm_cache",
                    "labeler",
                    "embedder",
                    "judge",
                    "reward_model",
                    "topic_settings",
                    "bench_settings",
                    "evaluator_settings",
                )
            }, policies


def settings_of(resources: dict):
    """The LLM month settings of ``code_location_resources``' resources."""
    from arena_assets.defs.llm_plan import month_settings

    r = resources
    return month_settings(
        r["storage"],
        r["llm_cache"],
        **{
            name: r[name]
            for name in (
                "labeler",
                "embedder",
                "judge",
                "reward_model",
                "topic_settings",
                "bench_settings",
                "evaluator_settings",
            )
        },
    )


def backfill_runs(
    months: list[str], policy: tuple[str | None, int | None], parallel: bool = False
) -> list[list[str]]:
    """The runs in which a backfill of ``months`` materializes an asset of backfill
    ``policy`` (kind, months per run): one over the range for a single-run asset; else
    runs of its months per run (`arena-assets backfill`, the UI), or with ``parallel`` a
    month a run (`arena-assets backfill --parallel`)."""
    from arena_assets.pipeline.backfill import SINGLE_RUN, plan_backfill

    if parallel and policy[0] != SINGLE_RUN:
        return [[m] for m in months]
    return [list(r.months) for r in plan_backfill([("asset", *policy)], months)]


def _endpoint(url: str) -> str:
    from arena_assets.llm.endpoints import public_base_url

    return public_base_url(url)


def run_plan(args: argparse.Namespace) -> int:
    from arena_assets.llm.client import LLMEndpointError
    from arena_assets.llm.pilot import check_answers, run_pilots
    from arena_assets.llm.plan import BudgetExceeded, sampling_pilots
    from arena_assets.pipeline import LLM_ASSETS
    from arena_assets.pipeline.backfill import MonthError, months_between, parse_month
    from arena_assets.pipeline.plan import PLANNERS, plan_run

    assets = [a.strip() for a in args.assets.split(",")] if args.assets else list(LLM_ASSETS)
    unknown = sorted(set(assets) - set(LLM_ASSETS))
    if unknown:
        print(
            f"arena-assets plan: error: unknown LLM asset(s) {unknown}; choose from {LLM_ASSETS}",
            file=sys.stderr,
        )
        return 2
    try:
        if args.pilot:
            check_answers(args.pilot)
    except ValueError as exc:
        print(f"arena-assets plan: error: --pilot: {exc}", file=sys.stderr)
        return 2
    try:
        parse_month(args.month, "--month")
        if args.to is not None:
            parse_month(args.to, "--to")
            if args.to < args.month:
                raise MonthError(f"--to {args.to} is before --month {args.month}")
        elif args.parallel:
            raise MonthError("--parallel plans a range: give --to too")
        months = months_between(args.month, args.to) if args.to is not None else [args.month]
    except MonthError as exc:
        print(f"arena-assets plan: error: {exc}", file=sys.stderr)
        return 2
    pilot_failures: list[str] = []  # assets whose pilot stopped: the plan printed, exit 1
    try:
        r, policies = code_location_resources()
        budget = r["labeler"].budget()
        settings = settings_of(r)
        lake = r["storage"].lake()

        def plan_all() -> dict[str, dict]:
            # per asset, its months in the runs a backfill makes of them, each run's months
            # planned as one run (llm.plan.one_run)
            return {
                a: {
                    m: p
                    for run in backfill_runs(months, policies[a], args.parallel)
                    for m, p in plan_run(run, lambda m, a=a: PLANNERS[a](lake, m, settings)).items()
                }
                for a in assets
            }

        if args.pilot:  # plans that keep samples to ask (and hold their caches): only here
            with sampling_pilots(args.pilot):
                by_asset = plan_all()
            out = sys.stderr if args.json else sys.stdout  # beside a JSON plan, on stderr

            def failed(plan, exc: Exception) -> None:  # its endpoint or budget: the others go on
                pilot_failures.append(plan.asset)
                said = (
                    str(exc)
                    if isinstance(exc, BudgetExceeded)
                    else f"pilot {plan.asset} {plan.month} stopped: {exc}"
                )
                print(said, file=out, flush=True)  # a budget stop names the asset, month and pilot

            pilots = run_pilots(
                [by_asset[a][m] for m in months for a in assets],
                args.pilot,
                budget,
                done=lambda report: print(report.line(), file=out, flush=True),
                failed=failed,
            )
            if pilots or pilot_failures:  # from the pilots' answers, now in the cache (a
                by_asset = plan_all()  # stopped pilot's too)
            else:
                print(
                    f"pilot: every batch's estimate rests on {args.pilot} answers or more: nothing to ask",
                    file=out,
                )
        else:
            by_asset = plan_all()
    # a setting, the lake or the cache's storage, an endpoint: one line (exit 1 means a pilot stopped)
    except (ValueError, OSError, LLMEndpointError, BudgetExceeded) as exc:
        print(f"arena-assets plan: error: {exc}", file=sys.stderr)
        return 2
    by_month = {m: [by_asset[a][m] for a in assets] for m in months}
    if args.json:
        print(
            json.dumps(
                [
                    {"asset": p.asset, "month": p.month, "note": p.note, **p.as_metadata()}
                    for plans in by_month.values()
                    for p in plans
                ],
                indent=1,
            )
        )
        return 1 if pilot_failures else 0
    calls, cost = 0, 0.0
    for month, plans in by_month.items():
        print("" if month == months[0] else "\n", end="")
        total = _print_month(month, plans, budget)
        calls, cost = calls + total.calls, cost + total.cost
    if len(months) > 1:
        how = (
            "a month a run: a prompt two months share counted in each, since months may run at once"
            if args.parallel
            else "each asset in the runs of its backfill policy: a prompt two months of a run share "
            "counted in the first, one that two runs share in each, since a backfill from the UI "
            "may run them at once (`arena-assets backfill` runs them one after another: the "
            "later ones find more cached)"
        )
        print(
            f"\nrange total, {months[0]} to {months[-1]}: {calls:,} calls, estimated ${cost:,.4f} ({how})"
        )
    if pilot_failures:
        print(
            f"pilot stopped for {', '.join(dict.fromkeys(pilot_failures))} (above): their plans "
            "stay where the pilot left them",
            file=sys.stderr,
        )
        return 1
    return 0


def _print_month(month: str, plans: list, budget: float | None):
    """One month's table; returns its ``month_total``."""
    from arena_assets.llm.plan import (
        APPROX_BASIS,
        BUDGET_SETTING,
        BudgetExceeded,
        check_budget,
        month_total,
    )
    from arena_assets.pipeline import LLM_ASSETS

    print(
        f"LLM plan for {month} (cost at the configured prices; {BUDGET_SETTING}="
        f"{'unset' if budget is None else f'{budget:g}'} per asset and month)"
    )
    w = max(len(a) for a in LLM_ASSETS)  # judge_human_agreement
    # both modes side by side: the cost online, the cost as Batch-API requests, and the
    # mode the task is set to (ARENA_<TASK>_MODE), whose cost is the run's and the budget's
    head = (
        f"{'asset':{w}} {'endpoint / model':42} {'items':>9} {'distinct':>9} {'cached':>8} "
        f"{'calls':>9} {'in tokens':>12} {'out tokens':>11} {'online $':>10} {'batch $':>10} "
        f"{'mode':6}"
    )
    print(head + "\n" + "-" * len(head))
    for p in plans:
        for b in p.batches:
            mark = "" if b.exact else " *"
            where = f"{_endpoint(b.base_url)} {b.model}"[:42]
            print(
                f"{p.asset:{w}} {where:42} {b.items:>9,} {b.distinct:>9,} {b.cached:>8,} "
                f"{b.calls:>9,} {b.prompt_tokens:>12,} {b.completion_tokens:>11,} "
                f"{b.cost_online:>10.4f} {b.cost_batch:>10.4f} {b.mode:6}{mark}"
            )
        try:
            state = (
                "over budget only through unknowns: the run starts, held under it"
                if check_budget(p, budget)
                else ""
            )
        except BudgetExceeded:
            state = "OVER BUDGET: the run will be refused"
        if p.batches:
            print(
                f"{'':{w}} {'= ' + p.asset:42} {'':>9} {'':>9} {'':>8} {p.calls:>9,} "
                f"{p.prompt_tokens:>12,} {p.completion_tokens:>11,} {p.cost_online:>10.4f} "
                f"{p.cost_batch:>10.4f} ${p.cost:.4f} as set {state}".rstrip()
            )
        if p.note:  # under the asset's total, or on a line of its own where it calls nothing
            print(f"{'' if p.batches else p.asset:{w}} note: {p.note}")
    total = month_total(plans)
    shared = (
        (
            f" ({total.shared_calls:,} calls listed twice counted once: two assets embed the same "
            "prompts into one cache, only the first to run calls)"
        )
        if total.shared_calls
        else ""
    )
    print(
        f"month total: {total.calls:,} calls, estimated ${total.cost:,.4f} in the modes set{shared}; "
        f"every task online ${total.cost_online:,.4f}, every task in batch mode "
        f"${total.cost_batch:,.4f} ({total.batch_jobs:,} Batch-API jobs)"
    )
    bases = {f"{b.model} {b.what}: {b.output_basis}" for p in plans for b in p.batches}
    print("output tokens: " + "; ".join(sorted(bases)) if bases else "")
    scaled = {
        f"{b.model} {b.what}: {b.input_basis}"
        for p in plans
        for b in p.batches
        if b.calls and b.input_basis != APPROX_BASIS
    }
    if scaled:  # what the endpoint billed before is known: the other batches are the count
        print("input tokens: " + "; ".join(sorted(scaled)))
    if any(not b.exact for p in plans for b in p.batches):
        print("* projected: the asset's inputs are not in the lake yet (see the notes)")
    if earlier := sum(b.earlier for p in plans for b in p.batches):
        print(f"cached includes {earlier:,} requests an earlier month of the same run asks first")
    return total
