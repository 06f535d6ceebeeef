"""The Batch API's files and the records of the jobs in flight.

**Request lines** (what OpenAI's Batch API and vLLM's ``run-batch`` read), one JSON object
a line: ``{"custom_id", "method": "POST", "url", "body"}``, the ``custom_id`` the request's
cache key (``llm.cache.request_key``), so an answer finds its request whoever produced it.
A job holds at most ``MAX_LINES`` lines and ``MAX_BYTES`` bytes (OpenAI's limits: 50,000
requests, 200 MB a file); a larger set is split into several jobs.

**Output lines** (what they write): ``{"id", "custom_id", "response": {"status_code",
"body"}, "error"}``. ``read_output`` turns a file of them into (custom_id, body, error)
triples: a 2xx response's body, or why there is none (an ``error`` object, a non-2xx status,
a line that is not JSON), never dropping a line.

**Records**: a job submitted and not yet collected is recorded under the cache namespace
it fills, ``<cache>/<namespace>/_batches/<request set>.json`` (its endpoint, model, route,
the cache keys it answers, the uploaded file's id and the job's id), written before the
upload, again after it and again once the job exists. A run finds every record whose keys
it wants before submitting anything, so a run killed while its jobs are in flight, a
retried run or a concurrent month asking the same prompts waits for those jobs instead of
submitting them again. A record is deleted once its job's answers are in the cache.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field

import orjson
from fsspec.implementations.local import LocalFileSystem

from arena_assets import inflight
from arena_assets.llm.cache import ResponseCache

CHAT_URL = "/v1/chat/completions"
EMBEDDINGS_URL = "/v1/embeddings"
MAX_LINES = 50_000  # OpenAI: requests in one batch
MAX_BYTES = 190 << 20  # OpenAI: 200 MB an input file; some room for the multipart framing
RECORDS = "_batches"
METADATA_KEY = "arena_request_set"  # the job's metadata entry naming its request set

_log = logging.getLogger(__name__)


def request_line(custom_id: str, url: str, body: dict) -> bytes:
    """One request line (no newline)."""
    return orjson.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body})


def split_lines(lines: Iterable[tuple[str, bytes]]) -> Iterator[list[tuple[str, bytes]]]:
    """(custom_id, line) pairs in jobs of at most ``MAX_LINES`` lines and ``MAX_BYTES``."""
    job: list[tuple[str, bytes]] = []
    size = 0
    for key, line in lines:
        if job and (len(job) >= MAX_LINES or size + len(line) + 1 > MAX_BYTES):
            yield job
            job, size = [], 0
        job.append((key, line))
        size += len(line) + 1
    if job:
        yield job


def request_set(base_url: str, model: str, url: str, keys: Iterable[str]) -> str:
    """The name of a job's request set: its endpoint, model, route and keys."""
    h = hashlib.blake2b(digest_size=12)
    for part in (base_url.rstrip("/"), model, url, *sorted(keys)):
        h.update(part.encode())
        h.update(b"\n")
    return h.hexdigest()


def read_output(data: bytes) -> Iterator[tuple[str | None, dict | None, str | None]]:
    """(custom_id, response body or None, error or None) per non-blank line of an output
    or error file: the body where the response's status is 2xx, else why not."""
    for n, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            yield None, None, f"line {n} is not JSON ({exc})"
            continue
        if not isinstance(line, dict):
            yield None, None, f"line {n} is not a JSON object"
            continue
        cid = line.get("custom_id")
        cid = cid if isinstance(cid, str) and cid else None
        response = line.get("response") if isinstance(line.get("response"), dict) else {}
        body = response.get("body")
        status = response.get("status_code")
        error = line.get("error")
        if error:
            yield cid, None, _error_text(error)
        elif not isinstance(status, int) or not 200 <= status < 300:
            why = _error_text(body.get("error")) if isinstance(body, dict) else ""
            yield cid, None, f"HTTP {status}" + (f": {why}" if why else "")
        elif isinstance(body, str):  # some writers keep the body as JSON text
            try:
                decoded = orjson.loads(body)
            except orjson.JSONDecodeError:
                decoded = None
            if isinstance(decoded, dict):
                yield cid, decoded, None
            else:
                yield cid, None, "the response body is not a JSON object"
        elif isinstance(body, dict):
            yield cid, body, None
        else:
            yield cid, None, "no response body"


def _error_text(error: object) -> str:
    # vLLM's run-batch writes its ErrorResponse as the line's error: {object, message, type,
    # code} in older releases, {"error": {message, type, param, code}} in newer ones
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        return ": ".join(str(p) for p in (code, message) if p) or orjson.dumps(error).decode()
    return str(error)


@dataclass
class JobRecord:
    """One Batch-API job of ours, from before its upload until its answers are cached."""

    request_set: str
    base_url: str
    model: str
    url: str
    keys: list[str]
    created_at: float = field(default_factory=time.time)
    input_file_id: str = ""
    batch_id: str = ""
    what: str = ""  # the prompt versions it asks (its log lines)

    def matches(self, base_url: str, model: str, url: str) -> bool:
        return (self.base_url.rstrip("/"), self.model, self.url) == (
            base_url.rstrip("/"),
            model,
            url,
        )


class JobRecords:
    """The records of one cache namespace's jobs (see the module docstring)."""

    def __init__(self, cache: ResponseCache) -> None:
        self.fs = cache.fs
        self.dir = f"{cache.dir}/{RECORDS}"

    def all(self) -> list[JobRecord]:
        """Every record; an unreadable one is a warning and left where it is."""
        try:
            paths = sorted(self.fs.glob(f"{self.dir}/*.json"))
        except FileNotFoundError:
            return []
        out = []
        for path in paths:
            try:
                out.append(JobRecord(**orjson.loads(self.fs.cat_file(path))))
            except FileNotFoundError:
                continue  # collected and deleted by another run meanwhile
            except (orjson.JSONDecodeError, TypeError) as exc:
                _log.warning("batch record %s is unreadable (%s): left alone", path, exc)
        return out

    def path(self, record: JobRecord) -> str:
        return f"{self.dir}/{record.request_set}.json"

    def write(self, record: JobRecord) -> None:
        """Atomically: a temporary file renamed into place (one PUT on an object store)."""
        data = orjson.dumps(asdict(record))
        final = self.path(record)
        if isinstance(self.fs, LocalFileSystem):
            self.fs.makedirs(f"{self.dir}/_tmp", exist_ok=True)
            tmp = f"{self.dir}/_tmp/{inflight.temp_name(record.request_set)}"
            self.fs.pipe_file(tmp, data)
            self.fs.mv(tmp, final)
        else:
            self.fs.pipe_file(final, data)

    def delete(self, record: JobRecord) -> None:
        try:
            self.fs.rm_file(self.path(record))
        except FileNotFoundError:
            pass  # collected by another run too
