"""The topics stage's own settings (the endpoints are the shared ``labeler`` / ``embedder``)."""

from __future__ import annotations

import dagster as dg

from arena_assets.labels.clusters import ClusterConfig
from arena_assets.labels.label import LabelConfig
from arena_assets.labels.prompt_sets import PromptSet, load_prompt_set


class TopicSettings(dg.ConfigurableResource):
    """How prompts are labelled and clustered, and when the parse-failure check warns."""

    max_prompt_chars: int = 12_500  # the joined user turns are cut here (LMArena's labeller)
    # a YAML prompt set (labels.prompt_sets); empty = the project's default set
    label_prompts: str = ""
    # where image files are (<root>/<sha256>.<ext>, local or s3://): vision labels then get
    # the image as a data URL; empty = the stored reference (for the simulated arena)
    image_root: str = ""
    label_refusals: bool = True
    # "true": a reply with no readable tag is asked once more (a departure from LMArena's
    # labeller, which keeps it as read); a string like every boolean variable, empty = off
    reask_unreadable: str = "false"
    # the WARN check's threshold per label group; a string (no float env vars), empty = 0.05
    max_parse_failure_rate: str = "0.05"
    # the blocking check's threshold: share of conversations per label group whose label
    # call failed or did not parse (neither is cached: a rerun asks them again); a string
    max_missing_label_rate: str = "0.05"
    cluster_method: str = "agglomerative"  # agglomerative | kmeans | hdbscan
    n_clusters: int = 0  # 0 = pick k by silhouette
    name_clusters_by_llm: bool = True  # False: c-TF-IDF keywords name the clusters
    seed: int = 0

    def parse_failure_threshold(self) -> float:
        return float(self.max_parse_failure_rate) if self.max_parse_failure_rate.strip() else 0.05

    def missing_label_threshold(self) -> float:
        return float(self.max_missing_label_rate) if self.max_missing_label_rate.strip() else 0.05

    def prompt_set(self) -> PromptSet:
        return load_prompt_set(self.label_prompts)

    def reask_on(self) -> bool:
        return self.reask_unreadable.strip().lower() in ("1", "true", "yes", "on")

    def label_config(self) -> LabelConfig:
        return LabelConfig(
            max_prompt_chars=self.max_prompt_chars,
            label_refusals=self.label_refusals,
            prompt_set=self.prompt_set(),
            image_root=self.image_root,
            reask_unreadable=self.reask_on(),
        )

    def cluster_config(self) -> ClusterConfig:
        return ClusterConfig(
            method=self.cluster_method, n_clusters=self.n_clusters or None, seed=self.seed
        )


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "topic_settings": TopicSettings(
                max_prompt_chars=dg.EnvVar.int("ARENA_LABEL_MAX_PROMPT_CHARS"),
                label_prompts=dg.EnvVar("ARENA_LABEL_PROMPTS"),
                image_root=dg.EnvVar("ARENA_IMAGE_ROOT"),
                reask_unreadable=dg.EnvVar("ARENA_LABEL_REASK_UNREADABLE"),
                max_parse_failure_rate=dg.EnvVar("ARENA_LABEL_MAX_PARSE_FAILURE_RATE"),
                max_missing_label_rate=dg.EnvVar("ARENA_LABEL_MAX_MISSING_RATE"),
            )
        }
    )
