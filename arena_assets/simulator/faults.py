"""Fault settings of the simulated endpoint (``endpoint.py``), and what each fault does.

Faults apply to the POST /v1 routes: each request first takes the next entry of
``Faults.script`` (deterministic sequences for tests), else draws by the rates; every
reply leaves ``latency`` seconds after its request arrived (the answer is worked out within
that time, as a real endpoint's generation is; later if that work takes longer). A 429
carries ``Retry-After`` (seconds) and ``retry-after-ms``; "slow" answers ``slow_seconds``
later still (a client timeout shorter than that sees a timeout); "garbage" returns
a well-formed envelope whose content no parser should accept (embeddings: vectors of the
wrong size); "empty" returns empty content (embeddings / moderations: an empty list);
"truncated" cuts the content in half with ``finish_reason="length"`` (other routes: the
HTTP body itself is cut). ``prompt_token_scale`` is not a fault: it bills prompt tokens as
an endpoint with another tokenizer would.

The Batch API's jobs (``batches.py``) end ``batch_delay`` seconds after their creation, or
once ``batch_hold`` is cleared (a test holds a job in flight for as long as it needs, then
lets it end); each line of a job draws the faults above like a call (a 429 or 500 is an
error line), and, from its own seeded draw, ``batch_error_rate`` of the lines end in the
error file and ``batch_missing_rate`` in neither file (a server that lost them). A share
``batch_expire`` of the jobs expires, ``batch_expire_done`` of its lines answered first and
the others in the error file as ``batch_expired``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

FAULT_KINDS = ("ok", "429", "500", "slow", "garbage", "empty", "truncated")


@dataclass
class Faults:
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_slow: float = 0.0
    rate_garbage: float = 0.0
    rate_empty: float = 0.0
    rate_truncated: float = 0.0
    latency: float = 0.0  # seconds from a /v1 request's arrival to its reply
    slow_seconds: float = 2.0
    retry_after: float = 0.05  # seconds announced in Retry-After / retry-after-ms
    script: list[str] = field(default_factory=list)  # forced outcomes, consumed first
    seed: int = 0
    # the usage's prompt tokens at this multiple of the approximate cl100k count the plan
    # makes: an endpoint whose model has another tokenizer (the plan learns the ratio from
    # its usage, ``llm.plan.input_scale``); 1 bills exactly what the plan counts
    prompt_token_scale: float = 1.0
    # the Batch API (see the module docstring)
    batch_delay: float = 0.0
    batch_hold: bool = False
    batch_expire: float = 0.0
    batch_expire_done: float = 0.5
    batch_error_rate: float = 0.0
    batch_missing_rate: float = 0.0

    def __post_init__(self) -> None:
        scale = self.prompt_token_scale
        if (
            isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0
        ):  # nan too
            raise ValueError(f"prompt_token_scale must be above 0, got {self.prompt_token_scale}")

    @classmethod
    def from_dict(cls, data: dict) -> Faults:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault settings: {sorted(unknown)}")
        bad = [s for s in data.get("script", []) if s not in FAULT_KINDS]
        if bad:
            raise ValueError(f"script entries must be in {FAULT_KINDS}: {bad}")
        return cls(**data)
