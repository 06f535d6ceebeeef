"""OpenAI-compatible HTTP endpoint over the simulated world, with switchable faults.

Stdlib only (``ThreadingHTTPServer`` in a background thread). Routes:
``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/moderations``, and the admin
calls ``GET|POST /_faults`` (read / replace the fault settings) and ``GET /_stats``.

Faults apply to the POST /v1 routes: each request first takes the next entry of
``Faults.script`` (deterministic sequences for tests), else draws by the rates. A 429
carries ``Retry-After`` (seconds) and ``retry-after-ms``; "slow" sleeps ``slow_seconds``
before answering (a client timeout shorter than that sees a timeout); "garbage" returns
a well-formed envelope whose content no parser should accept.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson

from arena_assets.simulator.responder import (
    chat_completion,
    garbage,
    message_text,
    moderation_result,
    request_seed,
)
from arena_assets.simulator.world import World

FAULT_KINDS = ("ok", "429", "500", "slow", "garbage")


@dataclass
class Faults:
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_slow: float = 0.0
    rate_garbage: float = 0.0
    slow_seconds: float = 2.0
    retry_after: float = 0.05  # seconds announced in Retry-After / retry-after-ms
    script: list[str] = field(default_factory=list)  # forced outcomes, consumed first
    seed: int = 0

    @classmethod
    def from_dict(cls, data: dict) -> "Faults":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault settings: {sorted(unknown)}")
        bad = [s for s in data.get("script", []) if s not in FAULT_KINDS]
        if bad:
            raise ValueError(f"script entries must be in {FAULT_KINDS}: {bad}")
        return cls(**data)


class ArenaEndpoint:
    """Context manager serving ``world``; ``base_url`` is ``http://HOST:PORT/v1``."""

    def __init__(self, world: World, host: str = "127.0.0.1", port: int = 0,
                 faults: Faults | None = None) -> None:
        self.world = world
        self.names = set(world.model_names)
        self.lock = threading.Lock()
        self.stats: Counter[str] = Counter()
        self.set_faults(faults or Faults())
        handler = type("ArenaHandler", (_Handler,), {"endpoint": self})
        self.server = ThreadingHTTPServer((host, port), handler)
        self.server.daemon_threads = True
        self.thread: threading.Thread | None = None

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
            for kind, rate in (("429", f.rate_429), ("500", f.rate_500), ("slow", f.rate_slow),
                               ("garbage", f.rate_garbage)):
                if u < rate:
                    return kind
                u -= rate
            return "ok"

    def count(self, key: str) -> None:
        with self.lock:
            self.stats[key] += 1

    def start(self) -> "ArenaEndpoint":
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="arena-endpoint", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self.thread:
            self.thread.join(timeout=5)

    def __enter__(self) -> "ArenaEndpoint":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    endpoint: ArenaEndpoint
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: tests and the CLI print what matters

    # ---- plumbing ------------------------------------------------------------------------
    def _send(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        # counted before the reply leaves, so a client that has its answer sees the count
        self.endpoint.count(f"{self.command} {self.path.split('?')[0]} {status}")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, code: str, headers: dict | None = None) -> None:
        kind = {429: "rate_limit_error", 500: "server_error"}.get(status, "invalid_request_error")
        self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": code}}, headers)

    def _body(self) -> dict | None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = orjson.loads(self.rfile.read(length) or b"{}")
        except orjson.JSONDecodeError:
            return None
        return body if isinstance(body, dict) else None

    # ---- routes --------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        ep = self.endpoint
        path = self.path.split("?")[0].rstrip("/")
        if path == "/v1/models":
            data = [{"id": m.name, "object": "model", "created": 0, "owned_by": m.organization}
                    for m in ep.world.models]
            self._send(200, {"object": "list", "data": data})
        elif path == "/_faults":
            self._send(200, asdict(ep.faults) | {"script_left": list(ep.script)})
        elif path == "/_stats":
            self._send(200, dict(ep.stats))
        else:
            self._error(404, f"no route {path}", "not_found")

    def do_POST(self) -> None:  # noqa: N802
        ep = self.endpoint
        path = self.path.split("?")[0].rstrip("/")
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
        if path not in ("/v1/chat/completions", "/v1/moderations"):
            self._error(404, f"no route {path}", "not_found")
            return
        fault = ep.next_fault()
        if fault == "429":
            wait = ep.faults.retry_after
            self._error(429, "rate limited (simulated)", "rate_limit_exceeded",
                        {"Retry-After": str(max(1, math.ceil(wait))),
                         "retry-after-ms": str(int(wait * 1000))})
            return
        if fault == "500":
            self._error(500, "internal error (simulated)", "server_error")
            return
        if fault == "slow":
            time.sleep(ep.faults.slow_seconds)
        if path == "/v1/moderations":
            self._moderations(body, fault == "garbage")
        else:
            self._chat(body, fault == "garbage")

    def _chat(self, body: dict, garble: bool) -> None:
        ep = self.endpoint
        model, messages = body.get("model"), body.get("messages")
        if model not in ep.names:
            self._error(404, f"The model `{model}` does not exist", "model_not_found")
            return
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            self._error(400, "messages must be a non-empty list of objects", "invalid_messages")
            return
        if body.get("stream"):
            self._error(400, "streaming is not supported by the simulated arena", "unsupported")
            return
        params = {k: body[k] for k in ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed")
                  if k in body}
        n = int(body.get("n") or 1)
        seed = request_seed(model, messages, params)
        choices = []
        for i in range(n):
            if garble:
                content, finish = garbage(random.Random(seed + i)), "stop"
            else:
                content, finish = chat_completion(ep.world, model, messages, params | {"choice": i} if i else params)
            choices.append({"index": i, "message": {"role": "assistant", "content": content},
                            "finish_reason": finish, "logprobs": None})
        prompt_tokens = sum(len(message_text(m)) for m in messages) // 4 + 1
        completion_tokens = sum(len(c["message"]["content"]) for c in choices) // 4 + 1
        self._send(200, {
            "id": f"chatcmpl-{seed:016x}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": choices, "system_fingerprint": "simulated-arena",
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    def _moderations(self, body: dict, garble: bool) -> None:
        raw = body.get("input")
        inputs = raw if isinstance(raw, list) else [raw]
        texts = [x if isinstance(x, str) else (x.get("text", "") if isinstance(x, dict) else "") for x in inputs]
        results = [moderation_result(t) for t in texts]
        if garble:  # a plausible-looking but wrong answer: nothing flagged, scores missing
            results = [{"flagged": False, "categories": {}, "category_scores": {}} for _ in texts]
        seed = request_seed("moderation", texts)
        self._send(200, {"id": f"modr-{seed:016x}", "model": body.get("model") or "simulated-moderation",
                         "results": results})
