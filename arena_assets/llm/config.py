"""What one LLM task needs to know: where the endpoint is, which model, and at what price.

A plain dataclass so the library works outside Dagster (CLI, benchmarks, tests); the Dagster
resources in ``arena_assets.defs`` bind one field per environment variable and build it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


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

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("LLMTask.model is empty: set the model name the endpoint serves")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"LLMTask.base_url must be an http(s) URL, got {self.base_url!r}")
        if self.max_concurrency < 1:
            raise ValueError("LLMTask.max_concurrency must be >= 1")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Estimated cost of one call from the configured price table."""
        return (
            prompt_tokens * self.price_input_per_1m + completion_tokens * self.price_output_per_1m
        ) / 1_000_000

    def generation_params(self) -> dict:
        """The request parameters that change an answer (part of the cache key)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, **self.extra_params}

    def describe(self) -> dict:
        """Settings safe to log (no key)."""
        d = asdict(self)
        d.pop("api_key")
        return d
