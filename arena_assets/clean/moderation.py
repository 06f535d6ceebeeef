"""Content moderation through any OpenAI-compatible `/v1/moderations` endpoint.

The `openai` client does the HTTP, the retries with exponential backoff on 408/409/429/5xx
and connection errors/timeouts (`max_retries`), and the response parsing; we only batch
the texts and bound the number of requests in flight with a thread pool (the client is
thread-safe). What is moderated: the conversation's user turns joined (a harmful request
often comes in a follow-up turn), PII already redacted so that no personal data leaves
the machine, truncated to `max_chars`. Identical texts are sent once.

A batch that still fails after the client's retries raises: a month whose moderation
silently went missing would look clean, which is worse than a failed run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import polars as pl


class Moderator(Protocol):
    def moderate(self, texts: Sequence[str]) -> list[tuple[bool, str]]:
        """(flagged, JSON list of flagged category names) per text."""
        ...


class OpenAIModeration:
    """Moderation via `client.moderations.create(model=..., input=[...])`."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str = "omni-moderation-latest",
        batch_size: int = 32,
        max_concurrency: int = 4,
        max_retries: int = 5,
        timeout_s: float = 60.0,
        max_chars: int = 4000,
    ) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.model = model
        self.batch_size = batch_size
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.max_chars = max_chars
        self._client: Any = None

    def __getstate__(self) -> dict[str, Any]:
        # the client holds an HTTP connection pool: re-created per process
        return {**self.__dict__, "_client": None}

    def _get_client(self) -> Any:
        if self._client is None:
            from openai import OpenAI

            self._client = OpenAI(
                base_url=self.base_url,
                api_key=self.api_key or "not-needed",
                max_retries=self.max_retries,
                timeout=self.timeout_s,
            )
        return self._client

    def _moderate_batch(self, batch: list[str]) -> list[tuple[bool, str]]:
        response = self._get_client().moderations.create(model=self.model, input=batch)
        out = []
        for result in response.results:
            categories = result.categories.model_dump(by_alias=True)
            flagged_names = sorted(name for name, hit in categories.items() if hit)
            out.append((bool(result.flagged), json.dumps(flagged_names)))
        if len(out) != len(batch):
            raise RuntimeError(
                f"moderation endpoint returned {len(out)} results for {len(batch)} inputs"
            )
        return out

    def moderate(self, texts: Sequence[str]) -> list[tuple[bool, str]]:
        clipped = [t[: self.max_chars] for t in texts]
        batches = [
            clipped[i : i + self.batch_size] for i in range(0, len(clipped), self.batch_size)
        ]
        from arena_assets.llm.client import calls_in_flight  # the LLM layer's, loaded when asked

        with calls_in_flight(), ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            results = list(pool.map(self._moderate_batch, batches))
        return [item for batch in results for item in batch]


def moderate_texts(texts: pl.Series, moderation: Moderator | None) -> pl.DataFrame:
    """`moderation_flagged` / `moderation_categories` per text; both null when unset."""
    if moderation is None:
        return pl.DataFrame(
            {
                "moderation_flagged": pl.Series([None] * len(texts), dtype=pl.Boolean),
                "moderation_categories": pl.Series([None] * len(texts), dtype=pl.String),
            }
        )
    frame = texts.fill_null("").to_frame("text")
    unique = frame.get_column("text").unique(maintain_order=True)
    verdicts = moderation.moderate(unique.to_list())
    lookup = pl.DataFrame(
        {
            "text": unique,
            "moderation_flagged": pl.Series([v[0] for v in verdicts], dtype=pl.Boolean),
            "moderation_categories": pl.Series([v[1] for v in verdicts], dtype=pl.String),
        }
    )
    return frame.join(lookup, on="text", how="left", maintain_order="left").drop("text")
