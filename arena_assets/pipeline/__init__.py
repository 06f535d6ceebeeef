"""Month steps over the lake, one module per stage: read the month's inputs, call the
stage's pure library, write its tables, and return the figures its checks and metadata
need. Shared by the Dagster assets (``arena_assets.defs.<stage>``), the CLI and the
benchmarks, so each figure is computed in one place.

``ingest`` -> ``clean`` -> ``battles`` -> ``leaderboards``; ``topics`` (labels, clusters)
after ``clean``; ``cli`` runs the demo.
"""

# every asset that calls an LLM endpoint, in graph order: what `arena-assets plan` bills
# (``pipeline.plan``); here, without imports, so the CLI's help lists them at no cost
LLM_ASSETS = (
    "topic_labels",
    "topic_clusters",
    "prompt_embeddings",
    "bench_prompts",
    "model_answers",
    "judgments",
    "judge_human_agreement",
    "over_refusal",
)
# months a backfill run of an LLM asset covers (its multi-run backfill policy): a run
# spends one budget a month and stays short enough to rerun; `arena-assets plan --to`
# plans a range in runs of this many months, as a backfill launches them
LLM_MONTHS_PER_RUN = 3
