"""Requests answered as Batch-API jobs: OpenAI's Batch API (half the online price, its own
rate limits, answers within 24 hours), or any server with its ``/v1/files`` and
``/v1/batches`` routes (the simulated arena's, a proxy's in front of vLLM).

A task in batch mode (``LLMTask.mode``) reaches here from ``run_batch`` with the requests
the cache does not answer. One round:

1. **Find before submitting.** Every job recorded for this cache namespace, endpoint,
   model and route (``llm.batch_files``) whose requests this run wants is waited for, not
   submitted again: a run killed while its jobs ran, a retried run, a month asking the
   same prompts as a month running beside it. A record written before its job was created
   (a kill in between) is looked up at the endpoint by the request set in the job's
   metadata; only a job that was never created is submitted anew.
2. **Submit the rest**: request lines with ``custom_id`` = the cache key, split at
   OpenAI's limits, each job held under the month's budget (``BatchGuard.hold_job``),
   recorded, uploaded, created.
3. **Wait** in the step, looking every ``task.batch_poll_s`` seconds, each change of a
   job's counts a line of the run's log; past ``task.batch_wait_s`` the step fails with
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

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import openai

from arena_assets.llm.batch_files import (
    CHAT_URL,
    METADATA_KEY,
    JobRecord,
    JobRecords,
    read_output,
    request_line,
    request_set,
    split_lines,
)
from arena_assets.llm.budget import BatchGuard
from arena_assets.llm.cache import ResponseCache
from arena_assets.llm.client import LLMEndpointError, endpoint_error
from arena_assets.llm.concurrency import BatchCancelled, Halt
from arena_assets.llm.config import LLMTask
from arena_assets.llm.online import Record, ask_online, cache_answer, chat_body
from arena_assets.llm.plan import input_scale, output_estimate
from arena_assets.llm.results import BatchReport, LLMRequest, LLMResult, reply_result
from arena_assets.llm.tokens import chat_prompt_tokens

TERMINAL = ("completed", "failed", "expired", "cancelled")
MAX_ROUNDS = 3  # batch rounds before what is left is asked online
ONLINE_SHARE, ONLINE_MIN = 0.05, 100  # what is left is asked online at or under these
COMPLETION_WINDOW = "24h"

log = logging.getLogger("dagster.builtin.arena_assets.batches")


class BatchesPending(LLMEndpointError):
    """Jobs still running when the run's wait (``batch_wait_s``) ended; they stay recorded."""


@dataclass(frozen=True)
class Answer:
    body: dict | None  # the response body of a 2xx line
    error: str | None = None  # why there is none


# a job's answers (cache key -> answer, one per request of the job) -> what they cost
Collect = Callable[[JobRecord, dict[str, Answer]], float]


@dataclass
class JobsDone:
    submitted: int = 0
    resumed: int = 0


def run_jobs(
    task: LLMTask,
    url: str,
    wanted: Sequence[str],
    line_of: Callable[[str], bytes],
    cache: ResponseCache,
    client: openai.OpenAI,
    collect: Collect,
    *,
    what: str,
    estimate: Callable[[list[str]], tuple[float, float]] | None = None,
    guard: BatchGuard | None = None,
    halted: Halt | None = None,
) -> JobsDone:
    """One round (module docstring, 1-4) for the requests ``wanted`` (cache keys):
    ``line_of(key)`` its request line (an OSError or ValueError fails that request without
    a line), ``collect`` called once per finished job with an answer for every request of
    it, ``estimate(keys)`` the (estimate, least) cost of a job under a budget."""
    records = JobRecords(cache)
    wanted_set = set(wanted)
    done = JobsDone()
    adopted = _find(records, task, url, wanted_set, client)
    covered = {k for r in adopted for k in r.keys} & wanted_set
    held: dict[str, float | None] = {r.request_set: None for r in adopted}
    done.resumed = len(adopted)
    for r in adopted:
        log.info(
            f"{what}: waiting for batch {r.batch_id} ({len(r.keys):,} requests), submitted earlier"
        )
    early: dict[str, Answer] = {}

    def lines():
        for k in wanted:
            if k in covered:
                continue
            try:
                yield k, line_of(k)
            except (OSError, ValueError) as exc:  # e.g. an image that cannot be read
                early[k] = Answer(None, f"{type(exc).__name__}: {exc}")

    jobs = list(adopted)
    for job in split_lines(lines()):
        keys = [k for k, _ in job]
        record = JobRecord(request_set(task.base_url, task.model, url, keys), task.base_url,
                           task.model, url, keys, what=what)  # fmt: skip
        if guard is not None and estimate is not None:
            held[record.request_set] = guard.hold_job(*estimate(keys), len(keys))
        records.write(record)  # before the upload: a kill from here on finds it
        data = b"\n".join(line for _, line in job) + b"\n"
        try:
            uploaded = client.files.create(
                file=(f"{record.request_set}.jsonl", data), purpose="batch"
            )
            record.input_file_id = uploaded.id
            records.write(record)
            created = client.batches.create(
                input_file_id=uploaded.id,
                endpoint=url,  # type: ignore[arg-type]
                completion_window=COMPLETION_WINDOW,
                metadata={METADATA_KEY: record.request_set},
            )
        except openai.APIError as exc:
            raise _api_error(task, exc, "submitting a batch") from exc
        record.batch_id = created.id
        records.write(record)
        done.submitted += 1
        jobs.append(record)
        log.info(
            f"{what}: submitted batch {created.id} ({len(keys):,} requests, {len(data):,} bytes)"
        )
    if early:
        collect(JobRecord("", task.base_url, task.model, url, list(early)), early)
    _wait(task, jobs, held, records, wanted_set, cache, client, collect, what, guard, halted)
    return done


def _find(
    records: JobRecords, task: LLMTask, url: str, wanted: set[str], client: openai.OpenAI
) -> list[JobRecord]:
    """The recorded jobs this round waits for instead of submitting (module docstring, 1)."""
    found = []
    for record in records.all():
        if not record.matches(task.base_url, task.model, url) or wanted.isdisjoint(record.keys):
            continue
        if not record.batch_id:  # killed between its record and its creation: created?
            job = _job_of(client, record.request_set, task)
            if job is None:
                records.delete(record)  # never created: its requests are submitted anew
                continue
            record.batch_id, record.input_file_id = job.id, job.input_file_id
            records.write(record)
        found.append(record)
    return found


def _job_of(client: openai.OpenAI, name: str, task: LLMTask):
    """The endpoint's job whose metadata names request set ``name``, or None."""
    try:
        for job in client.batches.list(limit=100):
            if (job.metadata or {}).get(METADATA_KEY) == name:
                return job
    except openai.APIError as exc:
        raise _api_error(task, exc, "listing the batches") from exc
    return None


def _wait(task, jobs, held, records, wanted, cache, client, collect, what, guard, halted) -> None:
    """Until every job has ended, each collected as it ends (module docstring, 3-4)."""
    started = time.monotonic()
    seen: dict[str, tuple] = {}
    pending = {r.batch_id: r for r in jobs}
    while pending:
        for batch_id, record in list(pending.items()):
            try:
                job = client.batches.retrieve(batch_id)
            except openai.APIError as exc:
                raise _api_error(task, exc, f"reading batch {batch_id}") from exc
            counts = job.request_counts
            state = (job.status, *(
                (counts.completed, counts.failed, counts.total) if counts else (0, 0, len(record.keys))
            ))  # fmt: skip
            if state != seen.get(batch_id):
                seen[batch_id] = state
                log.info(
                    f"{what}: batch {batch_id} {state[0]}, {state[1]:,}/{state[3]:,} requests "
                    f"done, {state[2]:,} failed, {time.monotonic() - started:.0f}s waited"
                )
            if job.status not in TERMINAL:
                continue
            answers = _answers(task, client, job, record)
            cost = collect(record, answers)
            if guard is not None:
                guard.settle_job(held.get(record.request_set), cost, len(answers))
            cache.flush()  # the answers on disk before the record goes
            rest = [k for k in record.keys if k not in wanted]
            if not rest or len(cache.values(rest, "key")) == len(rest):
                records.delete(record)  # else left for the run that wants the rest
            pending.pop(batch_id)
        if not pending:
            return
        if task.batch_wait_s is not None and time.monotonic() - started >= task.batch_wait_s:
            ids = ", ".join(pending)
            raise BatchesPending(
                f"{what}: batch {ids} still running after {task.batch_wait_s:g}s "
                "(ARENA_LLM_BATCH_MAX_WAIT_SECONDS); it stays recorded with the cache, and "
                "the next run of this month collects it instead of submitting it again"
            )
        if halted is not None and halted.wait(task.batch_poll_s):
            raise BatchCancelled(f"{task.model}: stopped, a batch asked at the same time failed")


def _answers(task: LLMTask, client: openai.OpenAI, job, record: JobRecord) -> dict[str, Answer]:
    """An answer for every request of ``record`` from its ended ``job``'s files."""
    if job.status == "failed":  # the endpoint refused the job itself (its file, a quota)
        errors = "; ".join(
            f"{e.code}: {e.message}" for e in ((job.errors.data or []) if job.errors else [])
        )
        raise LLMEndpointError(
            f"{task.base_url} refused batch {job.id} of {task.model} ({errors or 'no reason given'}); "
            "nothing of it was answered. Fix the cause (a quota: wait, or set the task's MODE "
            "to online) and run again: its requests are submitted anew"
        )
    keys = set(record.keys)
    out: dict[str, Answer] = {}
    unknown = 0
    for file_id in (job.output_file_id, job.error_file_id):
        if not file_id:
            continue
        try:
            data = client.files.content(file_id).content
        except openai.APIError as exc:
            raise _api_error(task, exc, f"reading batch {job.id}'s file {file_id}") from exc
        for cid, body, error in read_output(data):
            if cid not in keys:
                unknown += 1
                continue
            if cid not in out or out[cid].body is None:  # an answer over an error line
                out[cid] = Answer(body, error)
    if unknown:
        log.warning(f"batch {job.id}: {unknown:,} lines name no request of it: left out")
    missing = f"not in batch {job.id}'s output ({job.status})"
    return {k: out.get(k) or Answer(None, missing) for k in record.keys}


def _api_error(task: LLMTask, exc: openai.APIError, doing: str) -> LLMEndpointError:
    fatal = endpoint_error(task, exc)
    if fatal is not None:
        return fatal
    return LLMEndpointError(
        f"{task.base_url}: {doing} failed after the client's retries ({exc}); the jobs "
        "submitted so far stay recorded with the cache, and a rerun collects them"
    )


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
        req = by_key[key]
        messages = req.prepare(req.messages) if req.prepare else req.messages
        counted[key] = chat_prompt_tokens(messages)
        return request_line(key, CHAT_URL, chat_body(task, messages))

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
