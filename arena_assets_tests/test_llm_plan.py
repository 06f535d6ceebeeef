"""The bill before the run: a batch's plan against what run_batch then does
and what the simulated arena counts; every LLM asset's plan against its run; the budget
refusing a run before any call; `arena-assets plan` from the shell."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, run_batch
from arena_assets.llm.plan import AssetPlan, BudgetExceeded, check_budget, plan_requests, planning
from arena_assets.simulator import read_prompt_truth, simulate_months, start_endpoint
from arena_assets.simulator.shared import simulated_endpoint
from arena_assets_tests.harness import materialize

CLI = str(Path(sys.executable).with_name("arena-assets"))


def _within(estimate: float, counted: float, tolerance: float = 0.15) -> bool:
    return abs(estimate - counted) <= tolerance * counted


def test_batch_plan_matches_the_run_it_announces(tmp_path):
    """Dedup, cache hits and calls exactly as run_batch then does them; prompt tokens as the
    simulated arena bills them; completion tokens from the cache's history within 15 %."""
    raw = tmp_path / "raw"
    simulate_months(raw, ["2024-01"], 300, seed=7)
    texts = read_prompt_truth(raw, "2024-01")["text"].unique(maintain_order=True).to_list()[:160]
    with start_endpoint(seed=7, truth_root=raw) as ep:
        task = LLMTask(
            model="sim-labeler-large",
            base_url=ep.base_url,
            max_concurrency=8,
            price_input_per_1m=0.15,
            price_output_per_1m=0.6,
        )
        cache = ResponseCache(str(tmp_path / "cache"), "labels")

        def reqs(part: list[str]) -> list[LLMRequest]:  # every prompt twice: dedup
            return [
                LLMRequest(f"{i}-{j}", criteria_messages(t), CRITERIA_VERSION)
                for i, t in enumerate(part)
                for j in range(2)
            ]

        first = plan_requests(task, reqs(texts[:80]), cache, "criteria")
        assert first.output_basis.startswith("bound")  # no history: max_tokens per call
        _, done = run_batch(task, reqs(texts[:80]), cache, parse_criteria)
        assert (first.items, first.distinct, first.cached, first.calls) == (160, 80, 0, done.calls)
        assert first.prompt_tokens == done.prompt_tokens
        assert first.completion_tokens >= done.completion_tokens
        # half old, half new: the old ones are cached, the new ones' answers are estimated
        # from the 80 answers already in the cache
        second = plan_requests(task, reqs(texts[40:120]), cache, "criteria")
        assert second.output_basis.startswith("history")
        calls_before = ep.call_count()
        _, done2 = run_batch(task, reqs(texts[40:120]), cache, parse_criteria)
        assert (
            (second.distinct, second.cached, second.calls) == (80, 40, done2.calls) == (80, 40, 40)
        )
        assert ep.call_count() - calls_before == 40
        assert second.prompt_tokens == done2.prompt_tokens
        assert _within(second.completion_tokens, done2.completion_tokens)
        assert second.cost == pytest.approx(
            task.cost(second.prompt_tokens, second.completion_tokens)
        )
        # planning mode: the same plan, placeholders back, and no call at all
        with planning() as plans:
            results, report = run_batch(task, reqs(texts[100:140]), cache, parse_criteria)
        assert ep.call_count() - calls_before == 40 and report.calls == 0
        assert {r.status for r in results} == {"failed"} and plans[0].calls == 20


def test_budget_message_names_the_figure_and_the_setting():
    plan = AssetPlan("topic_labels", "2024-05")
    from arena_assets.llm.plan import BatchPlan

    plan.batches.append(
        BatchPlan(
            "criteria-v1",
            "gpt-4o-mini",
            "https://api.openai.com/v1",
            calls=1000,
            prompt_tokens=500_000,
            completion_tokens=60_000,
            cost=12.5,
        )
    )
    check_budget(plan, None)
    check_budget(plan, 20.0)
    with pytest.raises(BudgetExceeded) as err:
        check_budget(plan, 10.0)
    line = str(err.value)
    assert "\n" not in line and "$12.50" in line and "ARENA_LLM_BUDGET_USD=10" in line


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "ten", "1e400"])
def test_a_budget_that_is_not_a_dollar_figure_is_one_line(value):
    from arena_assets.llm.plan import parse_budget

    assert parse_budget(" ") is None and parse_budget("0") == 0.0 and parse_budget("12.5") == 12.5
    with pytest.raises(ValueError, match="ARENA_LLM_BUDGET_USD must be") as err:
        parse_budget(value)
    assert "\n" not in str(err.value) and repr(value) in str(err.value)


def test_every_llm_asset_has_a_plan():
    """An asset that calls an LLM (the `llm` pool, or kind openai) is billed by `arena-assets
    plan` and gated by the budget: a new one cannot be added without its planner."""
    from arena_assets.definitions import defs
    from arena_assets.pipeline import LLM_ASSETS as PLANNED
    from arena_assets.pipeline.plan import PLANNERS

    calling = {
        spec.key.to_user_string()
        for a in defs().resolve_asset_graph().assets_defs
        if a.is_executable
        for spec in a.specs
        if getattr(a.node_def, "pool", None) == "llm" or "openai" in spec.kinds
    }
    assert len(calling) >= 7 and calling <= set(PLANNED) == set(PLANNERS)


def test_a_range_plans_each_request_once_in_its_first_month(tmp_path):
    """One run over two months (a backfill range) asks a prompt both months share once, in
    the first; month 2's plan made inside ``one_run`` before either month ran counts the
    calls month 2 then makes, chat and embeddings alike; made alone it counts them again."""
    from arena_assets.llm import embed_texts, embeddings_cache
    from arena_assets.llm.plan import one_run

    raw = tmp_path / "raw"
    simulate_months(raw, ["2024-01"], 200, seed=11)
    texts = read_prompt_truth(raw, "2024-01")["text"].unique(maintain_order=True).to_list()[:150]
    months = {"2024-01": texts[:100], "2024-02": texts[60:150]}  # 40 prompts in both
    with start_endpoint(seed=11, truth_root=raw) as ep:
        chat = LLMTask(
            model="sim-labeler-large",
            base_url=ep.base_url,
            max_concurrency=8,
            price_input_per_1m=0.15,
            price_output_per_1m=0.6,
        )
        embedder = LLMTask(model="sim-embed-large", base_url=ep.base_url, max_concurrency=8)
        labels = ResponseCache(str(tmp_path / "cache"), "labels")
        vectors = embeddings_cache(str(tmp_path / "cache"))

        def month_step(month: str) -> None:
            run_batch(
                chat,
                [
                    LLMRequest(str(i), criteria_messages(t), CRITERIA_VERSION)
                    for i, t in enumerate(months[month])
                ],
                labels,
                parse_criteria,
            )
            embed_texts(embedder, months[month], vectors, batch_size=16)

        def plan(month: str) -> list:
            with planning() as batches:
                month_step(month)
            return batches

        with one_run() as run:
            ranged = {}
            for month in months:
                run.month = month
                ranged[month] = plan(month)
            twice = plan("2024-02")  # month 2 planned again in its own month: its keys are its own
        alone = plan("2024-02")
        for month in months:  # the run, month after month
            before = ep.call_count()
            month_step(month)
            chat_plan, embed_plan = ranged[month]
            assert chat_plan.calls + embed_plan.calls == ep.call_count() - before, month
    assert (
        ranged["2024-02"][0].calls,
        ranged["2024-02"][0].earlier,
        ranged["2024-02"][0].cached,
    ) == (50, 40, 40)
    assert ranged["2024-02"][1].calls == -(-50 // 16) and ranged["2024-02"][1].earlier == 40
    assert (
        ranged["2024-01"][0].earlier == 0
        and "asked by an earlier month"
        in AssetPlan("topic_labels", "2024-02", ranged["2024-02"]).line()
    )
    assert (alone[0].calls, alone[0].earlier, alone[1].calls) == (90, 0, -(-90 // 16))
    assert [(b.calls, b.earlier) for b in twice] == [
        (b.calls, b.earlier) for b in ranged["2024-02"]
    ]
    assert alone[0].prompt_tokens > ranged["2024-02"][0].prompt_tokens


def test_a_pilot_turns_a_first_months_bound_into_an_estimate(tmp_path):
    """A first batch is planned at max_tokens; a pilot asks 30 of its requests (drawn at
    random, one budget for the asset's month, a line as each ends), and the plan made after
    it estimates the rest within 15 % of what the run then counts, and leaves the pilot's
    answers out of the calls; a larger pilot later asks only the answers missing."""
    from arena_assets.llm.pilot import PilotReport, check_answers, run_pilots
    from arena_assets.llm.plan import sampling_pilots

    raw = tmp_path / "raw"
    simulate_months(raw, ["2024-01"], 300, seed=5)
    texts = read_prompt_truth(raw, "2024-01")["text"].unique(maintain_order=True).to_list()[:160]
    requests = [
        LLMRequest(str(i), criteria_messages(t), CRITERIA_VERSION) for i, t in enumerate(texts)
    ]
    with start_endpoint(seed=5, truth_root=raw) as ep:
        task = LLMTask(
            model="sim-labeler-large",
            base_url=ep.base_url,
            max_concurrency=8,
            price_input_per_1m=0.15,
            price_output_per_1m=0.6,
        )
        cache = ResponseCache(str(tmp_path / "cache"), "labels")

        def plan(where: ResponseCache = cache, answers: int = 30) -> AssetPlan:
            with sampling_pilots(answers), planning() as batches:
                run_batch(task, requests, where, parse_criteria)
            return AssetPlan("topic_labels", "2024-01", batches)

        bound = plan()
        assert (
            bound.batches[0].output_bound_only and bound.completion_tokens == 160 * task.max_tokens
        )
        with planning() as batches:  # a run's own plan keeps no sample (it would hold the cache)
            run_batch(task, requests, cache, parse_criteria)
        assert batches[0].pilot is None and bound.batches[0].pilot is not None
        # the same model and prompt in another cache (another asset's): a history of its own
        other = plan(ResponseCache(str(tmp_path / "cache"), "agreement"))
        said: list = []
        pilots = run_pilots([bound, other, bound], 30, done=said.append)
        assert [(p.calls, p.answers) for p in pilots] == [(30, 30)] * 2 and ep.call_count() == 60
        assert said == pilots and plan(other.batches[0].pilot.cache).batches[
            0
        ].output_basis.startswith("history")
        assert run_pilots([bound], 30) == [] and ep.call_count() == 60  # its 30 answers are there
        # one budget for an asset's month: room for one pilot and a half, two batches
        one = pilots[0].cost
        two = AssetPlan(
            "topic_labels",
            "2024-01",
            [
                plan(ResponseCache(str(tmp_path / "cache"), name)).batches[0]
                for name in ("b1", "b2")
            ],
        )
        said.clear()
        before = ep.call_count()
        with pytest.raises(BudgetExceeded) as err:
            run_pilots([two], 30, budget=1.5 * one, done=said.append)
        assert [(p.calls, p.cost) for p in said] == [(30, pytest.approx(one))]
        assert f"stopped after {ep.call_count() - before:,} calls" in str(
            err.value
        )  # every call counted

        # told of the stop, the next asset's month (a budget of its own) is piloted all the same
        def month_of(*names: str) -> AssetPlan:
            return AssetPlan(
                "topic_labels",
                "2024-01",
                [plan(ResponseCache(str(tmp_path / "cache"), n)).batches[0] for n in names],
            )

        said.clear()
        stops: list = []
        run_pilots(
            [month_of("c1", "c2"), month_of("c3")],
            30,
            budget=1.5 * one,
            done=said.append,
            failed=lambda p, exc: stops.append((p.asset, type(exc))),
        )
        assert stops == [("topic_labels", BudgetExceeded)] and [p.calls for p in said] == [30, 30]
        # a larger pilot asks the 20 answers missing, and the plan then rests on 50
        more = run_pilots([plan(answers=50)], 50)
        assert [(p.calls, p.answers) for p in more] == [(20, 20)]
        after = plan()
        assert after.batches[0].output_basis.startswith("history: mean") and after.calls == 110
        assert "over 50 cached answers" in after.batches[0].output_basis
        _, done = run_batch(task, requests, cache, parse_criteria)
    assert done.calls == 110 and _within(after.completion_tokens, done.completion_tokens)
    assert _within(after.prompt_tokens, done.prompt_tokens, 0.0)
    line = pilots[0].line()
    assert "30 answers" in line and "30 cached" in line and "(planned at 256 before)" in line
    assert "; " not in line  # short answers: no warning
    with pytest.raises(ValueError, match="20 to 200 answers"):
        check_answers(10)
    # free-form answers spread wide: the line says how many answers would give 15 %
    wide = PilotReport(
        "model_answers",
        "2024-01",
        "answer-v1",
        "m",
        30,
        30,
        12_000,
        0.01,
        400.0,
        60.0,
        1024,
        still_bound=False,
        projected=True,
    )
    assert "± 30 % at two standard errors (--pilot 120 for 15 %)" in wide.line()
    assert "the run may ask other requests" in wide.line()
    wide.stderr = 150.0
    assert "(more than the 200 a pilot asks for 15 %)" in wide.line()


def test_shared_embeddings_are_counted_once(tmp_path):
    """topic_clusters' planner and embed_texts (prompt_embeddings) key the same texts
    alike, so a month's total counts the calls both list once; other texts, twice."""
    from arena_assets.llm.cache import request_key, text_request_keys
    from arena_assets.llm.embed import EMBED_VERSION, embeddings_cache
    from arena_assets.llm.plan import month_total, plan_embeddings

    task = LLMTask(
        model="text-embedding-3-small",
        base_url="https://api.openai.com/v1",
        price_input_per_1m=0.02,
    )
    cache = embeddings_cache(str(tmp_path))
    texts = [f"prompt number {i} about {w}" for i, w in enumerate(["tea", "rust", "bach"] * 50)]
    by_batch = plan_embeddings(
        task, text_request_keys(task.model, texts, {}, EMBED_VERSION), texts, cache, 64
    )
    one_by_one = plan_embeddings(
        task, [request_key(task.model, t, {}, EMBED_VERSION) for t in texts], texts, cache, 64
    )
    assert by_batch.requests_digest == one_by_one.requests_digest != "" and by_batch.calls == 3
    other = plan_embeddings(
        task, text_request_keys(task.model, texts[1:], {}, EMBED_VERSION), texts[1:], cache, 64
    )
    plans = [
        AssetPlan("topic_clusters", "2024-01", [by_batch]),
        AssetPlan("prompt_embeddings", "2024-01", [one_by_one]),
    ]
    total = month_total(plans)
    assert (total.calls, total.shared_calls, total.cost) == (3, 3, pytest.approx(by_batch.cost))
    assert month_total([plans[0], AssetPlan("prompt_embeddings", "2024-01", [other])]).calls == 6


MONTHS = ("2024-01", "2024-02")
UPSTREAM = "raw_logs,raw_rejects,conversations,battles,arena_leaderboard"
# every LLM asset, prompt_embeddings before topic_clusters: it makes the embedding calls
# they share (one cache), and topic_clusters' plan then finds them cached
RUN_ORDER = (
    "topic_labels",
    "prompt_embeddings",
    "topic_clusters",
    "bench_prompts",
    "model_answers",
    "judgments",
    "judge_human_agreement",
    "over_refusal",
)


def _counted(asset: str, meta: dict) -> tuple[int, int, int]:
    """(calls, prompt tokens, completion tokens) an asset's run counted, from its metadata."""
    if asset == "topic_labels":
        return meta["calls_made"], meta["prompt_tokens"], meta["completion_tokens"]
    reports = [meta["risk_calls"]] if asset == "over_refusal" else meta["calls"].values()
    return (
        sum(r["calls"] for r in reports),
        sum(r["prompt_tokens"] for r in reports),
        sum(r["completion_tokens"] for r in reports),
    )


@pytest.mark.slow
def test_month_plans_against_runs_budget_and_cli(arena_env, monkeypatch):
    env = arena_env
    for task in ("LABELER", "JUDGE", "EMBED", "REWARD"):
        monkeypatch.setenv(f"ARENA_{task}_PRICE_INPUT_PER_1M", "2.5")
        monkeypatch.setenv(f"ARENA_{task}_PRICE_OUTPUT_PER_1M", "10")
    simulate_months(env["ARENA_RAW_ROOT"], list(MONTHS), 500, seed=int(env["ARENA_SIM_WORLD_SEED"]))
    ep = simulated_endpoint(
        f"{env['ARENA_RAW_ROOT']}/_truth", int(env["ARENA_SIM_WORLD_SEED"]), 0.0
    )
    for month in MONTHS:
        assert materialize(month, UPSTREAM).success
    # before any LLM asset ran: topic_labels exact, the bench projected from the settings;
    # a pilot of 30 answers a batch planned at max_tokens gives month 1 an estimate
    out = subprocess.run(
        [CLI, "plan", "--month", MONTHS[0], "--pilot", "30"],
        capture_output=True,
        text=True,
        env={**env, "PATH": str(Path(sys.executable).parent)},
    )
    assert out.returncode == 0, out.stderr
    piloted = {line.split()[1] for line in out.stdout.splitlines() if line.startswith("pilot ")}
    assert {"topic_labels", "over_refusal", "judge_human_agreement"} <= piloted, out.stdout
    for asset in set(RUN_ORDER) - {"bench_prompts"}:  # no second labelling pass configured
        assert f"= {asset}" in out.stdout, asset
    assert "projected" in out.stdout and "month total" in out.stdout
    # the clusters and prompt_embeddings embed the same prompts into one cache: listed under
    # both, paid once in the month's total
    assert "calls listed twice counted once" in out.stdout

    # a budget below the plan refuses an LLM asset with one line, before any call (the
    # evaluators: test_evaluators_assets.py)
    monkeypatch.setenv("ARENA_LLM_BUDGET_USD", "0.0001")
    calls = ep.call_count()
    for asset in ("topic_labels", "prompt_embeddings", "topic_clusters"):
        refused = materialize(MONTHS[0], asset, raise_on_error=False)
        assert not refused.success and ep.call_count() == calls, asset
        failure = next(
            e for e in refused.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE
        )
        message = failure.step_failure_data.user_failure_data.description
        assert (
            f"{asset} {MONTHS[0]}: estimated cost $" in message
            and "ARENA_LLM_BUDGET_USD=0.0001" in message
        )
    monkeypatch.setenv("ARENA_LLM_BUDGET_USD", "")

    compared = []
    for month in MONTHS:  # month 2's answers are estimated from month 1's in the cache
        for asset in RUN_ORDER:
            result = materialize(month, asset)
            assert result.success, (month, asset)
            meta = {
                k: v.value
                for e in result.asset_materializations_for_node(asset)
                for k, v in e.metadata.items()
            }
            if "llm_plan" not in meta:
                continue
            plan = meta["llm_plan"]
            assert plan["exact"] or asset == "topic_clusters"
            if asset == "topic_clusters":
                continue  # naming is projected; embedding calls counted exactly below
            calls, prompt, completion = _counted(asset, meta)
            print(
                month,
                asset,
                plan["calls"],
                calls,
                plan["prompt_tokens"],
                prompt,
                plan["completion_tokens"],
                completion,
            )
            compared.append((month, asset))
            assert plan["calls"] == calls, (month, asset)
            assert _within(plan["prompt_tokens"], prompt), (month, asset, plan, prompt)
            if month == MONTHS[0] and asset in ("topic_labels", "over_refusal"):  # exact batches:
                # the run finds each pilot's 30 answers cached and does not ask them again
                assert [b["cached"] for b in plan["batches"]] == [30] * len(plan["batches"]), plan
            bases = {b["output_basis"].split(":")[0] for b in plan["batches"] if b["calls"]}
            if month == MONTHS[1] or asset in piloted:  # history: month 1's answers, or the pilot's
                assert bases <= {"history", "embeddings", "reward model"}, (month, asset, bases)
                assert _within(plan["completion_tokens"], completion), (
                    month,
                    asset,
                    plan,
                    completion,
                )
            else:  # no history yet: the max_tokens bound, never below
                assert plan["completion_tokens"] >= completion
    assert compared == [
        (m, a)
        for m in MONTHS
        for a in (
            "topic_labels",
            "prompt_embeddings",
            "model_answers",
            "judgments",
            "judge_human_agreement",
            "over_refusal",
        )
    ]


@pytest.mark.parametrize("slice_size", [20_000, 3])
def test_batched_token_counts_equal_one_at_a_time(monkeypatch, slice_size):
    """The plan's polars passes give each request the count of the ``regex`` path, on
    hand-written texts (scripts, digits, punctuation, newlines) and every content shape,
    whether the requests are counted in one slice or in many (each distinct text once)."""
    from arena_assets.llm import tokens
    from arena_assets.llm.tokens import (
        chat_prompt_tokens,
        chat_prompt_tokens_many,
        text_tokens,
        text_tokens_many,
    )

    monkeypatch.setattr(tokens, "_SLICE", slice_size)

    texts = [
        "Hello world!",
        "naïve café, déjà vu",
        "Привет, как дела?",
        "東京の天気は？ 今日は晴れ",
        "123456789 + 0.5 = x\n\n\tdone",
        "```python\nprint('hi')\n```",
        "  spaced   out  ",
        "Ελληνικά και עברית ومرحبا",
        "emoji 🙂🙂 and ÅÄÖ",
        "a" * 5000,
    ]
    requests = [[{"role": "user", "content": t}] for t in texts]
    requests += [
        [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "name": "u",
                "content": [
                    {"type": "text", "text": t},
                    {"type": "image_url", "image_url": {"url": "x"}},
                    "part",
                    {"type": "text"},
                ],
            },
        ]
        for t in texts
    ]
    requests += [[], [{"role": "user", "content": None}], [{"role": "user", "content": {"odd": 1}}]]
    assert chat_prompt_tokens_many(requests) == [chat_prompt_tokens(m) for m in requests]
    assert text_tokens_many(texts + [None, ""]) == [text_tokens(t) for t in texts] + [0, 0]


def test_request_token_counts(real_data):
    """One text at a time (``regex``) gives the polars column counts exactly, on every
    message of the real battles (10+ languages), hence the same closeness to the cl100k
    ``num_tokens`` FastChat stored (English); a request adds OpenAI's framing."""
    import json

    import polars as pl

    from arena_assets.llm.tokens import (
        LONG_TEXT_CHARS,
        TOKEN_REGEX,
        chat_prompt_tokens,
        chat_prompt_tokens_many,
        text_tokens,
        text_tokens_many,
    )
    from arena_assets.tokens import approx_tokens

    texts, reference = [], []
    for line in (
        (real_data / "battles/clean_battles_2024_full_conversations.jsonl").read_text().splitlines()
    ):
        row = json.loads(line)
        for message in row["conversation_a"] + row["conversation_b"]:
            texts.append(message["content"])
            reference.append((row["language"], message["num_tokens"]))
    column = pl.DataFrame({"t": texts}).select(approx_tokens(pl.col("t"))).to_series().to_list()
    ours = [text_tokens(t) for t in texts]
    assert ours == column
    # long texts are counted by polars one at a time too: the regex module agrees on them
    assert (
        [len(TOKEN_REGEX.findall(t)) for t in texts if len(t) > LONG_TEXT_CHARS]
        == [c for t, c in zip(texts, column) if len(t) > LONG_TEXT_CHARS]
        != []
    )
    english = [(o, r) for o, (lang, r) in zip(ours, reference) if lang == "English"]
    assert abs(sum(o for o, _ in english) / sum(r for _, r in english) - 1) < 0.10
    # "Hello"+" world"+"!" = 3 tokens; + 3 for the message + 3 for the reply's priming
    assert chat_prompt_tokens([{"role": "user", "content": "Hello world!"}]) == 9
    assert (
        chat_prompt_tokens(
            [
                {
                    "role": "user",
                    "name": "x",
                    "content": [
                        {"type": "text", "text": "Hello world!"},
                        {"type": "image_url", "image_url": {"url": "x"}},
                    ],
                }
            ]
        )
        == 95
    )
    # a plan counts a batch's requests in one polars pass: the same number per request,
    # for plain strings, parts, names, images, empty and missing contents
    requests = [
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": t}]
        for t in texts[:400]
    ]
    requests += [
        [
            {
                "role": "user",
                "name": "x",
                "content": [
                    {"type": "text", "text": t},
                    {"type": "image_url", "image_url": {"url": "x"}},
                    {"type": "text", "text": None},
                    "plain part",
                ],
            }
        ]
        for t in texts[400:600]
    ]
    requests += [
        [{"role": "user", "content": ""}],
        [{"role": "user", "content": None}],
        [],
        [{"role": "assistant", "content": {"unexpected": "shape"}}],
    ]
    assert chat_prompt_tokens_many(requests) == [chat_prompt_tokens(m) for m in requests]
    assert text_tokens_many(texts + [None, ""]) == ours + [0, 0]


def test_a_backfill_run_over_two_months_is_billed_as_it_runs(arena_env):
    """One Dagster run over two months (a backfill range): month 2's plan, made before
    either month called, leaves out the prompts month 1 embeds first and equals what month
    2 then sends; `arena-assets plan --to` prints that plan, and month 2 alone counts more."""
    import json

    from arena_assets.definitions import defs as load_defs

    env = arena_env
    simulate_months(env["ARENA_RAW_ROOT"], list(MONTHS), 300, seed=int(env["ARENA_SIM_WORLD_SEED"]))
    for month in MONTHS:
        assert materialize(month, "raw_logs,raw_rejects,conversations").success
    cli = [CLI, "plan", "--month", MONTHS[0], "--assets", "prompt_embeddings", "--json"]
    run_env = {**env, "PATH": str(Path(sys.executable).parent)}
    alone, ranged = (
        json.loads(
            subprocess.run(args, capture_output=True, text=True, env=run_env, check=True).stdout
        )
        for args in ([*cli[:3], MONTHS[1], *cli[4:]], [*cli, "--to", MONTHS[1]])
    )
    assert [p["month"] for p in ranged] == list(MONTHS)
    defs = load_defs()
    result = dg.materialize(
        assets=list(defs.assets or []),
        resources=defs.resources,
        selection=dg.AssetSelection.assets("prompt_embeddings"),
        tags={
            "dagster/asset_partition_range_start": MONTHS[0],
            "dagster/asset_partition_range_end": MONTHS[1],
        },
    )
    assert result.success
    meta = {
        e.partition: {k: v.value for k, v in e.metadata.items()}
        for e in result.asset_materializations_for_node("prompt_embeddings")
    }
    for month, printed in zip(MONTHS, ranged):
        plan, counted = meta[month]["llm_plan"], meta[month]["calls"].values()
        assert plan["calls"] == printed["calls"] == sum(r["calls"] for r in counted), month
        assert (
            plan["prompt_tokens"]
            == printed["prompt_tokens"]
            == sum(r["prompt_tokens"] for r in counted)
        )
    # the prompts both months embed, counted apart from the plan: month 2 leaves them out
    from arena_assets.pipeline.embeddings import embedding_inputs
    from arena_assets.storage import Lake

    lake = Lake(env["ARENA_LAKE_ROOT"])
    shared = set(embedding_inputs(lake, MONTHS[0]).texts) & set(
        embedding_inputs(lake, MONTHS[1]).texts
    )
    assert meta[MONTHS[1]]["llm_plan"]["batches"][0]["earlier"] == len(shared) > 0
    assert (
        alone[0]["batches"][0]["cached"] == 0
        and alone[0]["prompt_tokens"] > ranged[1]["prompt_tokens"]
    )
    bad = subprocess.run(
        [*cli[:3], MONTHS[1], "--to", MONTHS[0]], capture_output=True, text=True, env=run_env
    )
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert f"--to {MONTHS[0]} is before --month {MONTHS[1]}" in bad.stderr
    # a pilot stopped by the budget: one line, the plan printed all the same, exit 1
    stopped = subprocess.run(
        [*cli[:4], "--assets", "topic_labels", "--pilot", "20"],
        capture_output=True,
        text=True,
        env={**run_env, "ARENA_LLM_BUDGET_USD": "0.000001"},
    )
    assert stopped.returncode == 1, stopped.stderr
    assert f"topic_labels {MONTHS[0]} pilot: stopped after 0 calls" in stopped.stdout
    assert (
        f"LLM plan for {MONTHS[0]}" in stopped.stdout
        and "pilot stopped for topic_labels" in stopped.stderr
    )


def test_a_range_is_planned_in_the_runs_a_backfill_makes():
    """`plan --to` follows each asset's backfill policy, as `arena-assets backfill` and the
    UI split a range; `--parallel` a month a run, as `backfill --parallel`."""
    from arena_assets.cli.plan import backfill_runs

    months = ["2024-01", "2024-02", "2024-03", "2024-04"]
    assert backfill_runs(months, ("multi_run", 3)) == [months[:3], months[3:]]
    assert backfill_runs(months, ("single_run", None)) == [months]
    assert backfill_runs(months, ("multi_run", 3), parallel=True) == [[m] for m in months]
    assert backfill_runs(months, ("single_run", None), parallel=True) == [months]
    assert backfill_runs(months, (None, None)) == [[m] for m in months]
