"""The `openai` client for any OpenAI-compatible endpoint, and the preflight check.

Why not `dagster-openai`: its ``OpenAIResource`` is a Dagster resource whose
``get_client(context)`` hands out a plain ``openai.OpenAI`` and wraps chosen methods to add
token usage to the materialization's metadata. That is all it adds. Our LLM layer must run
without Dagster (CLI, benchmarks, tests, later stages called as a library), needs a cache,
bounded concurrency, per-item statuses and cost from a configurable price table, and has to
sum usage over cache hits and misses itself; the wrapper's per-call metadata would not
survive a thread pool and would count only the calls, not the items. So we build the
``openai.OpenAI`` client directly and put our own totals in the asset metadata.

Retries are the client's own (``max_retries``): exponential backoff with jitter on
connection errors, timeouts, 408/409/429 and 5xx, honouring ``Retry-After`` and
``retry-after-ms`` when the server sends them. No hand-written retry loop here.

The client keeps one open connection per concurrent call: httpx keeps only 20 idle
connections by default, so at concurrency 64 two calls in three opened a new TCP connection
(and the server a new thread): measured at 300 ms latency, 53 % of the concurrency bound
and ~5 ms of server CPU per call, against >= 90 % with the pool sized to the concurrency.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import ssl
import threading
from collections.abc import Callable, Iterator

import httpx
import openai
import orjson

from arena_assets.errors import ArenaError
from arena_assets.llm.config import LLMTask


class LLMEndpointError(ArenaError, RuntimeError):
    """The endpoint cannot serve this task at all (unreachable, key refused, model unknown).

    Raised before any output is written; the message names the base URL and what to fix.
    """


def make_client(
    task: LLMTask,
    *,
    max_retries: int | None = None,
    timeout: float | None = None,
    base_url: str | None = None,
) -> openai.OpenAI:
    """The task's client: the process's TLS context and as many kept-alive connections as
    the task has calls in flight (httpx keeps 20 otherwise: at concurrency 64 the rest
    would open a new connection per call). ``base_url`` overrides the task's (vLLM serves
    /pooling at the server root)."""
    pool = max(task.max_concurrency, 1)
    return openai.OpenAI(
        base_url=task.base_url if base_url is None else base_url,
        api_key=task.api_key or "sk-no-key",
        timeout=task.timeout if timeout is None else timeout,
        max_retries=task.max_retries if max_retries is None else max_retries,
        http_client=openai.DefaultHttpxClient(
            verify=_tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")),
            limits=httpx.Limits(max_connections=pool + 4, max_keepalive_connections=pool + 4),
        ),
    )


_TLS_LOCK = threading.Lock()


def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """One TLS context a process (per CA setting): httpx builds one per client otherwise,
    loading the CA bundle each time (30-50 ms; a bench makes a client per candidate and
    judge). The same trust httpx's default gives (SSL_CERT_FILE / SSL_CERT_DIR, else certifi);
    an SSLContext is safe to share between clients and threads. Built under a lock: ten
    candidates' batches start at once, and an unlocked cache let each build its own (the
    first calls of a bench's answers waited ~0.15 s for ten CA bundles)."""
    with _TLS_LOCK:
        return _tls_context_once(cert_file, cert_dir)


@functools.cache
def _tls_context_once(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()


def endpoint_error(task: LLMTask, exc: Exception) -> LLMEndpointError | None:
    """A clear, actionable error for failures no retry can fix; None for the others."""
    url = task.base_url
    if isinstance(exc, openai.AuthenticationError):
        return LLMEndpointError(
            f"the LLM endpoint {url} refused the API key (401) for model {task.model!r}: "
            f"set the right key for this task ({exc.message})"
        )
    if isinstance(exc, openai.PermissionDeniedError):
        return LLMEndpointError(
            f"the LLM endpoint {url} denied access (403) to model {task.model!r}: "
            f"check the key's permissions ({exc.message})"
        )
    if isinstance(exc, openai.NotFoundError):
        return LLMEndpointError(
            f"the LLM endpoint {url} does not serve model {task.model!r} (404): set a model "
            f"it serves, or check that the base URL ends in /v1 ({exc.message})"
        )
    if isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError):
        return LLMEndpointError(
            f"cannot reach the LLM endpoint {url}: is the server running and the base URL "
            f"right? ({exc.__cause__ or exc})"
        )
    return None


def list_models(client: openai.OpenAI) -> list[dict]:
    """The endpoint's ``/models`` entries (``id``, ``owned_by``, ...) as JSON objects.

    Read as bytes and decoded here: ``models.list()`` builds the SDK's pydantic models,
    ~0.4 s of CPU the first time in a process (every asset run) against ~8 ms this way,
    and the SDK decodes a body only when its Content-Type says JSON. Raises ValueError for
    a body that is not OpenAI's ``{"data": [...]}`` (or a bare list of models), and the
    SDK's errors for a failed request."""
    body = orjson.loads(client.get("/models", cast_to=httpx.Response).content)
    items = body.get("data") if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise ValueError(f"no model list in {str(body)[:120]!r}")
    return [m for m in items if isinstance(m, dict) and "id" in m]


def preflight(task: LLMTask, client: openai.OpenAI | None = None) -> list[str]:
    """Check the endpoint answers, accepts the key and serves ``task.model``.

    Returns the served model ids (empty when the server has no ``/models`` route, in which
    case the first real call reports an unknown model). Raises ``LLMEndpointError``.
    """
    quick = (client or make_client(task)).with_options(
        max_retries=1, timeout=min(task.timeout, 15.0)
    )
    try:
        served = [str(m["id"]) for m in list_models(quick)]
    except ValueError as exc:
        raise LLMEndpointError(
            f"the LLM endpoint {task.base_url} answered the model listing with something other "
            f"than a list of models ({exc}): check that the base URL ends in /v1"
        ) from exc
    except openai.NotFoundError:
        return []  # some servers expose chat but not the model list; the first call tells
    except openai.APIError as exc:
        err = endpoint_error(task, exc)
        if err is None:
            raise LLMEndpointError(
                f"the LLM endpoint {task.base_url} failed the model listing: {exc}"
            ) from exc
        raise err from exc
    if task.model not in served:
        shown = ", ".join(served[:12]) + (" ..." if len(served) > 12 else "")
        raise LLMEndpointError(
            f"the LLM endpoint {task.base_url} does not serve model {task.model!r}; "
            f"it serves: {shown or '(none)'}. Set the model name to one of these."
        )
    return served


def one_core() -> Callable[[], None] | None:
    """A thread initializer that keeps a pool of LLM-call threads on one CPU (None where
    affinity cannot be set or one CPU is all there is).

    Why: the calls' threads take turns holding the interpreter lock, and a handover to a
    thread waiting on another core costs a cross-core wake-up each time. Measured against
    the simulated arena in another process (``benchmarks/bench_llm_client.py``'s batch):
    concurrency 8 at latency 0, 540 -> 820-1,030 calls/s and 1.77 -> 0.97-1.21 ms of
    client CPU a call; concurrency 64 at 0.3 s, 2.3-2.4 -> 1.6-2.0 ms a call. One core
    is no cap: the lock lets one thread run at a time anyway. Only the pool's threads are
    pinned (Linux affinity is per thread), not the caller's (polars, numpy keep every
    core); the CPU follows the process id, so two processes calling at once tend to use
    two cores."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    # threads inherit their creator's CPUs: fsspec's I/O thread (object-store images read
    # by a request's ``prepare``) must not be started first from a pinned call thread
    import fsspec.asyn

    fsspec.asyn.get_loop()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    cpu = cpus[os.getpid() % len(cpus)]

    def pin() -> None:
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:  # a CPU taken away by the container meanwhile: stay unpinned
            pass

    return pin


_FROZEN = 0  # call phases running in this process (calls_in_flight)
_FROZEN_LOCK = threading.Lock()


@contextlib.contextmanager
def calls_in_flight() -> Iterator[None]:
    """Around a pool of LLM calls: what the process held when the calls started is left out
    of the garbage collector's full passes until the last such pool running ends
    (``gc.freeze``; ``gc.unfreeze`` puts it back, so cyclic garbage among it is still
    collected afterwards).

    Why: a full pass stops every thread, and a run's process holds Dagster's definitions,
    the month's frames and the cache's answers. Traced at 500,000 conversations: one full
    pass of 0.25 s during `model_answers`' 720 calls, while the 64 calls in flight waited
    to read their replies."""
    global _FROZEN
    with _FROZEN_LOCK:
        gc.freeze()  # again when a pool is running: what was made since then too
        _FROZEN += 1
    try:
        yield
    finally:
        with _FROZEN_LOCK:
            _FROZEN -= 1
            if not _FROZEN:
                gc.unfreeze()
