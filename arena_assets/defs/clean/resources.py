"""The cleaning stage's own resources: the moderation endpoint."""

from __future__ import annotations

import dagster as dg


class Moderation(dg.ConfigurableResource):
    """An OpenAI-compatible moderation endpoint; empty base_url = moderation columns stay null."""

    base_url: str = ""
    api_key: str = ""
    model: str = "omni-moderation-latest"
    max_concurrency: int = 4
    batch_size: int = 32

    def client(self):
        """The moderation client, or None when no endpoint is configured."""
        if not self.base_url:
            return None
        from arena_assets.clean import OpenAIModeration

        return OpenAIModeration(
            base_url=self.base_url,
            api_key=self.api_key or "none",
            model=self.model,
            batch_size=self.batch_size,
            max_concurrency=self.max_concurrency,
        )


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "moderation": Moderation(
                base_url=dg.EnvVar("ARENA_MODERATION_BASE_URL"),
                api_key=dg.EnvVar("ARENA_MODERATION_API_KEY"),
                model=dg.EnvVar("ARENA_MODERATION_MODEL"),
            )
        }
    )
