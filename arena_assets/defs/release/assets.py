"""Stage 5, release: each month's public snapshot (Chat, Battle, Bench, SFT export).

Not automated: publishing is a decision, so a release is materialized by hand (or a
backfill) once the month's checks are green.
"""

import dagster as dg

from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.partitions import monthly_partitions, months_in_window
from arena_assets.defs.release.resources import ReleaseSettings
from arena_assets.defs.resources import ArenaStorage


@dg.asset(
    partitions_def=monthly_partitions,
    # the bench is part of the release: its prompts, the candidates' answers and the
    # judgments are inputs, so a job or backfill of every asset releases after them
    deps=["conversations", "battles", "bench_prompts", "model_answers", "judgments"],
    group_name="release",
    kinds={"parquet", "huggingface"},
    backfill_policy=dg.BackfillPolicy.single_run(),
)
@one_line_failures
def month_release(
    context: dg.AssetExecutionContext, storage: ArenaStorage, release_settings: ReleaseSettings
):
    """The month's public datasets in the Hugging Face layout, each with a dataset card:
    arena-chat-MONTH (redacted conversations), arena-battle-MONTH (votes), arena-bench-MONTH
    (when the lake has `bench_prompts` for the month) and arena-sft-MONTH (OpenAI chat JSONL).
    User hashes are re-keyed with a per-release salt: within the month the chats' `user_id`
    and the battles' `judge` are one key for one person, while no key joins two months or
    the lake. The bench and SFT datasets hold no user identifier."""
    from arena_assets.release import bench_release_from_lake, release_salt, write_month_release

    lake = storage.lake()
    options = storage._options_for(release_settings.release_root)
    for month in months_in_window(context):
        battles = lake.read("battles", month) if lake.exists("battles", month) else None
        has_bench = lake.exists("bench_prompts", month)
        bench = bench_release_from_lake(
            lake, month
        )  # prompts, answers, judgments: Arena-Hard layout
        summary = write_month_release(
            month,
            release_settings.release_root,
            conversations=lake.read("conversations", month),
            battles=battles,
            bench=bench,
            salt=release_salt(release_settings.secret, month),
            release_name=month,
            license=release_settings.license,
            storage_options=options,
        )
        context.add_asset_metadata(
            {
                "month": month,
                "datasets": dg.MetadataValue.json(summary.datasets),
                "rows": dg.MetadataValue.json(summary.rows),
                "battle_counts": dg.MetadataValue.json(summary.battle_counts),
                "sft_skipped": dg.MetadataValue.json(summary.sft_skipped),
                # the chat user_id and the battle judge are one key within the month; no
                # key joins two months (each month's salt is its own)
                "user_keys": dg.MetadataValue.json(summary.user_keys),
                "bench": (
                    "released from bench_prompts"
                    if has_bench
                    else "not released: no bench_prompts in the lake for this month"
                ),
                "path": dg.MetadataValue.path(f"{release_settings.release_root.rstrip('/')}"),
            },
            partition_key=month,
        )
    return dg.MaterializeResult()
