"""Batch-API jobs of one task, route and cache namespace: found, submitted, waited for and
collected (``llm.batch_api`` has the why; ``llm.batch_files`` the formats and records).

``submit_jobs`` finds the recorded jobs that answer requests wanted (a job whose record
was written but whose creation was not recorded is looked up at the endpoint by the
request set in its metadata) and submits the rest, recorded before upload; it returns
without waiting, so a step can submit every job of its month first
(``llm.ahead``) and wait after. ``run_jobs`` submits and waits, collecting each job as it
ends: an answer for every request of it, from its output and error files, a missing line
a failure of its own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import openai

from arena_assets.llm.batch_files import (
    METADATA_KEY,
    JobRecord,
    JobRecords,
    read_output,
    request_set,
    split_lines,
)
from arena_assets.llm.budget import BatchGuard
from arena_assets.llm.cache import ResponseCache
from arena_assets.llm.client import LLMEndpointError, endpoint_error
from arena_assets.llm.concurrency import BatchCancelled, Halt
from arena_assets.llm.config import LLMTask

TERMINAL = ("completed", "failed", "expired", "cancelled")
# the first looks at a job come sooner than task.batch_poll_s: 0.5 s after the first, then
# twice as long each time up to it (a small job that ends in seconds is not waited for
# half a minute; a day-long one is looked at every batch_poll_s)
FIRST_POLL_S = 0.5
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
class Submitted:
    """What ``submit_jobs`` left in flight for the requests wanted."""

    jobs: list[JobRecord] = field(default_factory=list)  # adopted ones first
    held: dict[str, float | None] = field(default_factory=dict)  # request set -> budget held
    early: dict[str, Answer] = field(default_factory=dict)  # requests failed before a line
    submitted: int = 0
    resumed: int = 0


def submit_jobs(
    task: LLMTask,
    url: str,
    wanted: Sequence[str],
    line_of: Callable[[str], bytes],
    cache: ResponseCache,
    client: openai.OpenAI,
    *,
    what: str,
    estimate: Callable[[list[str]], tuple[float, float]] | None = None,
    guard: BatchGuard | None = None,
) -> Submitted:
    """The jobs that answer ``wanted`` (cache keys): recorded ones found, the rest
    submitted (``line_of(key)`` its request line; an OSError or ValueError fails that
    request without a line), each held under the budget (``estimate(keys)``: its
    estimate and least cost) before it is recorded. Nothing is waited for."""
    records = JobRecords(cache)
    wanted_set = set(wanted)
    out = Submitted()
    out.jobs = _find(records, task, url, wanted_set, client)
    out.held = {r.request_set: None for r in out.jobs}
    out.resumed = len(out.jobs)
    covered = {k for r in out.jobs for k in r.keys} & wanted_set

    def lines():
        for k in wanted:
            if k in covered:
                continue
            try:
                yield k, line_of(k)
            except (OSError, ValueError) as exc:  # e.g. an image that cannot be read
                out.early[k] = Answer(None, f"{type(exc).__name__}: {exc}")

    for job in split_lines(lines()):
        keys = [k for k, _ in job]
        record = JobRecord(request_set(task.base_url, task.model, url, keys), task.base_url,
                           task.model, url, keys, what=what)  # fmt: skip
        if guard is not None and estimate is not None:
            out.held[record.request_set] = guard.hold_job(*estimate(keys), len(keys))
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
        out.submitted += 1
        out.jobs.append(record)
        log.info(
            f"{what}: submitted batch {created.id} ({len(keys):,} requests, {len(data):,} bytes)"
        )
    return out


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
) -> Submitted:
    """One round for the requests ``wanted``: ``submit_jobs``, then each job waited for
    and handed to ``collect`` as it ends, with an answer for every request of it."""
    out = submit_jobs(
        task, url, wanted, line_of, cache, client, what=what, estimate=estimate, guard=guard
    )
    for r in out.jobs[: out.resumed]:
        log.info(
            f"{what}: waiting for batch {r.batch_id} ({len(r.keys):,} requests), submitted earlier"
        )
    if out.early:
        collect(JobRecord("", task.base_url, task.model, url, list(out.early)), out.early)
    _wait(task, out.jobs, out.held, JobRecords(cache), set(wanted), cache, client, collect, what,
          guard, halted)  # fmt: skip
    return out


def _find(
    records: JobRecords, task: LLMTask, url: str, wanted: set[str], client: openai.OpenAI
) -> list[JobRecord]:
    """The recorded jobs this round waits for instead of submitting (``llm.batch_api``, 1)."""
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
    """Until every job has ended, each collected as it ends (``llm.batch_api``, 3-4)."""
    started, looks = time.monotonic(), 0
    halted = halted if halted is not None else Halt()
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
            if job.status == "failed":  # never to run: a rerun submits its requests anew
                records.delete(record)
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
        pause = min(task.batch_poll_s, FIRST_POLL_S * 2**looks)
        looks += 1
        if halted.wait(pause):
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
