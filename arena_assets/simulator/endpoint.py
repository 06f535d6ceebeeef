"""OpenAI-compatible HTTP endpoint over the simulated world, with switchable faults.

Stdlib only (``ThreadingHTTPServer`` in a background thread). Routes:
``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/embeddings``,
``POST /v1/moderations`` and vLLM's ``POST /pooling`` (``scoring_routes.py``), and the admin calls ``GET|POST /_faults`` (read / replace the fault
settings), ``GET /_stats`` (responses by route and status) and ``GET /_calls`` (alias
``GET /v1/_stats``: calls by route, model and status; ``ArenaEndpoint.call_count`` in
process).

Chat completions answer in a candidate model's voice, or, when the system message holds a
``task: <name>`` line, as a labeller (``labeling.py`` has the contract); the labeller
models ``sim-labeler-small`` (about 18 % label errors) and ``sim-labeler-large`` (2 %) and
the embedding models ``sim-embed-small`` / ``sim-embed-large`` are listed in /v1/models.
A request whose last user turn is one of our judge prompts (``judging.verdicts``) is
answered by the simulated judge (``judge.py``): ``sim-judge``, ``sim-judge-biased``
(planted position and length bias) and ``sim-judge-verbose`` (length bias alone) are listed
too (``endpoint.judges`` may add more, e.g. ``judge.judge_replicas``); answers are judged by the quality tag
candidate answers carry, so answers from an earlier process (a cache) judge the same.
Labels and embeddings come from the prompt truth (``truth_root``: a simulated raw root
whose ``_truth/prompts`` tables are read, re-read when a month is added) and the prompt part
parser; nothing but the noisy answer depends on the truth (ids hash the request; usage is
counted like an OpenAI endpoint's, ``arena_assets.llm.tokens``).

Faults (``faults.py`` says what each does) apply to the POST /v1 routes.
"""

from __future__ import annotations

import base64
import logging
import math
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import orjson

from arena_assets.llm.tokens import chat_prompt_tokens, text_tokens, text_tokens_many
from arena_assets.simulator.battle_judge import REWARD_MODELS, BattleTruthCache
from arena_assets.simulator.faults import FAULT_KINDS, Faults  # noqa: F401 - re-exported
from arena_assets.simulator.http_parse import FastRequestParsing
from arena_assets.simulator.images import image_name, image_urls
from arena_assets.simulator.judge import JUDGES
from arena_assets.simulator.judge import answer_quality as tag_quality
from arena_assets.simulator.labeling import (
    EMBEDDERS,
    LABELERS,
    TASKS,
    WORLD_MODEL_LABEL_NOISE,
    check_task,
    embed_many,
    find_task,
    label_reply,
)
from arena_assets.simulator.prompt_truth import PromptTruthIndex
from arena_assets.simulator.responder import (
    chat_completion,
    garbage,
    has_image,
    message_text,
    request_seed,
    world_key,
)
from arena_assets.simulator.scoring_routes import ScoringRoutes
from arena_assets.simulator.truth import TRUTH_DIR
from arena_assets.simulator.world import World

_log = logging.getLogger(__name__)


class _Server(ThreadingHTTPServer):
    # 64 clients connecting at once overflow the stdlib's backlog of 5: the extra SYNs are
    # dropped and retried a second later
    request_queue_size = 256


# base URLs of the simulated arenas running in this process (they read sha256: image
# references; labels.images asks before sending references instead of images)
class ArenaEndpoint:
    """Context manager serving ``world``; ``base_url`` is ``http://HOST:PORT/v1``."""

    def __init__(
        self,
        world: World | Callable[[], World],
        host: str = "127.0.0.1",
        port: int = 0,
        faults: Faults | None = None,
        truth_root: str | os.PathLike | None = None,
        embedding_dim: int = 128,
        labelers: dict[str, float] | None = None,
    ) -> None:
        # a callable world is built at the first request that needs it: a test can start
        # the arena before it simulates the logs whose world.json says which world it is
        self._world_source = world
        self._world: World | None = None
        self._world_build = threading.Lock()
        self.labelers = dict(LABELERS if labelers is None else labelers)  # model -> error rate
        self.lock = threading.Lock()
        self.stats: Counter[str] = Counter()
        self.cpu_seconds = 0.0  # CPU its request handlers used (thread time)
        self.calls: Counter[tuple[str, str, int]] = Counter()  # (route, model, status)
        self.images: Counter[tuple[str, str]] = (
            Counter()
        )  # simulator.images.image_name of each image part
        self.truth_root = Path(truth_root) if truth_root else None
        self.embedding_dim = embedding_dim
        self._index: PromptTruthIndex | None = None
        self._index_files: tuple[str, ...] = ()
        self._index_stamp: int | None = None  # mtime of _truth/prompts when last listed
        self._index_listing: tuple[str, ...] = ()
        self._index_build = threading.Lock()  # one request reads a changed index, the others wait
        self.truth_read = threading.Event()  # set once start() has read the truth (_warm)
        self.judges = dict(JUDGES)  # judge model -> its planted biases
        self.reward_models = dict(REWARD_MODELS)
        self.set_faults(faults or Faults())
        handler = type("ArenaHandler", (_Handler,), {"endpoint": self})
        self.server = _Server((host, port), handler)
        self.server.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def world(self) -> World:
        if self._world is None:
            with self._world_build:
                if self._world is None:
                    source = self._world_source
                    world = source if isinstance(source, World) else source()
                    self._names = set(world.model_names)
                    self._answer_key = world_key(world)  # reads candidate answers' quality tags
                    # judges and reward models on arena battles find them by answer
                    self._battles = BattleTruthCache(world, self.truth_root)
                    self._world = world
        return self._world

    @property
    def names(self) -> set[str]:
        _ = self.world  # built on first use
        return self._names

    @property
    def answer_key(self):
        _ = self.world  # built on first use
        return self._answer_key

    @property
    def battles(self) -> BattleTruthCache:
        _ = self.world  # built on first use
        return self._battles

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def set_faults(self, faults: Faults) -> None:
        with self.lock:
            self.faults = faults
            self.fault_rng = random.Random(faults.seed)
            self.script = list(faults.script)

    def next_fault(self) -> str:
        with self.lock:
            if self.script:
                return self.script.pop(0)
            f, u = self.faults, self.fault_rng.random()
            for kind, rate in (
                ("429", f.rate_429),
                ("500", f.rate_500),
                ("slow", f.rate_slow),
                ("garbage", f.rate_garbage),
                ("empty", f.rate_empty),
                ("truncated", f.rate_truncated),
            ):
                if u < rate:
                    return kind
                u -= rate
            return "ok"

    def count(self, key: str, call: tuple[str, str, int] | None = None) -> None:
        with self.lock:
            self.stats[key] += 1
            if call is not None:
                self.calls[call] += 1

    def call_count(
        self, route: str | None = None, model: str | None = None, status: int | None = None
    ) -> int:
        """Calls received on /v1 POST routes, filtered by route ("chat/completions",
        "embeddings", "moderations"), model and HTTP status; every attempt counts."""
        with self.lock:
            return sum(
                n
                for (r, m, s), n in self.calls.items()
                if (route is None or r == route)
                and (model is None or m == model)
                and (status is None or s == status)
            )

    def reset_counts(self) -> None:
        with self.lock:
            self.calls.clear()
            self.stats.clear()
            self.cpu_seconds = 0.0
            self.images.clear()

    def add_cpu(self, seconds: float) -> None:
        with self.lock:
            self.cpu_seconds += seconds

    def images_seen(self) -> dict[tuple[str, str], int]:
        """Image parts received since the last reset: ("data", sha256 of the bytes) or
        ("sha256", the reference) -> count."""
        with self.lock:
            return dict(self.images)

    def truth_index(self) -> PromptTruthIndex | None:
        """The prompt truth of ``truth_root``, rebuilt when its set of month files changes."""
        if self.truth_root is None:
            return None
        folder = self.truth_root / TRUTH_DIR / "prompts"
        # listing the folder on every request cost ~5 % of a labelling call's time: list it
        # again only when the folder itself changed (a month file added or removed), or
        # changed within the last second (a file added in the same clock tick as the last
        # listing leaves the folder's mtime as it was)
        try:
            stamp = os.stat(folder).st_mtime_ns
        except OSError:
            stamp = None
        if stamp is not None and time.time_ns() - stamp < 1_000_000_000:
            stamp = None
        with self.lock:
            files = (
                self._index_listing if stamp is not None and stamp == self._index_stamp else None
            )
        if files is None:
            files = tuple(sorted(str(f) for f in folder.glob("*.parquet")))
        with self.lock:
            self._index_stamp, self._index_listing = stamp, files
            if files == self._index_files and self._index is not None:
                return self._index
        # read outside self.lock, which every request takes (faults, counts): a production
        # month's index takes seconds, and only the requests that need it should wait
        with self._index_build:
            with self.lock:
                if files == self._index_files and self._index is not None:
                    return self._index  # built by the request that held _index_build
            index = PromptTruthIndex.from_root(self.truth_root)
            with self.lock:
                self._index, self._index_files = index, files
            return index

    def _warm(self) -> None:
        """Read the truth before the first request needs it: the first wave of a batch
        otherwise waits on it together (~1 s of a 30,000-conversation month's judgments)."""
        try:
            self.truth_index()
            self.battles.get()
        except Exception as exc:
            _log.warning(
                "simulated arena: reading the truth under %s failed (%s)", self.truth_root, exc
            )
        finally:
            self.truth_read.set()

    def answer_quality(self, content: str) -> float | None:
        """True quality (responder.answer_quality) of a candidate answer written by an
        endpoint on this world (any process: read from the answer's tag), else None."""
        return tag_quality(content, self.answer_key)

    @property
    def served_models(self) -> list[str]:
        return (
            self.world.model_names
            + list(self.labelers)
            + list(self.judges)
            + list(EMBEDDERS)
            + list(self.reward_models)
        )

    def start(self) -> ArenaEndpoint:
        self.thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="arena-endpoint",
            daemon=True,
        )
        self.thread.start()
        if self.truth_root is not None and isinstance(self._world_source, World):
            threading.Thread(target=self._warm, name="arena-truth", daemon=True).start()
        elif self.truth_root is not None:  # a world built on demand: its truth too
            self.truth_read.set()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self.thread:
            self.thread.join(timeout=5)

    def __enter__(self) -> ArenaEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(
    FastRequestParsing, ScoringRoutes, BaseHTTPRequestHandler
):  # moderations, pooling: scoring_routes.py
    endpoint: ArenaEndpoint
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
    # headers and body leave in one segment: with Nagle and delayed ACKs, two small writes
    # per reply cost ~40 ms each on loopback
    disable_nagle_algorithm = True
    wbufsize = 1 << 16
    _call: tuple[str, str] | None = None  # (route, model) of the /v1 POST being answered
    _due: float | None = None  # when that POST's reply may leave (Faults.latency)

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: tests and the CLI print what matters

    def handle_one_request(self) -> None:
        # the server's own CPU (parsing, answering, replying; not the wait for a request),
        # so an in-process client can tell its cost from the simulator's
        started = time.thread_time()
        try:
            super().handle_one_request()
        finally:
            self.endpoint.add_cpu(time.thread_time() - started)

    # ---- plumbing ------------------------------------------------------------------------
    def _send(
        self, status: int, body: object, headers: dict[str, str] | None = None, cut: bool = False
    ) -> None:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        if self._due is not None:  # the reply's work done, it waits for its time
            time.sleep(max(0.0, self._due - time.monotonic()))
        if cut:  # the "truncated" fault on non-chat routes: half a JSON document
            data = data[: len(data) // 2]
        # counted before the reply leaves, so a client that has its answer sees the count
        call = (*self._call, status) if self._call else None
        self.endpoint.count(f"{self.command} {self.path.split('?')[0]} {status}", call)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, code: str, headers: dict | None = None) -> None:
        kind = {429: "rate_limit_error", 500: "server_error"}.get(status, "invalid_request_error")
        self._send(
            status,
            {"error": {"message": message, "type": kind, "param": None, "code": code}},
            headers,
        )

    def _body(self) -> dict | None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = orjson.loads(self.rfile.read(length) or b"{}")
        except orjson.JSONDecodeError:
            return None
        return body if isinstance(body, dict) else None

    # ---- routes --------------------------------------------------------------------------
    def do_GET(self) -> None:
        ep = self.endpoint
        self._call = self._due = None
        path = self.path.split("?")[0].rstrip("/")
        if path == "/v1/models":
            data = [
                {"id": m.name, "object": "model", "created": 0, "owned_by": m.organization}
                for m in ep.world.models
            ]
            data += [
                {"id": name, "object": "model", "created": 0, "owned_by": "simulated-arena"}
                for name in (*ep.labelers, *ep.judges, *EMBEDDERS, *ep.reward_models)
            ]
            self._send(200, {"object": "list", "data": data})
        elif path == "/_faults":
            self._send(200, asdict(ep.faults) | {"script_left": list(ep.script)})
        elif path == "/_stats":
            self._send(200, dict(ep.stats))
        elif path in ("/_calls", "/v1/_stats"):
            with ep.lock:
                rows = [
                    {"route": r, "model": m, "status": s, "n": n}
                    for (r, m, s), n in sorted(ep.calls.items())
                ]
            self._send(200, {"calls": rows, "total": sum(r["n"] for r in rows)})
        else:
            self._error(404, f"no route {path}", "not_found")

    def do_POST(self) -> None:
        ep = self.endpoint
        self._call = self._due = None
        path = self.path.split("?")[0].rstrip("/")
        arrived = time.monotonic()
        body = self._body()
        if body is None:
            self._error(400, "body is not a JSON object", "invalid_json")
            return
        if path == "/_faults":
            try:
                ep.set_faults(Faults.from_dict(body))
            except (TypeError, ValueError) as exc:
                self._error(400, str(exc), "bad_faults")
                return
            self._send(200, asdict(ep.faults))
            return
        if path not in ROUTES:
            self._error(404, f"no route {path}", "not_found")
            return
        self._call = (path.removeprefix("/v1/").lstrip("/"), str(body.get("model") or ""))
        # the reply leaves `latency` after the request arrived, its answer worked out within
        # that time, as a real endpoint's latency includes its generation; a wait before the
        # work put the simulator's CPU on every call's clock: 64 answers arriving together
        # took ~1 ms of it each, one after another (its GIL), and a batch's waves ran
        # 30-80 ms over the latency, timed as the client's
        if ep.faults.latency > 0:
            self._due = arrived + ep.faults.latency
        fault = ep.next_fault()
        if fault == "429":
            wait = ep.faults.retry_after
            self._error(
                429,
                "rate limited (simulated)",
                "rate_limit_exceeded",
                {
                    "Retry-After": str(max(1, math.ceil(wait))),
                    "retry-after-ms": str(int(wait * 1000)),
                },
            )
            return
        if fault == "500":
            self._error(500, "internal error (simulated)", "server_error")
            return
        if fault == "slow":  # on top of the latency
            self._due = (
                self._due if self._due is not None else time.monotonic()
            ) + ep.faults.slow_seconds
        ROUTES[path](self, body, fault)

    def _chat(self, body: dict, fault: str) -> None:
        ep = self.endpoint
        model, messages = body.get("model"), body.get("messages")
        labeler = model in self.endpoint.labelers
        if model not in ep.names and not labeler and model not in ep.judges:
            self._error(404, f"The model `{model}` does not exist", "model_not_found")
            return
        if (
            not isinstance(messages, list)
            or not messages
            or not all(isinstance(m, dict) for m in messages)
        ):
            self._error(400, "messages must be a non-empty list of objects", "invalid_messages")
            return
        if body.get("stream"):
            self._error(400, "streaming is not supported by the simulated arena", "unsupported")
            return
        try:  # image parts as a real vision endpoint takes them
            names = [n for n in map(image_name, image_urls(messages)) if n]
        except ValueError as exc:
            self._error(400, str(exc), "invalid_image_url")
            return
        with ep.lock:
            ep.images.update(names)
        params = {
            k: body[k]
            for k in ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed")
            if k in body
        }
        n = int(body.get("n") or 1)
        seed = request_seed(model, messages, params)
        system = "\n".join(
            message_text(m) for m in messages if m.get("role") in ("system", "developer")
        )
        task = find_task(system)
        if task is None and not system:  # OR-Bench's check: one user message, no system
            task = check_task(
                " ".join(message_text(m) for m in messages if m.get("role") == "user")
            )
        if labeler and task not in TASKS:
            self._error(
                400,
                f"a labeller model needs a system line 'task: <name>' with name in {TASKS}",
                "unknown_task",
            )
            return
        choices = []
        for i in range(n):
            if fault == "garbage":
                content, finish = garbage(random.Random(seed + i)), "stop"
            elif task in TASKS:
                user = [m for m in messages if m.get("role") == "user"]
                content = label_reply(
                    task,
                    message_text(user[-1]) if user else "",
                    model,
                    ep.labelers.get(model, WORLD_MODEL_LABEL_NOISE),
                    ep.truth_index(),
                    any(has_image(m) for m in user),
                    names[0][1] if names else None,
                )
                finish = "stop"
            else:
                content, finish, _ = chat_completion(
                    ep.world,
                    model,
                    messages,
                    params | {"choice": i} if i else params,
                    ep.truth_index(),
                    ep.judges,
                    ep.battles.get(),
                )
            if fault == "empty":
                content = ""
            elif fault == "truncated":
                content, finish = content[: len(content) // 2], "length"
            choices.append(
                {
                    "index": i,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish,
                    "logprobs": None,
                }
            )
        # billed like an OpenAI endpoint (approximate cl100k + per-message framing), the
        # counts the plan (arena_assets.llm.plan) estimates before a run
        prompt_tokens = round(chat_prompt_tokens(messages) * ep.faults.prompt_token_scale)
        # a reply cut at the cap used all of it, as a real endpoint's finish_reason "length"
        # says (callers tell a cut answer by completion_tokens >= max_tokens)
        cap = params.get("max_tokens") or params.get("max_completion_tokens")
        completion_tokens = sum(
            cap
            if c["finish_reason"] == "length" and isinstance(cap, int) and cap > 0
            else text_tokens(c["message"]["content"])
            for c in choices
        )
        self._send(
            200,
            {
                "id": f"chatcmpl-{seed:016x}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": choices,
                "system_fingerprint": "simulated-arena",
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
        )

    def _embeddings(self, body: dict, fault: str) -> None:
        ep = self.endpoint
        model, raw = body.get("model"), body.get("input")
        if model not in EMBEDDERS:
            self._error(
                404,
                f"The model `{model}` does not exist (embedding models: {sorted(EMBEDDERS)})",
                "model_not_found",
            )
            return
        texts = raw if isinstance(raw, list) else [raw]
        if not texts or not all(isinstance(t, str) for t in texts):
            self._error(
                400, "input must be a string or a non-empty list of strings", "invalid_input"
            )
            return
        dim = body.get("dimensions") or ep.embedding_dim
        if not isinstance(dim, int) or not 8 <= dim <= 4096:
            self._error(400, "dimensions must be an integer in [8, 4096]", "invalid_dimensions")
            return
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            self._error(400, "encoding_format must be float or base64", "unsupported")
            return
        index = ep.truth_index()
        matrix = embed_many(texts, model, dim, index) if fault != "empty" else np.empty((0, dim))
        if fault == "garbage":
            matrix = matrix[:, :3]
        # one polars pass: 64 texts of ~1,000 characters
        tokens = round(sum(text_tokens_many(texts)) * ep.faults.prompt_token_scale)
        self._send(
            200,
            {
                "object": "list",
                "model": model,
                "data": [
                    {"object": "embedding", "index": i, "embedding": v}
                    for i, v in enumerate(_encode(matrix, encoding))
                ],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
            cut=fault == "truncated",
        )


def _encode(matrix: np.ndarray, encoding: str) -> list[list[float]] | list[str]:
    """A call's vectors (a row each) rounded to 6 places, as servers print them, then as
    float lists or, as the openai client asks by default, base64 of little-endian float32.
    The matrix rounded and cast at once: per vector, numpy's call overhead was ~10 % of the
    simulated arena's CPU for an embeddings call (per float in Python, once, ~40 %)."""
    rounded = np.round(matrix, 6)
    if encoding == "base64":
        raw = rounded.astype("<f4")
        return [base64.b64encode(row.tobytes()).decode() for row in raw]
    return rounded.tolist()


ROUTES = {
    "/v1/chat/completions": _Handler._chat,
    "/v1/moderations": _Handler._moderations,
    "/v1/embeddings": _Handler._embeddings,
    # vLLM serves its Pooling API (reward models) at the server root, not under /v1
    "/pooling": _Handler._pooling,
    "/v1/pooling": _Handler._pooling,
}
