"""Resources shared by every LLM stage: which endpoint and model each task uses, the cache.

Each LLM task (``labeler``, ``embedder``, later ``answerer`` and ``judge``...) is one
``LLMTaskResource`` bound to its own ``ARENA_<TASK>_*`` variables, so each can point at a
different OpenAI-compatible server: OpenAI (``https://api.openai.com/v1``), vLLM
(``http://host:8000/v1``), Ollama (``http://host:11434/v1``), a llama.cpp server. The base
URL ``simulated`` (the default in `.env.example`) is the simulated arena serving at
``ARENA_SIM_BASE_URL`` (`make demo` and `make ui` start one), so the demo, the UI and the
schedule need no key and no network; the product reaches it over HTTP like any endpoint.

The answer cache (``LLMCache``) lives with the lake (``<lake>/_llm_cache``) unless
``ARENA_LLM_CACHE_ROOT`` says otherwise; S3 URLs use the storage resource's credentials.
"""

from __future__ import annotations

import dagster as dg

from arena_assets.defs.resources import ArenaStorage
from arena_assets.llm.cache import ResponseCache
from arena_assets.llm.config import MODES, LLMTask
from arena_assets.llm.embed import embeddings_cache
from arena_assets.llm.endpoints import SIMULATED, simulated_arena_url


def _number(value: str, name: str) -> float:
    """Optional numeric settings arrive as strings (an unset variable must mean "default")."""
    return _optional(value, name) or 0.0


def _optional(value: str, name: str) -> float | None:
    """A numeric setting as a string; empty = None (its default is worked out elsewhere)."""
    try:
        number = float(value) if str(value).strip() else None
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if number is not None and not number >= 0:
        raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    return number


class LLMTaskResource(dg.ConfigurableResource):
    """One LLM task: an OpenAI-compatible base URL, its key, the model and call settings.

    ``base_url="simulated"`` = the simulated arena at ``sim_base_url`` (serving world
    ``sim_seed``, the seed the raw logs were simulated with); an empty ``base_url`` means
    "not configured" (``configured()`` is False: e.g. embeddings fall back to the offline
    model).
    """

    base_url: str = SIMULATED
    api_key: str = ""
    model: str = ""
    max_concurrency: int = 8
    timeout: float = 60.0
    max_retries: int = 5
    # prices per 1M tokens as strings: an empty variable means 0 (no cost table)
    price_input_per_1m: str = ""
    price_output_per_1m: str = ""
    sim_seed: int = 7  # the simulated world's seed, named in logs (only for "simulated")
    # where "simulated" is served (`arena-sim serve`; the demo and `make ui` start one and
    # set it). The data and metadata say "simulated", not the port.
    sim_base_url: str = ""
    # the task's variables, ARENA_<env_prefix>_*: named in configuration errors
    env_prefix: str = ""
    # US dollars an LLM asset may spend per month: its plan refused over it, its calls held
    # under it while they run (llm.plan.check_budget, llm.budget); empty = no limit
    budget_usd: str = ""
    # "online" or "batch" (Batch-API jobs: llm.batch_api); batch prices as strings, empty =
    # half the online ones at OpenAI, the online ones elsewhere (LLMTask.batch_prices)
    mode: str = "online"
    price_input_per_1m_batch: str = ""
    price_output_per_1m_batch: str = ""
    # seconds between two looks at a job in flight; the most a run waits for its jobs
    # (empty = until they end)
    batch_poll_seconds: str = "30"
    batch_max_wait_seconds: str = ""
    # False: the task's route has no Batch-API form (the reward model's Pooling API)
    batchable: bool = True

    def budget(self) -> float | None:
        from arena_assets.llm.plan import parse_budget

        return parse_budget(self.budget_usd)

    def batch_waits(self) -> dict:
        """The LLMTask fields of the shared batch settings (poll interval, longest wait)."""
        return {
            "batch_poll_s": _number(
                self.batch_poll_seconds or "30", "ARENA_LLM_BATCH_POLL_SECONDS"
            ),
            "batch_wait_s": _optional(
                self.batch_max_wait_seconds, "ARENA_LLM_BATCH_MAX_WAIT_SECONDS"
            ),
        }

    def configured(self) -> bool:
        return bool(self.base_url.strip()) and bool(self.model.strip())

    def resolved_base_url(self) -> str:
        """The base URL to call: ``ARENA_SIM_BASE_URL`` for ``simulated``."""
        if self.base_url.strip() == SIMULATED:
            setting = f"ARENA_{self.env_prefix}_BASE_URL" if self.env_prefix else "base_url"
            return simulated_arena_url(self.sim_base_url, self.sim_seed, setting)
        return self.base_url.strip()

    def task(self, **overrides) -> LLMTask:
        """The library's ``LLMTask`` for this resource; ``overrides`` set other LLMTask
        fields."""
        if not self.configured():
            raise ValueError(
                "this LLM task has no base URL or model: set its ARENA_*_BASE_URL "
                "and ARENA_*_MODEL variables (see .env.example)"
            )
        p = self.env_prefix
        names = (  # the variables named in a configuration error
            (f"ARENA_{p}_MODE", f"ARENA_{p}_PRICE_INPUT_PER_1M", f"ARENA_{p}_PRICE_OUTPUT_PER_1M",
             f"ARENA_{p}_PRICE_INPUT_PER_1M_BATCH", f"ARENA_{p}_PRICE_OUTPUT_PER_1M_BATCH")
            if p
            else ("mode", "price_input_per_1m", "price_output_per_1m",
                  "price_input_per_1m_batch", "price_output_per_1m_batch")
        )  # fmt: skip
        mode = (self.mode or "online").strip().lower()
        if mode not in MODES:
            raise ValueError(f"{names[0]} must be one of {', '.join(MODES)}, got {self.mode!r}")
        return LLMTask(
            model=self.model.strip(),
            base_url=self.resolved_base_url(),
            api_key=self.api_key or "sk-no-key",
            max_concurrency=self.max_concurrency,
            timeout=self.timeout,
            max_retries=self.max_retries,
            price_input_per_1m=_number(self.price_input_per_1m, names[1]),
            price_output_per_1m=_number(self.price_output_per_1m, names[2]),
            batchable=self.batchable,
            **(
                {
                    "mode": mode if self.batchable else "online",
                    "price_input_per_1m_batch": _optional(self.price_input_per_1m_batch, names[3]),
                    "price_output_per_1m_batch": _optional(
                        self.price_output_per_1m_batch, names[4]
                    ),
                    **self.batch_waits(),
                    "setting": self.env_prefix,
                }
                | overrides
            ),
        )


class LLMCache(dg.ConfigurableResource):
    """Where LLM answers are cached: ``root`` or, when empty, ``<lake>/_llm_cache``."""

    root: str = ""

    def root_for(self, storage: ArenaStorage) -> str:
        return self.root.strip() or f"{storage.lake_root.rstrip('/')}/_llm_cache"

    def storage_options(self, storage: ArenaStorage) -> dict:
        return storage.storage_options() if self.root_for(storage).startswith("s3://") else {}

    def cache(self, storage: ArenaStorage, namespace: str, chunk_size: int = 64) -> ResponseCache:
        return ResponseCache(
            self.root_for(storage), namespace, chunk_size, self.storage_options(storage)
        )

    def embeddings(self, storage: ArenaStorage) -> ResponseCache:
        return embeddings_cache(self.root_for(storage), self.storage_options(storage))


def llm_task_resource(prefix: str, batch: bool = True) -> LLMTaskResource:
    """An ``LLMTaskResource`` bound to ``ARENA_<PREFIX>_*`` (BASE_URL, API_KEY, MODEL,
    MAX_CONCURRENCY, PRICE_INPUT_PER_1M, PRICE_OUTPUT_PER_1M; with ``batch``, MODE and the
    PRICE_*_BATCH prices) and the shared simulator and batch settings; later LLM stages
    (answers, judge) bind theirs the same way. ``batch`` False: a task whose route has no
    Batch-API form (the reward model's Pooling API), always online."""
    modes = (
        {
            "mode": dg.EnvVar(f"ARENA_{prefix}_MODE"),
            "price_input_per_1m_batch": dg.EnvVar(f"ARENA_{prefix}_PRICE_INPUT_PER_1M_BATCH"),
            "price_output_per_1m_batch": dg.EnvVar(f"ARENA_{prefix}_PRICE_OUTPUT_PER_1M_BATCH"),
            "batch_poll_seconds": dg.EnvVar("ARENA_LLM_BATCH_POLL_SECONDS"),
            "batch_max_wait_seconds": dg.EnvVar("ARENA_LLM_BATCH_MAX_WAIT_SECONDS"),
        }
        if batch
        else {"batchable": False}
    )
    return LLMTaskResource(
        base_url=dg.EnvVar(f"ARENA_{prefix}_BASE_URL"),
        api_key=dg.EnvVar(f"ARENA_{prefix}_API_KEY"),
        model=dg.EnvVar(f"ARENA_{prefix}_MODEL"),
        max_concurrency=dg.EnvVar.int(f"ARENA_{prefix}_MAX_CONCURRENCY"),
        price_input_per_1m=dg.EnvVar(f"ARENA_{prefix}_PRICE_INPUT_PER_1M"),
        price_output_per_1m=dg.EnvVar(f"ARENA_{prefix}_PRICE_OUTPUT_PER_1M"),
        sim_seed=dg.EnvVar.int("ARENA_SIM_WORLD_SEED"),
        sim_base_url=dg.EnvVar("ARENA_SIM_BASE_URL"),
        budget_usd=dg.EnvVar("ARENA_LLM_BUDGET_USD"),
        env_prefix=prefix,
        **modes,
    )


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "labeler": llm_task_resource("LABELER"),
            "embedder": llm_task_resource("EMBED"),
            "llm_cache": LLMCache(root=dg.EnvVar("ARENA_LLM_CACHE_ROOT")),
        }
    )
