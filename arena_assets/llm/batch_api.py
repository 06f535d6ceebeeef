"""Requests answered as Batch-API jobs: OpenAI's Batch API (half the online price, its own
rate limits, answers within 24 hours), or any server with its ``/v1/files`` and
``/v1/batches`` routes (the simulated arena's, a proxy's in front of vLLM).

A task in batch mode (``LLMTask.mode``) reaches here from ``run_batch`` with the requests
the cache does not answer (an asset's run has usually submitted their jobs already, before
its first wait: ``llm.ahead``). One round (``llm.batch_jobs``):

1. **Find before submitting.** Every job recorded for this cache namespace, endpoint,
   model and route (``llm.batch_files``) whose requests this run wants is waited for, not
   submitted again: a run killed while its jobs ran, a retried run, a month asking the
   same prompts as a month running beside it. A record written before its job was created
   (a kill in between) is looked up at the endpoint by the request set in the job's
   metadata; only a job that was never created is submitted anew.
2. **Submit the rest**: request lines with ``custom_id`` = the cache key, split at
   OpenAI's limits, each job held under the month's budget (``BatchGuard.hold_job``),
   recorded, uploaded, created.
3. **Wait** in the step, looking 0.5 s after, then twice as long each time up to
   ``task.batch_poll_s`` seconds, each change of a job's counts a line of the run's log; past ``task.batch_wait_s`` the step fails with
   the jobs' ids, still recorded: a rerun picks them up where they are.
4. **Collect**: the output and error files read line by line; each answer parsed as an
   online reply is (``llm.results.reply_result``) and cached when it parses; a line with
   an error, a request missing from both files (an expired or cancelled job's unfinished
   ones, a server that lost them) is a failure of that request, never a silent gap. The
   record is deleted once the answers are cached.

What is left (failures, answers that did not parse while ``parse_retries`` allows another
sample) is asked again: in a follow-up job while it is more than ``ONLINE_SHARE`` of the
round and ``ONLINE_MIN`` requests and fewer than ``MAX_ROUNDS`` rounds ran, else online,
at the online price, one call each (``llm.online``). Why: a few stragglers are not worth
another day's wait, and half price on 5 % of a month is 2.5 % of its bill; a job that
expired whole is worth another job.

Why wait in the step rather than in a sensor: the asset's partition, its checks and the
assets after it mean "the month's rows are written"; a step that submitted and returned
would materialize nothing, and a sensor would have to run the step again anyway to
write them. A waiting step costs a sleeping process and a run slot of the ``llm`` pool;
with ``ARENA_LLM_BATCH_MAX_WAIT_SECONDS`` set it fails instead, and the next run (a retry,
the schedule, a backfill) collects the jobs by their records.

Progress and waits are logged to ``dagster.builtin.arena_assets.batches``, a logger Dagster
captures into the run's log (``dagster.get_dagster_logger``'s namespace) and that prints
like any other outside Dagster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import openai

from arena_assets.llm.batch_files import CHAT_URL, JobRecord, request_line
from arena_assets.llm.batch_jobs import Answer, Collect, log, run_jobs
from arena_assets.llm.budget import BatchGuard
from arena_assets.llm.cache import ResponseCache
from arena_assets.llm.concurrency import Halt
from arena_assets.llm.config import LLMTask
from arena_assets.llm.online import Record, ask_online, cache_answer, chat_body
from arena_assets.llm.plan import input_scale, output_estimate
from arena_assets.llm.results import BatchReport, LLMRequest, LLMResult, reply_result
from arena_assets.llm.tokens import chat_prompt_tokens

MAX_ROUNDS = 3  # batch rounds before what is left is asked online
ONLINE_SHARE, ONLINE_MIN = 0.05, 100  # what is left is asked online at or under these


def answer_in_batches(
    task: LLMTask,
    todo: Sequence[str],
    by_key: dict[str, LLMRequest],
    cache: ResponseCache,
    parse: Callable[[str], Any],
    report: BatchReport,
    record: Record,
    *,
    client: openai.OpenAI,
    guard: BatchGuard | None = None,
) -> None:
    """``run_batch``'s requests ``todo`` (cache keys of ``by_key``) in batch rounds, then
    online (module docstring); every result to ``record``, once."""
    halted = Halt()  # in the caller's context: a sibling's failure stops the wait
    versions = list(dict.fromkeys(by_key[k].prompt_version for k in todo))
    what = f"{task.model} {', '.join(versions)}"
    tries = dict.fromkeys(todo, 0)  # answers of each that did not parse
    per_call = output_estimate(task, cache, versions)[0]
    scale = max(1.0, input_scale(task, cache, versions)[0])
    counted: dict[str, int] = {}

    def line_of(key: str) -> bytes:
        line, counted[key] = chat_line(task, key, by_key[key])
        return line

    def estimate(keys: list[str]) -> tuple[float, float]:
        tokens = scale * sum(counted[k] for k in keys)
        return task.cost(tokens, per_call * len(keys)), task.cost(tokens, 0)

    left, rounds, asked = list(todo), 0, len(todo)
    while left:
        if rounds and (rounds >= MAX_ROUNDS or len(left) <= max(ONLINE_MIN, ONLINE_SHARE * asked)):
            log.info(
                f"{what}: {len(left):,} requests left after {rounds} batch round(s): asked online"
            )
            _online(task, left, tries, by_key, cache, parse, report, record, client, guard)
            return
        rounds, asked = rounds + 1, len(left)
        results, collect = _round(task, set(left), by_key, cache, parse, report)
        done = run_jobs(task, CHAT_URL, left, line_of, cache, client, collect, what=what,
                        estimate=estimate, guard=guard, halted=halted)  # fmt: skip
        report.batches_submitted += done.submitted
        report.batches_resumed += done.resumed
        again = []
        for k in left:
            result = results.get(k) or LLMResult(by_key[k].item_id, "failed", error="not answered")
            if result.status == "ok":
                record(k, result)
            elif result.status == "parse_failed" and tries[k] >= task.parse_retries:
                record(k, result)  # as online mode: 1 + parse_retries answers, then kept
            else:
                tries[k] += result.status == "parse_failed"
                again.append(k)
        if again:
            log.info(
                f"{what}: batch round {rounds}: {len(again):,} of {asked:,} requests to ask again"
            )
        left = again


def chat_line(task: LLMTask, key: str, req: LLMRequest) -> tuple[bytes, int]:
    """The request line of ``req`` (its messages prepared as a call sends them: images read
    now) and its input tokens as the plan counts them. Raises what ``prepare`` raises."""
    messages = req.prepare(req.messages) if req.prepare else req.messages
    return request_line(key, CHAT_URL, chat_body(task, messages)), chat_prompt_tokens(messages)


def _round(
    task: LLMTask,
    keys: set[str],
    by_key: dict[str, LLMRequest],
    cache: ResponseCache,
    parse: Callable[[str], Any],
    report: BatchReport,
) -> tuple[dict[str, LLMResult], Collect]:
    """A round's results (filled as its jobs end) and the ``collect`` that fills them:
    each answer read as an online reply, cached when it parses, billed at batch prices."""
    results: dict[str, LLMResult] = {}

    def collect(job: JobRecord, got: dict[str, Answer]) -> float:
        cost = 0.0
        for k, a in got.items():
            if k not in keys:  # another run's request in a job it shares with this one
                continue
            if a.body is None:
                results[k] = LLMResult(by_key[k].item_id, "failed", error=a.error)
                continue
            result = reply_result(task, by_key[k].item_id, a.body, parse)
            cost += result.cost
            report.batch_requests += 1
            report.prompt_tokens += result.prompt_tokens
            report.completion_tokens += result.completion_tokens
            report.cost += result.cost
            if result.status == "ok":
                cache_answer(task, cache, k, by_key[k], result)
            results[k] = result
        return cost

    return results, collect


def _online(task, keys, tries, by_key, cache, parse, report, record, client, guard) -> None:
    """What batch rounds left, one call each at the online price; a request whose answers
    did not parse asks only the samples left of its ``parse_retries``."""
    groups: dict[int, list[str]] = {}
    for k in keys:
        groups.setdefault(max(task.parse_retries - tries[k], 0), []).append(k)
    for retries, group in sorted(groups.items()):
        online = replace(task.online(), parse_retries=retries)
        ask_online(online, group, by_key, cache, parse, report, record, client=client, guard=guard)
