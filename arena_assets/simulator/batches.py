"""The simulated arena's Batch API: ``/v1/files`` (upload, read, content) and ``/v1/batches``
(create, retrieve, list, cancel), as OpenAI serves them.

A job's lines are answered in a thread of their own by the same functions as the online
routes (``replies.py``), so a batch answers exactly what the calls would; each line draws
the endpoint's faults like a call. The job ends ``Faults.batch_delay`` seconds after its
creation once its lines are answered, and not while ``Faults.batch_hold`` is set; some jobs
expire, some lines fail or go missing (``faults.py``). Its output file holds one line per
answered request, ``{"id", "custom_id", "response": {"status_code", "request_id", "body"},
"error": null}``; its error file the requests answered with an error status and, for an
expired or cancelled job, those never answered (``"error": {"code": "batch_expired"}``).

Counted like the calls (``ArenaEndpoint.call_count``): a job's creation as route
``batches``, an upload as ``files``, each answered line as ``batch/<route>`` with its model
and status, so a test can count submissions and tell batch answers from calls.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass, field

import orjson

from arena_assets.simulator.replies import chat_reply, embeddings_reply, error_body

ROUTES = {"/v1/chat/completions": chat_reply, "/v1/embeddings": embeddings_reply}
EXPIRED = {
    "code": "batch_expired",
    "message": "This request could not be executed before the completion window expired.",
}
CANCELLED = {"code": "batch_cancelled", "message": "This request was cancelled with its batch."}


@dataclass
class File:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int = field(default_factory=lambda: int(time.time()))

    def view(self) -> dict:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
        }


@dataclass
class Job:
    id: str
    endpoint: str
    input_file_id: str
    lines: list[dict]
    metadata: dict
    created: float  # monotonic
    created_at: int
    expire: bool = False
    errors: list[dict] = field(default_factory=list)
    answers: dict[int, tuple[int, dict] | None] = field(default_factory=dict)  # None: lost
    worker_done: bool = False
    cancel: bool = False
    status: str = "in_progress"
    output_file_id: str | None = None
    error_file_id: str | None = None
    ended_at: int | None = None


class BatchStore:
    """The files and jobs of one simulated arena (``ArenaEndpoint.batches``)."""

    def __init__(self, endpoint) -> None:
        self.ep = endpoint
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # a job created (wait_created)
        self.files: dict[str, File] = {}
        self.jobs: dict[str, Job] = {}
        self.created = 0  # jobs created: a test's count of submissions

    def wait_created(self, n: int, timeout: float) -> bool:
        """Whether ``n`` jobs have been created within ``timeout`` seconds (a test's wait
        for a client to submit, without polling)."""
        with self.changed:
            return self.changed.wait_for(lambda: self.created >= n, timeout)

    # -- files -------------------------------------------------------------------------
    def add_file(self, filename: str, purpose: str, data: bytes) -> File:
        f = File(f"file-{uuid.uuid4().hex[:24]}", filename, purpose, data)
        with self.lock:
            self.files[f.id] = f
        return f

    def file(self, file_id: str) -> File | None:
        with self.lock:
            return self.files.get(file_id)

    # -- jobs --------------------------------------------------------------------------
    def create(self, body: dict) -> tuple[int, dict, str]:
        """(status, body, the model its lines ask) of ``POST /v1/batches``."""
        endpoint, file_id = body.get("endpoint"), body.get("input_file_id")
        if endpoint not in ROUTES:
            return (*error_body(400, f"endpoint must be one of {sorted(ROUTES)}", "invalid_endpoint"), "")  # fmt: skip
        if body.get("completion_window") != "24h":
            return (*error_body(400, "completion_window must be 24h", "invalid_window"), "")
        source = self.file(str(file_id))
        if source is None:
            return (*error_body(404, f"no file {file_id}", "file_not_found"), "")
        lines, errors = _lines(source.data, endpoint)
        faults = self.ep.faults
        with self.lock:
            self.created += 1
            n = self.created
            self.changed.notify_all()
        job = Job(
            f"batch_{uuid.uuid4().hex[:24]}",
            endpoint,
            source.id,
            lines,
            dict(body.get("metadata") or {}),
            time.monotonic(),
            int(time.time()),
            expire=random.Random(f"{faults.seed}:expire:{n}").random() < faults.batch_expire,
            errors=errors,
        )
        if errors:
            job.status, job.worker_done, job.ended_at = "failed", True, int(time.time())
        with self.lock:
            self.jobs[job.id] = job
        if not errors:
            threading.Thread(target=self._answer, args=(job,), daemon=True).start()
        model = str(lines[0]["body"].get("model") or "") if lines else ""
        return 200, self.view(job), model

    def _answer(self, job: Job) -> None:
        """Answer the job's lines, one after another, as the calls would be answered."""
        ep, reply = self.ep, ROUTES[job.endpoint]
        route = "batch/" + job.endpoint.removeprefix("/v1/")
        faults = ep.faults
        stop_at = round(len(job.lines) * faults.batch_expire_done) if job.expire else None
        try:
            for i, line in enumerate(job.lines):
                if job.cancel or (stop_at is not None and i >= stop_at):
                    break
                draw = random.Random(f"{faults.seed}:{line['custom_id']}")
                lost, errored = draw.random() < faults.batch_missing_rate, draw.random()
                fault = ep.next_fault()
                model = str(line["body"].get("model") or "")
                if errored < faults.batch_error_rate or fault in ("429", "500"):
                    status = 429 if fault == "429" else 500
                    answer = error_body(
                        status, "request failed in the batch (simulated)", "server_error"
                    )
                else:
                    answer = reply(ep, line["body"], "ok" if fault == "slow" else fault)
                ep.count(f"BATCH {job.endpoint} {answer[0]}", (route, model, answer[0]))
                with self.lock:
                    job.answers[i] = None if lost else answer
        finally:
            with self.lock:
                job.worker_done = True

    def view(self, job: Job) -> dict:
        """The job as ``GET /v1/batches/{id}`` shows it now (ending it when it is due)."""
        with self.lock:
            if job.status in ("in_progress", "cancelling") and job.worker_done:
                due = time.monotonic() >= job.created + self.ep.faults.batch_delay
                if job.cancel:
                    self._end(job, "cancelled")
                elif due and not self.ep.faults.batch_hold:
                    self._end(job, "expired" if job.expire else "completed")
            done = [a for a in job.answers.values() if a is not None]
            ok = sum(1 for a in done if a[0] == 200)
            ended = job.status in ("completed", "expired", "cancelled", "failed")
            failed = (
                (len(job.lines) - ok) if ended and job.status != "completed" else len(done) - ok
            )
            return {
                "id": job.id,
                "object": "batch",
                "endpoint": job.endpoint,
                "errors": {"object": "list", "data": job.errors} if job.errors else None,
                "input_file_id": job.input_file_id,
                "completion_window": "24h",
                "status": job.status,
                "output_file_id": job.output_file_id,
                "error_file_id": job.error_file_id,
                "created_at": job.created_at,
                "in_progress_at": job.created_at,
                "expires_at": job.created_at + 24 * 3600,
                "completed_at": job.ended_at if job.status == "completed" else None,
                "expired_at": job.ended_at if job.status == "expired" else None,
                "cancelled_at": job.ended_at if job.status == "cancelled" else None,
                "failed_at": job.ended_at if job.status == "failed" else None,
                "request_counts": {"total": len(job.lines), "completed": ok, "failed": failed},
                "metadata": job.metadata or None,
            }

    def _end(self, job: Job, status: str) -> None:
        """(Under the lock.) The job's output and error files, its end."""
        out, err = [], []
        for i, line in enumerate(job.lines):
            cid = line["custom_id"]
            answer = job.answers.get(i, "never")
            if answer is None:
                continue  # lost: in neither file
            if answer == "never":  # expired or cancelled before it was answered
                err.append({"id": f"batch_req_{job.id}_{i}", "custom_id": cid, "response": None,
                            "error": EXPIRED if status == "expired" else CANCELLED})  # fmt: skip
                continue
            code, body = answer
            row = {
                "id": f"batch_req_{job.id}_{i}",
                "custom_id": cid,
                "response": {"status_code": code, "request_id": f"req_{i}", "body": body},
                "error": None,
            }
            (out if code == 200 else err).append(row)
        for rows, attr in ((out, "output_file_id"), (err, "error_file_id")):
            if rows:
                data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
                f = File(
                    f"file-{uuid.uuid4().hex[:24]}", f"{job.id}_{attr}.jsonl", "batch_output", data
                )
                self.files[f.id] = f
                setattr(job, attr, f.id)
        job.status, job.ended_at = status, int(time.time())

    def retrieve(self, batch_id: str) -> dict | None:
        with self.lock:
            job = self.jobs.get(batch_id)
        return None if job is None else self.view(job)

    def cancel(self, batch_id: str) -> dict | None:
        with self.lock:
            job = self.jobs.get(batch_id)
            if job is None:
                return None
            if job.status == "in_progress":
                job.cancel, job.status = True, "cancelling"
        return self.view(job)

    def listing(self, limit: int, after: str | None) -> dict:
        """Newest first, ``limit`` a page, after the job ``after``."""
        with self.lock:
            jobs = sorted(self.jobs.values(), key=lambda j: j.created, reverse=True)
        ids = [j.id for j in jobs]
        start = ids.index(after) + 1 if after in ids else 0
        page = jobs[start : start + limit]
        return {
            "object": "list",
            "data": [self.view(j) for j in page],
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
            "has_more": start + limit < len(jobs),
        }


def _lines(data: bytes, endpoint: str) -> tuple[list[dict], list[dict]]:
    """The input file's request lines, and what is wrong with it (a job with errors fails
    whole, as OpenAI validates a file before running it)."""
    lines, errors, seen = [], [], set()
    for n, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            errors.append({"code": "invalid_json_line", "message": "not JSON", "line": n})
            continue
        cid = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(cid, str) or not cid or cid in seen:
            errors.append({"code": "invalid_custom_id", "message": "a custom_id is missing or repeated", "line": n})  # fmt: skip
        elif line.get("url") != endpoint or not isinstance(line.get("body"), dict):
            errors.append({"code": "invalid_request", "message": f"url must be {endpoint} with a body", "line": n})  # fmt: skip
        else:
            seen.add(cid)
            lines.append(line)
    if not lines and not errors:
        errors.append({"code": "empty_file", "message": "the input file has no request"})
    return lines, errors


def multipart(content_type: str, body: bytes) -> dict[str, tuple[str, bytes]]:
    """A multipart/form-data body as {field name: (file name or "", bytes)}."""
    marker = "boundary="
    if marker not in content_type:
        return {}
    boundary = content_type.split(marker, 1)[1].split(";")[0].strip().strip('"').encode()
    fields = {}
    for part in body.split(b"--" + boundary):
        head, sep, value = part.partition(b"\r\n\r\n")
        if not sep:
            continue
        disposition = next(
            (h for h in head.decode("latin-1").split("\r\n") if h.lower().startswith("content-disposition")),
            "",
        )  # fmt: skip
        params = dict(p.strip().split("=", 1) for p in disposition.split(";")[1:] if "=" in p)
        name = params.get("name", "").strip('"')
        if name:
            fields[name] = (params.get("filename", "").strip('"'), value.removesuffix(b"\r\n"))
    return fields
