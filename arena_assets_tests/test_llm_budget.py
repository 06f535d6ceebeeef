"""ARENA_LLM_BUDGET_USD while the calls run: a month whose plan is over the
budget only at its max_tokens bound starts, finishes when its real bill fits, stops early
when its answers say it will not, and never spends past the budget; what it received is
cached. Spending is counted from the simulated arena's `usage`, over HTTP."""

from __future__ import annotations

import pytest

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, embed_texts, run_batch
from arena_assets.llm import budget as budget_module
from arena_assets.llm.budget import Spending, spending
from arena_assets.llm.plan import AssetPlan, BatchPlan, BudgetExceeded, check_budget, plan_requests
from arena_assets.llm.tokens import chat_prompt_tokens
from arena_assets.simulator import read_prompt_truth, simulate_months, start_endpoint


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    simulate_months(raw, ["2024-01"], 400, seed=7)
    texts = read_prompt_truth(raw, "2024-01")["text"].unique(maintain_order=True).to_list()[:240]
    with start_endpoint(seed=7, truth_root=raw) as ep:
        yield ep, texts


def _task(ep, concurrency: int = 8) -> LLMTask:
    return LLMTask(
        model="sim-labeler-large",
        base_url=ep.base_url,
        max_concurrency=concurrency,
        price_input_per_1m=0.15,
        price_output_per_1m=0.6,
    )


def _requests(texts: list[str]) -> list[LLMRequest]:
    return [LLMRequest(str(i), criteria_messages(t), CRITERIA_VERSION) for i, t in enumerate(texts)]


def _full_bill(ep, texts, tmp_path) -> float:
    """What the batch costs with no budget (the simulated arena answers alike every time)."""
    _, report = run_batch(
        _task(ep), _requests(texts), ResponseCache(str(tmp_path / "free"), "labels"), parse_criteria
    )
    return report.cost


def test_check_budget_refuses_what_is_known_to_be_over():
    def plan(basis: str, exact: bool = True) -> AssetPlan:
        b = BatchPlan(
            "criteria-v1",
            "m",
            "https://api.openai.com/v1",
            calls=1000,
            prompt_tokens=400_000,
            completion_tokens=256_000,
            output_basis=basis,
            exact=exact,
        )
        return AssetPlan(
            "topic_labels",
            "2024-05",
            [b.price(LLMTask("m", "https://x/v1", price_input_per_1m=10, price_output_per_1m=30))],
        )

    history, bound = (
        plan("history: mean 256 tokens over 900 cached answers"),
        plan("bound: max_tokens 256"),
    )
    assert history.cost == pytest.approx(11.68) and history.batches[0].input_cost == pytest.approx(
        4.0
    )
    assert check_budget(history, 12.0) == "" and check_budget(bound, None) == ""
    with pytest.raises(BudgetExceeded):  # estimated from history: over is over
        check_budget(history, 10.0)
    line = check_budget(bound, 10.0)  # over only at the bound, its input alone fits: it starts
    assert (
        "\n" not in line
        and "only through what it cannot know yet" in line
        and "at least $4.00" in line
    )
    with pytest.raises(BudgetExceeded) as err:  # even its input is over: refused
        check_budget(bound, 3.0)
    assert "at least $4.00" in str(err.value) and "ARENA_LLM_BUDGET_USD=3" in str(err.value)
    assert check_budget(plan("history: x", exact=False), 1.0)  # its calls are projected: it starts


def test_a_month_over_only_at_its_bound_runs_within_the_budget(arena, tmp_path):
    ep, texts = arena
    bill = _full_bill(ep, texts, tmp_path)
    cache = ResponseCache(str(tmp_path / "c"), "labels")
    planned = plan_requests(_task(ep), _requests(texts), cache, "criteria")
    budget = 1.2 * bill
    assert planned.output_bound_only and planned.cost > budget > planned.input_cost
    assert check_budget(AssetPlan("topic_labels", "2024-01", [planned]), budget)  # not refused
    before = ep.call_count()
    with spending(budget, "topic_labels 2024-01") as held:
        results, report = run_batch(_task(ep), _requests(texts), cache, parse_criteria)
    assert {r.status for r in results} == {
        "ok"
    } and ep.call_count() - before == report.calls == len(texts)
    assert held.spent == pytest.approx(bill) and held.reserved == pytest.approx(0.0, abs=1e-12)


def test_its_answers_stop_a_month_that_will_not_fit(arena, tmp_path):
    ep, texts = arena
    bill = _full_bill(ep, texts, tmp_path)
    cache = ResponseCache(str(tmp_path / "c"), "labels")
    before = ep.call_count()
    with pytest.raises(BudgetExceeded) as err, spending(0.5 * bill, "topic_labels 2024-01") as held:
        run_batch(_task(ep), _requests(texts), cache, parse_criteria)
    made = ep.call_count() - before
    line = str(err.value)
    assert (
        "\n" not in line
        and "calls left bring the month to at least" in line
        and "ARENA_LLM_BUDGET_USD" in line
    )
    # stopped once 50 answers gave its cost per call, not at the budget: ~a fifth of the bill
    assert budget_module.MIN_ANSWERS <= made <= budget_module.MIN_ANSWERS + 8 and held.calls == made
    assert held.spent < 0.3 * bill
    # what it received is cached: the rerun with room pays only for the rest
    with spending(2 * bill, "topic_labels 2024-01"):
        _, report = run_batch(_task(ep), _requests(texts), cache, parse_criteria)
    assert report.cache_hits == made and report.calls == len(texts) - made


@pytest.mark.parametrize("share", [0.7, 0.98])
def test_the_spending_never_passes_the_budget(arena, tmp_path, monkeypatch, share):
    """The projection off: the reservations alone hold 32 calls in flight under it; near
    the budget fewer fly at once, and it stops only at a call that cannot fit alone."""
    ep, texts = arena
    bill = _full_bill(ep, texts, tmp_path)
    monkeypatch.setattr(budget_module, "MIN_ANSWERS", 10**9)
    before = ep.call_count()
    with (
        pytest.raises(BudgetExceeded) as err,
        spending(share * bill, "topic_labels 2024-01") as held,
    ):
        run_batch(
            _task(ep, concurrency=32),
            _requests(texts),
            ResponseCache(str(tmp_path / "c"), "labels"),
            parse_criteria,
        )
    assert "the next call may cost up to" in str(err.value)
    # it went as far as the budget allowed: the call that stopped it did not fit alone
    task = _task(ep)
    worst = max(
        task.cost(chat_prompt_tokens(r.messages), task.max_tokens) for r in _requests(texts)
    )
    assert share * bill - worst <= held.spent <= share * bill
    assert ep.call_count() - before == held.calls < len(texts)


def test_embeddings_under_a_budget(arena, tmp_path):
    ep, texts = arena
    task = LLMTask(
        model="sim-embed-small", base_url=ep.base_url, max_concurrency=4, price_input_per_1m=0.02
    )
    cache = ResponseCache(str(tmp_path / "e"), "embeddings")
    _, free = embed_texts(
        task, texts, ResponseCache(str(tmp_path / "free"), "embeddings"), batch_size=16
    )
    before = ep.call_count()
    with (
        pytest.raises(BudgetExceeded),
        spending(0.5 * free.cost, "prompt_embeddings 2024-01") as held,
    ):
        embed_texts(task, texts, cache, batch_size=16)
    stopped = held.calls
    assert 0 < held.spent <= 0.5 * free.cost and ep.call_count() - before == stopped < free.calls
    with spending(free.cost, "prompt_embeddings 2024-01"):  # the rest, the received vectors cached
        _, report = embed_texts(task, texts, cache, batch_size=16)
    assert (report.cache_hits, report.calls) == (16 * stopped, free.calls - stopped)


def test_a_call_waits_for_room_and_a_stopped_month_sends_nothing_more():
    import threading

    held = Spending(1.0, "x 2024-01")
    guard = held.batch(10)
    guard.reserve(0.6)
    sent = threading.Event()

    def second() -> None:  # 0.6 in flight + 0.6 > 1.0: it waits for the first to settle
        guard.reserve(0.6)
        sent.set()

    waiter = threading.Thread(target=second)
    waiter.start()
    assert not sent.wait(0.2)  # still waiting (a bound on the wait, not a synchronization)
    guard.settle(0.6, 0.1)  # the first cost 0.1: room for the second
    waiter.join(5)
    assert sent.is_set() and held.reserved == pytest.approx(0.6)
    with pytest.raises(
        BudgetExceeded
    ) as err:  # 0.1 spent + 0.6 held + 0.6: and 0.1 + 0.6 + 0.4 fits
        guard.settle(0.6, 0.5)
        guard.reserve(0.5)  # 0.6 spent + 0.5 > 1.0, nothing in flight: it cannot fit alone
    assert "more than is left" in str(err.value) and held.spent == pytest.approx(0.6)
    with pytest.raises(BudgetExceeded):  # room again, but the month has stopped
        held.batch(5).reserve(0.1)
    assert held.reserved == pytest.approx(0.0)


def test_a_call_that_waited_for_room_is_not_sent_once_its_batch_stopped():
    """A sibling batch fails while a call waits for room: the call is not sent, and though
    it would not fit alone then, it does not stop the month (whenever it reached the
    guard: deterministic)."""
    import threading

    from arena_assets.llm.budget import Held
    from arena_assets.llm.concurrency import Halt, Halted

    held = Spending(1.0, "x 2024-01")
    guard, halt, outcome = held.batch(10), Halt(), []
    guard.reserve(0.6)

    def second() -> None:  # 0.6 in flight + 0.6 > 1.0: waits for room
        try:
            with Held(guard, 0.6, halt):
                outcome.append("sent")
        except Halted:
            outcome.append("not sent")

    waiter = threading.Thread(target=second)
    waiter.start()
    halt.fail()  # the batch stops while the second call waits (or before it reaches the guard)
    guard.settle(0.6, 0.5)  # 0.5 spent + 0.6 > 1.0 with nothing in flight: would stop the month
    waiter.join(5)
    assert outcome == ["not sent"] and held.stopped is None
    assert (held.in_flight, held.calls, held.reserved, held.spent) == (
        0,
        1,
        0.0,
        pytest.approx(0.5),
    )


def test_a_sliced_batch_is_projected_whole(arena, tmp_path):
    """A production month's labels are asked 50,000 requests at a time (``run_sliced``):
    the projection takes the whole batch's calls left, not a slice's, so a month at half
    its bill stops ~50 answers in, not at the budget."""
    import polars as pl

    from arena_assets.llm.sliced import run_sliced

    ep, texts = arena
    bill = _full_bill(ep, texts, tmp_path)
    requests = _requests(texts)
    before = ep.call_count()
    with pytest.raises(BudgetExceeded) as err, spending(0.5 * bill, "topic_labels 2024-01") as held:
        run_sliced(
            _task(ep),
            ResponseCache(str(tmp_path / "c"), "labels"),
            parse_criteria,
            pl.Series("identity", texts),
            lambda rows: [requests[i] for i in rows],
            lambda rows, results: None,
            slice_size=60,
        )  # 4 slices of ~60
    assert "calls left bring the month to at least" in str(err.value)
    assert ep.call_count() - before == held.calls <= budget_module.MIN_ANSWERS + 8


def test_what_a_failed_call_or_a_reply_without_usage_costs():
    """A refused call (4xx) was not generated: nothing; a timeout, a 5xx or a reply whose
    usage says no token count may have been billed: the call's worst case."""
    import httpx
    import openai

    from arena_assets.llm.batch import billed
    from arena_assets.llm.budget import failed_cost

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")

    def status(code: int) -> openai.APIStatusError:
        return openai.APIStatusError("x", response=httpx.Response(code, request=request), body=None)

    assert failed_cost(status(429), 0.5) == 0.0 and failed_cost(status(400), 0.5) == 0.0
    assert (
        failed_cost(status(503), 0.5) == 0.5
        and failed_cost(openai.APITimeoutError(request=request), 0.5) == 0.5
    )
    assert failed_cost(ValueError("a cut body"), 0.5) == 0.5
    task = LLMTask("m", "http://127.0.0.1:9/v1", price_input_per_1m=1.0, price_output_per_1m=2.0)
    assert billed(
        task, {"usage": {"prompt_tokens": 1000, "completion_tokens": 500}}, 9.0
    ) == pytest.approx(0.002)
    assert (
        billed(task, {"usage": {"total_tokens": 1500}}, 9.0) == 9.0 and billed(task, {}, 9.0) == 9.0
    )
