"""Asking the judges about sampled battles: LLM judges, reward models, baselines.

A judge is named in a comma-separated list (``ARENA_AGREEMENT_JUDGES``):

- ``longer`` / ``markdown``: baselines, the side with more answer tokens / more markdown
  elements (headers + list items + bold) wins; equal = tie;
- ``reward:<model>``: a reward model on the reward endpoint (vLLM's Pooling API,
  ``POST <server>/pooling`` with the side's whole conversation as chat ``messages``, every
  turn as the voter saw it, the reward as the last value of ``data[0].data``); each side
  scored alone, the higher wins;
- anything else: an LLM judge model on the judge endpoint, asked with the bench's own
  pairwise prompt and parser (``judging.verdicts``), both position orders: game 1 shows
  side a as Assistant A, game 2 side b.

Two rules combine the two games, one per anchor:

- ``pick`` (PPE's accuracy; our choice, as PPE publishes no rule for LLM judges with two
  orders): each verdict counts +2 / +1 / 0 / −1 / −2 for side a (``>>`` counts double),
  the judge's pick is the sign of the sum, so a strong verdict outweighs a weak one the
  other way and two opposite weak verdicts are a tie. One game unparsed: the other alone.
- MT-Bench's agreement uses FastChat's rule instead (``agreement.fastchat_pick``): the
  side both games picked, else a tie ("inconsistent"), whatever the verdicts' strength.

A *flip* is a battle whose two parsed games pick different sides (tie vs win counts as a
flip).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import openai
import orjson
import polars as pl

from arena_assets.judging.verdicts import PROMPT_VERSION, pairwise_messages, parse_verdict
from arena_assets.llm import (
    BatchReport,
    LLMRequest,
    LLMTask,
    ResponseCache,
    concurrently,
    run_batch,
)
from arena_assets.llm.budget import Held, batch_guard
from arena_assets.llm.cache import request_key
from arena_assets.llm.client import calls_in_flight, endpoint_error, make_client, one_core
from arena_assets.llm.concurrency import BatchCancelled, Halt, Halted, endpoint_slots
from arena_assets.llm.keylog import record_keys
from arena_assets.llm.plan import APPROX_BASIS, BatchPlan, asked_before, input_scale, recording
from arena_assets.llm.tokens import chat_prompt_tokens, chat_prompt_tokens_many

BASELINES = ("longer", "markdown")
REWARD_PREFIX = "reward:"
REWARD_VERSION = "reward-v2"  # v2: the real multi-turn messages (v1 sent one flattened turn)
_SIGN = {"A>>B": 2, "A>B": 1, "A=B": 0, "B>A": -1, "B>>A": -2}


@dataclass(frozen=True)
class JudgeSpec:
    name: str  # as listed by the user
    kind: str  # "llm" | "reward" | "baseline"
    model: str  # the served model ("" for a baseline)


def parse_judges(text: str) -> list[JudgeSpec]:
    """The judges of a comma-separated list; duplicates and an empty list are errors."""
    names = [t.strip() for t in (text or "").split(",") if t.strip()]
    if not names:
        raise ValueError(
            "no judges: set ARENA_AGREEMENT_JUDGES, e.g. "
            "'sim-judge,reward:sim-reward,longer,markdown'"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"a judge is listed twice in {names}")
    out = []
    for n in names:
        if n in BASELINES:
            out.append(JudgeSpec(n, "baseline", ""))
        elif n.startswith(REWARD_PREFIX):
            model = n[len(REWARD_PREFIX) :].strip()
            if not model:
                raise ValueError(f"{n!r}: name the reward model after 'reward:'")
            out.append(JudgeSpec(n, "reward", model))
        else:
            out.append(JudgeSpec(n, "llm", n))
    return out


def _side(col_a: str, col_b: str) -> pl.Expr:
    return (
        pl.when(pl.col(col_a) > pl.col(col_b))
        .then(pl.lit("a"))
        .when(pl.col(col_a) < pl.col(col_b))
        .then(pl.lit("b"))
        .otherwise(pl.lit("tie"))
    )


def baseline_verdicts(sample: pl.DataFrame, kind: str) -> pl.DataFrame:
    """``battle_id, pick`` of a baseline (see module docstring)."""
    cols = {"longer": ("tokens_a", "tokens_b"), "markdown": ("markdown_a", "markdown_b")}[kind]
    return sample.select(
        "battle_id",
        _side(*cols).alias("pick"),
        pl.lit(None, pl.String).alias("game1"),
        pl.lit(None, pl.String).alias("game2"),
        pl.lit(None, pl.Float64).alias("reward_a"),
        pl.lit(None, pl.Float64).alias("reward_b"),
        pl.lit("ok").alias("status"),
    )


def combine(game1: str | None, game2: str | None) -> tuple[str | None, bool | None]:
    """(pick 'a' / 'b' / 'tie' or None, flipped or None) of two games' verdicts; game 2
    showed side b as Assistant A."""
    s1 = _SIGN.get(game1) if game1 else None
    s2 = -_SIGN[game2] if game2 in _SIGN else None
    parts = [s for s in (s1, s2) if s is not None]
    if not parts:
        return None, None
    total = sum(parts)
    pick = "a" if total > 0 else "b" if total < 0 else "tie"
    flipped = None if len(parts) < 2 else ((s1 > 0) - (s1 < 0)) != ((s2 > 0) - (s2 < 0))
    return pick, flipped


def _verdict(text: str) -> str:
    v = parse_verdict(text)
    if v is None:
        raise ValueError("no [[verdict]] label in the judge's answer")
    return v


def llm_verdicts(
    task: LLMTask, sample: pl.DataFrame, cache: ResponseCache
) -> tuple[pl.DataFrame, BatchReport]:
    """Two games per battle through ``run_batch`` (cached; one re-ask when unparsed)."""
    reqs = []
    for bid, q, a, b in sample.select("battle_id", "question", "answer_a", "answer_b").iter_rows():
        reqs.append(LLMRequest(f"{bid}|1", pairwise_messages(q, a, b), PROMPT_VERSION))
        reqs.append(LLMRequest(f"{bid}|2", pairwise_messages(q, b, a), PROMPT_VERSION))
    results, report = run_batch(task, reqs, cache, _verdict)
    by_id = {r.item_id: r for r in results}
    rows = []
    for bid in sample["battle_id"]:
        g1, g2 = by_id[f"{bid}|1"], by_id[f"{bid}|2"]
        v1 = g1.value if g1.status == "ok" else None
        v2 = g2.value if g2.status == "ok" else None
        pick, _ = combine(v1, v2)
        statuses = {g1.status, g2.status}
        status = (
            "ok"
            if statuses == {"ok"}
            else "failed"
            if statuses == {"failed"}
            else "parse_failed"
            if pick is None
            else "partial"
        )
        rows.append(
            {
                "battle_id": bid,
                "pick": pick,
                "game1": v1,
                "game2": v2,
                "reward_a": None,
                "reward_b": None,
                "status": status,
            }
        )
    return pl.DataFrame(rows, schema=VERDICT_COLUMNS), report


VERDICT_COLUMNS = {
    "battle_id": pl.String,
    "pick": pl.String,
    "game1": pl.String,
    "game2": pl.String,
    "reward_a": pl.Float64,
    "reward_b": pl.Float64,
    "status": pl.String,
}


def pooling_root(base_url: str) -> str:
    """vLLM serves /pooling at the server root: the base URL without a trailing /v1."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _reward(client: openai.OpenAI, task: LLMTask, conversation: str) -> tuple[float, int]:
    """The side's reward and the prompt tokens the server billed (vLLM's ``usage``)."""
    body = {"model": task.model, "messages": orjson.loads(conversation)}
    try:
        resp = client.post("/pooling", body=body, cast_to=object)
    except openai.APIError as exc:
        named = endpoint_error(task, exc)
        if named is None:
            raise
        raise named from exc
    data = resp.get("data") if isinstance(resp, dict) else None
    value = (
        data[0].get("data")
        if isinstance(data, list) and data and isinstance(data[0], dict)
        else None
    )
    while isinstance(value, list) and value:  # per-token rewards: the last token's
        value = value[-1]
    if not isinstance(value, int | float) or value != value:
        raise ValueError(f"no reward in the pooling reply: {str(resp)[:200]}")
    usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
    tokens = usage.get("prompt_tokens")
    return float(value), tokens if isinstance(tokens, int) and tokens > 0 else 0


def _reward_key(task: LLMTask, conversation: str) -> str:
    return request_key(task.model, [conversation], {}, REWARD_VERSION)


def reward_verdicts(
    task: LLMTask, sample: pl.DataFrame, cache: ResponseCache
) -> tuple[pl.DataFrame, BatchReport]:
    """Both sides of every battle scored by a reward model (cached per (model,
    conversation)); a side that fails after the client's retries leaves the battle ``failed``."""
    report = BatchReport(
        model=task.model, base_url=task.base_url, items=2 * sample.height, started_at=time.time()
    )
    started = time.monotonic()
    items = {}
    for a, b in sample.select("conversation_a", "conversation_b").iter_rows():
        for conv in (a, b):
            items[_reward_key(task, conv)] = conv
    report.unique_requests = len(items)
    scores: dict[str, float | None] = {}
    for k in items:
        hit = cache.get(k)
        if hit is not None:
            scores[k] = float(hit["content"])
    report.cache_hits = len(scores)
    todo = [k for k in items if k not in scores]
    if (plans := recording()) is not None:  # llm.plan.planning(): count, do not call
        before = asked_before(cache, todo)  # asked by an earlier month of a range: cached by then
        plans.append(
            plan_scores(
                task,
                [orjson.loads(items[k]) for k in todo if k not in before],
                2 * sample.height,
                len(items),
                len(scores),
                earlier=len(before),
                cache=cache,
            )
        )
        return _placeholders(sample), BatchReport(
            model=task.model, base_url=task.base_url, items=2 * sample.height
        )
    sides = sample.select("battle_id", "conversation_a", "conversation_b").rows()
    record_keys(  # each side's score, by battle (llm.keylog)
        cache.namespace,
        [f"{bid}|{side}" for bid, _, _ in sides for side in "ab"],
        [_reward_key(task, conv) for _, a, b in sides for conv in (a, b)],
    )
    lock = threading.Lock()
    if todo:
        client = make_client(task, base_url=pooling_root(task.base_url))

        # as run_batch: the endpoint's slots shared with the batches asked at the same time
        # (llm.concurrently), and a failure here or there stops both
        halted, slots = Halt(), endpoint_slots(task)
        guard = batch_guard(len(todo))  # the month's budget, when one is set (llm.budget)
        # the worst case counts input as the plan does, at the endpoint's billing where known
        factor = max(1.0, input_scale(task, cache, [REWARD_VERSION])[0]) if guard else 1.0

        def work(k: str) -> None:
            if halted():
                return
            counted = chat_prompt_tokens(
                orjson.loads(items[k])
            )  # before the call: kept with its score
            worst = task.cost(factor * counted, 0) if guard else 0.0
            try:
                with slots:
                    if halted():
                        return
                    with Held(
                        guard, worst, halted
                    ) as call:  # over the budget: not sent, the batch stops
                        try:
                            value, tokens = _reward(client, task, items[k])
                        except (
                            openai.APIError,
                            ValueError,
                        ):  # this side unscored, the batch goes on
                            raise
                        except BaseException:  # the batch fails: halted before the settle wakes
                            halted.fail()  # the calls waiting for room, so none is sent
                            raise
                        call.cost = task.cost(tokens, 0) if tokens else worst
            except Halted:  # the batch stopped while this call waited for room: not sent
                return
            except (openai.APIError, ValueError):
                value, tokens = None, 0
            except BaseException:
                halted.fail()
                raise
            if value is not None:
                cache.put(
                    k,
                    model=task.model,
                    prompt_version=REWARD_VERSION,
                    content=repr(value),
                    prompt_tokens=tokens,
                    counted_prompt_tokens=counted,
                )  # llm.plan.input_scale
            with lock:
                scores[k] = value
                report.calls += 1
                report.prompt_tokens += tokens
                report.cost += task.cost(tokens, 0)

        try:  # an unreachable endpoint or a refused key raises LLMEndpointError from here
            with (
                calls_in_flight(),
                ThreadPoolExecutor(
                    max_workers=task.max_concurrency,
                    thread_name_prefix="reward",
                    initializer=one_core(),
                ) as pool,
            ):
                list(pool.map(work, todo))
            if halted.by_sibling:
                raise BatchCancelled(
                    f"{task.model}: stopped, a batch asked at the same time failed"
                )
        finally:
            cache.flush()
        cache.settle()
    report.elapsed_s = time.monotonic() - started
    rows = []
    for bid, a, b in sample.select("battle_id", "conversation_a", "conversation_b").iter_rows():
        ra, rb = scores[_reward_key(task, a)], scores[_reward_key(task, b)]
        pick = None if ra is None or rb is None else "a" if ra > rb else "b" if rb > ra else "tie"
        rows.append(
            {
                "battle_id": bid,
                "pick": pick,
                "game1": None,
                "game2": None,
                "reward_a": ra,
                "reward_b": rb,
                "status": "ok" if pick else "failed",
            }
        )
    report.statuses["ok"] = sum(r["status"] == "ok" for r in rows)
    report.statuses["failed"] = len(rows) - report.statuses["ok"]
    return pl.DataFrame(rows, schema=VERDICT_COLUMNS), report


def plan_scores(
    task: LLMTask,
    conversations: list[list[dict]],
    items: int,
    distinct: int,
    cached: int,
    earlier: int = 0,
    cache: ResponseCache | None = None,
) -> BatchPlan:
    """What ``reward_verdicts`` would send: one ``/pooling`` call per side not cached, its
    input tokens counted as the chat route bills a conversation (scaled to what the endpoint
    billed for ``cache``'s earlier scores: ``llm.plan.input_scale``); a reward has no output."""
    counted = sum(chat_prompt_tokens_many(conversations))
    scale, basis = (
        input_scale(task, cache, [REWARD_VERSION])
        if cache is not None and conversations
        else (1.0, APPROX_BASIS)
    )
    plan = BatchPlan(
        REWARD_VERSION,
        task.model,
        task.base_url,
        items=items,
        distinct=distinct,
        cached=cached + earlier,
        earlier=earlier,
        calls=len(conversations),
        prompt_tokens=round(scale * counted),  # exact for a scale of 1
        output_basis="reward model: no output tokens",
        input_basis=basis,
        input_scale=scale,
    )
    return plan.price(task)


def _placeholders(sample: pl.DataFrame) -> pl.DataFrame:
    """A planned batch's verdicts: none (status failed), as ``run_batch`` answers a plan."""
    return sample.select(
        "battle_id",
        *(
            pl.lit(None, VERDICT_COLUMNS[c]).alias(c)
            for c in ("pick", "game1", "game2", "reward_a", "reward_b")
        ),
        pl.lit("failed").alias("status"),
    )


def ask_judges(
    specs: Sequence[JudgeSpec],
    sample: pl.DataFrame,
    *,
    judge_task: LLMTask | None,
    reward_task: LLMTask | None,
    cache_of,
) -> tuple[pl.DataFrame, dict[str, dict]]:
    """Every judge's verdict on every sampled battle: ``judge, judge_kind`` + VERDICT_COLUMNS;
    ``cache_of(namespace)`` gives the ResponseCache of a judge. Returns also each LLM /
    reward judge's call report."""
    for spec in specs:  # a missing endpoint is said before any call
        if spec.kind == "reward" and reward_task is None:
            raise ValueError(f"{spec.name}: no reward endpoint configured (ARENA_REWARD_BASE_URL)")
        if spec.kind not in ("baseline", "reward") and judge_task is None:
            raise ValueError(f"{spec.name}: no judge endpoint configured (ARENA_JUDGE_BASE_URL)")

    def verdicts(spec: JudgeSpec) -> tuple[pl.DataFrame, BatchReport | None]:
        if spec.kind == "baseline":
            return baseline_verdicts(sample, spec.name), None
        if spec.kind == "reward":
            task = dataclasses.replace(reward_task, model=spec.model)
            return reward_verdicts(task, sample, cache_of(f"agreement/reward/{spec.model}"))
        task = dataclasses.replace(judge_task, model=spec.model)
        return llm_verdicts(task, sample, cache_of(f"agreement/judge/{spec.model}"))

    frames, reports = [], {}
    # every judge at once (llm.concurrently: one endpoint's calls share its concurrency)
    for spec, (frame, rep) in zip(specs, concurrently([partial(verdicts, spec) for spec in specs])):
        if rep is not None:
            reports[spec.name] = rep.as_metadata()
        frames.append(frame.with_columns(judge=pl.lit(spec.name), judge_kind=pl.lit(spec.kind)))
    return pl.concat(frames) if frames else pl.DataFrame(schema=VERDICT_COLUMNS), reports
