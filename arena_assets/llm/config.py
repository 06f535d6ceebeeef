"""What one LLM task needs to know: where the endpoint is, which model, at what price, and
whether its requests are sent one call at a time (``online``) or as Batch-API jobs
(``batch``: ``llm.batch_api``).

A plain dataclass so the library works outside Dagster (CLI, benchmarks, tests); the Dagster
resources in ``arena_assets.defs`` bind one field per environment variable and build it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from urllib.parse import urlsplit

MODES = ("online", "batch")
# OpenAI's Batch API bills half its online prices; where the batch prices are not set, an
# OpenAI endpoint is planned at this share of the online ones, any other at the online ones
# (a vLLM server of one's own, a provider whose batch discount the project cannot know)
OPENAI_BATCH_SHARE = 0.5
OPENAI_HOSTS = ("api.openai.com",)


def is_openai(base_url: str) -> bool:
    """Whether ``base_url`` is OpenAI's own API (its batch prices are half the online ones)."""
    return (urlsplit(base_url).hostname or "").lower() in OPENAI_HOSTS


@dataclass(frozen=True)
class LLMTask:
    """One model behind one OpenAI-compatible base URL, with call and cost settings.

    ``base_url`` is any OpenAI-compatible root ending in ``/v1``: OpenAI
    (``https://api.openai.com/v1``), vLLM (``http://host:8000/v1``), Ollama
    (``http://host:11434/v1``), a llama.cpp server, or the simulated arena.
    Servers that ignore keys (vLLM, Ollama) still need a non-empty ``api_key``.
    """

    model: str
    base_url: str
    api_key: str = "sk-no-key"
    temperature: float = 0.0
    max_tokens: int = 256
    max_concurrency: int = 8
    timeout: float = 60.0  # seconds per HTTP attempt
    max_retries: int = 5  # the openai client's own retries (429, 408, 409, 5xx, timeouts)
    parse_retries: int = 1  # re-asks after an answer that fails to parse (a new sample)
    price_input_per_1m: float = 0.0  # currency units per 1M prompt tokens
    price_output_per_1m: float = 0.0  # per 1M completion tokens
    # other request fields sent as-is in the JSON body (top_p, seed, reasoning_effort, ...);
    # part of the cache key like temperature and max_tokens
    extra_params: dict = field(default_factory=dict)
    # "online": one call a request; "batch": the uncached requests as Batch-API jobs
    # (llm.batch_api), half price at OpenAI, answered within its 24-hour window
    mode: str = "online"
    # per 1M tokens in batch mode; None: OPENAI_BATCH_SHARE of the online prices at OpenAI,
    # the online prices elsewhere (batch_prices)
    price_input_per_1m_batch: float | None = None
    price_output_per_1m_batch: float | None = None
    # whether its route has a Batch-API form (a reward model's Pooling API has none): where
    # not, batch mode is refused and the plan's batch figures are its online ones
    batchable: bool = True
    batch_poll_s: float = 30.0  # seconds between two looks at a batch in flight
    batch_wait_s: float | None = None  # the most a run waits for its batches (None: until they end)
    # the settings this task is bound to (ARENA_<setting>_*, "CANDIDATES" for a candidate):
    # what `arena-assets llm export-batch --task` selects; no part of the cache key
    setting: str = ""

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("LLMTask.model is empty: set the model name the endpoint serves")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"LLMTask.base_url must be an http(s) URL, got {self.base_url!r}")
        if self.max_concurrency < 1:
            raise ValueError("LLMTask.max_concurrency must be >= 1")
        if self.mode not in MODES:
            raise ValueError(f"LLMTask.mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.batch and not self.batchable:
            raise ValueError(f"{self.model}: this task's route has no Batch-API form (mode online)")

    @property
    def batch(self) -> bool:
        return self.mode == "batch"

    def batch_prices(self) -> tuple[float, float]:
        """(input, output) per 1M tokens of a batch request: the batch prices where set,
        else half the online ones at OpenAI, else the online ones."""
        if not self.batchable:
            return self.price_input_per_1m, self.price_output_per_1m
        share = OPENAI_BATCH_SHARE if is_openai(self.base_url) else 1.0
        return (
            self.price_input_per_1m * share
            if self.price_input_per_1m_batch is None
            else self.price_input_per_1m_batch,
            self.price_output_per_1m * share
            if self.price_output_per_1m_batch is None
            else self.price_output_per_1m_batch,
        )

    def online_cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """What the tokens cost as online calls."""
        return (
            prompt_tokens * self.price_input_per_1m + completion_tokens * self.price_output_per_1m
        ) / 1_000_000

    def batch_cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """What the tokens cost as Batch-API requests."""
        pin, pout = self.batch_prices()
        return (prompt_tokens * pin + completion_tokens * pout) / 1_000_000

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """Estimated cost of one request from the configured price table, at the prices of
        the task's mode (an online re-ask of a batch run is asked by the task in online
        mode, at the online prices)."""
        if self.batch:
            return self.batch_cost(prompt_tokens, completion_tokens)
        return self.online_cost(prompt_tokens, completion_tokens)

    def online(self) -> LLMTask:
        """This task asking one call at a time (a batch run's re-asks)."""
        return self if not self.batch else replace(self, mode="online")

    def generation_params(self) -> dict:
        """The request parameters that change an answer (part of the cache key)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, **self.extra_params}

    def describe(self) -> dict:
        """Settings safe to log (no key)."""
        d = asdict(self)
        d.pop("api_key")
        return d
