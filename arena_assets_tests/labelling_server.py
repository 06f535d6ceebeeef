"""A stand-in OpenAI-compatible server speaking the labelling protocol, for the LLM-layer tests.

Only the protocol is faked here (the agreed ``task: <name>`` system line, ``<prompt>``
blocks, one JSON object back); the client under test talks to it over real HTTP through
the real ``openai`` package. The simulated arena endpoint (``simulator/endpoint.py``)
answers the same protocol from its prompt truth; this second, much smaller server is kept
on purpose so the client layer's tests do not depend on the simulator they help to score,
and so their answers are a function a test can compute (``expected_answer``).

Answers are a pure function of the prompt text (``expected_answer``; for a request that
holds an image alone, of the image's URL), so tests can check what came back. Faults (429 with Retry-After, 500, garbage, empty, truncated JSON) are drawn
from a seeded generator; ``latency_s`` delays every POST; ``calls`` counts answered POSTs
and ``wait_calls(n)`` blocks until n were answered (for kill-at-N tests, no sleeps).
"""

from __future__ import annotations

import hashlib
import random
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson

CRITERIA = (
    "specificity",
    "domain_knowledge",
    "complexity",
    "problem_solving",
    "creativity",
    "technical_accuracy",
    "real_world",
)
VISION = (
    "captioning",
    "ocr",
    "entity_recognition",
    "humor",
    "homework",
    "diagram",
    "creative_writing",
)
FAULTS = ("429", "500", "garbage", "empty", "truncated")
# the default prompt set's vision tasks, as LMArena's classifier splits the tags: the text
# alone, the text and the image, the image alone (answered from the image's URL)
VISION_SPLIT = {
    "vision-text-tags": ("captioning", "entity_recognition", "creative_writing"),
    "vision-image-tags": ("ocr", "humor"),
    "vision-image-only-tags": ("homework", "diagram"),
}


def _bits(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def expected_answer(task: str, prompt: str, answer: str = "") -> dict:
    """What this server answers for a prompt (tests compare against it)."""
    b = _bits(prompt)
    if task == "criteria-v1":
        out = {c: bool(b >> i & 1) for i, c in enumerate(CRITERIA)}
        return out | {
            "math": bool(b >> 8 & 1),
            "creative_writing": bool(b >> 9 & 1),
            "if_score": (b >> 10) % 6,
        }
    if task == "vision-v1":
        return {c: bool(b >> i & 1) for i, c in enumerate(VISION)}
    if task == "refusal-v1":
        return {"refusal": answer.lower().startswith(("i can't", "i cannot", "sorry"))}
    if task == "cluster-name-v1":
        return {"name": "topic " + prompt.split()[0].lower() if prompt.split() else "misc"}
    # the label prompt set's tasks (labels.prompt_sets), in LMArena's output formats
    yes = lambda v: "yes" if v else "no"
    if task == "prompt-tags":
        out = expected_answer("criteria-v1", prompt)
        return {
            "criteria": [i for i, c in enumerate(CRITERIA, start=1) if out[c]],
            "if_score": out["if_score"],
            "math": yes(out["math"]),
            "creative_writing": yes(out["creative_writing"]),
        }
    if task == "vision-tags":
        return {k: yes(v) for k, v in expected_answer("vision-v1", prompt).items()}
    if task in VISION_SPLIT:  # ``prompt``: the request's text, or the image's URL alone
        out = expected_answer("vision-v1", prompt)
        return {k: yes(out[k]) for k in VISION_SPLIT[task]}
    if task in ("refusal", "refusal_v0.1"):
        return f"<classification>{yes(expected_answer('refusal-v1', prompt, answer)['refusal'])}</classification>"
    # the anchor-style set: one tag a call, in FastChat's output formats
    if task == "criteria_v0.1":
        out = expected_answer("criteria-v1", prompt)
        return str([i for i, c in enumerate(CRITERIA, start=1) if out[c]])
    if task == "if_v0.1":
        return f"<score>{expected_answer('criteria-v1', prompt)['if_score']}</score>"
    if task in ("math_v0.1", "creative_writing_v0.1"):
        name = task.removesuffix("_v0.1")
        return f"<decision>{yes(expected_answer('criteria-v1', prompt)[name])}</decision>"
    vision = {f"{v}_v0.1": v for v in VISION} | {"creative_writing_vision_v0.1": "creative_writing"}
    if task in vision:
        return f"<decision>{yes(expected_answer('vision-v1', prompt)[vision[task]])}</decision>"
    raise ValueError(task)


class LabellingServer:
    def __init__(
        self,
        *,
        models=("labeler-strong", "labeler-cheap"),
        api_key: str = "test-key",
        latency_s: float = 0.0,
        fault_rate: float = 0.0,
        seed: int = 0,
        dim: int = 16,
        revoke_key_after: int | None = None,
    ) -> None:
        self.models, self.api_key, self.latency_s, self.dim = list(models), api_key, latency_s, dim
        self.revoke_key_after = revoke_key_after  # the key stops working after this many calls
        self.fault_rate, self.rng = fault_rate, random.Random(seed)
        self.lock, self.cond = threading.Lock(), threading.Condition()
        self.calls = 0  # answered POSTs, faults included
        self.bodies: list[dict] = []  # every chat request's JSON body, as received
        # POSTs being answered now, per model; the most at once, and the models seen in flight together
        self.in_flight: dict[str, int] = {}
        self.peak_in_flight = 0
        self.together: set[frozenset[str]] = set()
        self.faults: dict[str, int] = dict.fromkeys(FAULTS, 0)
        self.faults_allowed: tuple[str, ...] = FAULTS  # the kinds a fault is drawn from
        handler = type("H", (_Handler,), {"srv": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def wait_calls(self, n: int, timeout: float = 60) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.calls >= n, timeout=timeout)

    def draw_fault(self) -> str | None:
        with self.lock:
            if self.rng.random() < self.fault_rate:
                kind = self.rng.choice(self.faults_allowed)
                self.faults[kind] += 1
                return kind
        return None

    def counted(self) -> None:
        with self.cond:
            self.calls += 1
            if self.revoke_key_after is not None and self.calls >= self.revoke_key_after:
                self.api_key = "revoked"
            self.cond.notify_all()

    def __enter__(self) -> LabellingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    srv: LabellingServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # headers and body leave in two writes; with Nagle on, the body waits for the
        # client's delayed ACK (~40 ms per call on Linux loopback)
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _send(self, status: int, body, headers: dict | None = None) -> None:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        if self.headers.get("Authorization") != f"Bearer {self.srv.api_key}":
            self._send(
                401,
                {
                    "error": {
                        "message": "Incorrect API key provided",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            )
            return False
        return True

    def do_GET(self) -> None:
        if not self._authorised():
            return
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in self.srv.models
        ]
        self._send(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        body = orjson.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self._authorised():
            return
        if body.get("model") not in self.srv.models:
            self._send(
                404,
                {
                    "error": {
                        "message": f"The model `{body.get('model')}` does not exist",
                        "type": "invalid_request_error",
                        "code": "model_not_found",
                    }
                },
            )
            return
        with self.srv.lock:
            flying = self.srv.in_flight
            flying[body["model"]] = flying.get(body["model"], 0) + 1
            self.srv.peak_in_flight = max(self.srv.peak_in_flight, sum(flying.values()))
            self.srv.together.add(frozenset(m for m, n in flying.items() if n))
        try:
            if self.srv.latency_s:
                time.sleep(self.srv.latency_s)  # simulated model latency, not synchronisation
        finally:
            with self.srv.lock:
                self.srv.in_flight[body["model"]] -= 1
        fault = self.srv.draw_fault()
        self.srv.counted()
        if fault == "429":
            self._send(
                429,
                {"error": {"message": "slow down", "type": "rate_limit_error", "code": None}},
                {"Retry-After": "1", "retry-after-ms": "20"},
            )
            return
        if fault == "500":
            self._send(500, {"error": {"message": "boom", "type": "server_error", "code": None}})
            return
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(body)
            return
        msgs = body.get("messages") or []
        with self.srv.lock:
            self.srv.bodies.append(body)
        system = next((m["content"] for m in msgs if m.get("role") == "system"), "")
        user = next((m["content"] for m in msgs if m.get("role") == "user"), "")
        urls = []
        if isinstance(user, list):  # text and image parts
            urls = [p["image_url"]["url"] for p in user if p.get("type") == "image_url"]
            user = " ".join(p.get("text", "") for p in user if isinstance(p, dict))
        task = re.search(r"^task: (\S+)", system, re.M)
        prompts = re.findall(r"<prompt>\n?(.*?)\n?</prompt>", user, re.S)
        if task and not user.strip() and urls:  # the image alone: answered from its URL
            prompts = urls[:1]
        answer = re.search(r"<answer>\n?(.*?)\n?</answer>", user, re.S)
        if task and prompts:
            said = expected_answer(task.group(1), prompts[0], answer.group(1) if answer else "")
            content = said if isinstance(said, str) else orjson.dumps(said).decode()
        else:
            content = "Hello from the stand-in server."
        if fault == "garbage":
            content = "I think the answer is probably yes, mostly."
        elif fault == "empty":
            content = ""
        elif fault == "truncated":
            content = content[: len(content) // 2]
        message = {"role": "assistant", "content": content}
        if body.get("reasoning_effort"):  # as vLLM's reasoning parsers answer
            message["reasoning_content"] = f"thinking ({body['reasoning_effort']}) about it"
        self._send(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "length" if fault == "truncated" else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": len(user) // 4 + 1,
                    "completion_tokens": len(content) // 4 + 1,
                    "total_tokens": (len(user) + len(content)) // 4 + 2,
                },
            },
        )

    def _embeddings(self, body: dict) -> None:
        inputs = body.get("input")
        inputs = inputs if isinstance(inputs, list) else [inputs]
        data = []
        for i, text in enumerate(inputs):
            rng = random.Random(_bits(str(text)))
            data.append(
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": [rng.gauss(0, 1) for _ in range(self.srv.dim)],
                }
            )
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {
                    "prompt_tokens": sum(len(str(t)) for t in inputs) // 4 + 1,
                    "total_tokens": sum(len(str(t)) for t in inputs) // 4 + 1,
                },
            },
        )


def main() -> None:
    """``python -m arena_assets_tests.labelling_server [LATENCY_S]``: serve in this process,
    print the base URL on the first line, stop when stdin closes (benchmarks use this so the
    server does not share the client's interpreter)."""
    import sys

    with LabellingServer(latency_s=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as srv:
        print(srv.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
