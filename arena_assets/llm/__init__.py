"""The LLM client layer every LLM stage uses: config, cache, batch runner, embeddings.

No Dagster here; the resources in ``arena_assets.defs`` build an ``LLMTask`` from env vars.
"""

from arena_assets.llm.batch import (
    BatchReport,
    LLMRequest,
    LLMResult,
    Progress,
    concurrently,
    run_batch,
)
from arena_assets.llm.cache import ResponseCache, request_key
from arena_assets.llm.client import LLMEndpointError, make_client, preflight
from arena_assets.llm.config import LLMTask
from arena_assets.llm.embed import embed_texts, embeddings_cache

__all__ = [
    "BatchReport",
    "LLMEndpointError",
    "LLMRequest",
    "LLMResult",
    "LLMTask",
    "Progress",
    "ResponseCache",
    "concurrently",
    "embed_texts",
    "embeddings_cache",
    "make_client",
    "preflight",
    "request_key",
    "run_batch",
]
