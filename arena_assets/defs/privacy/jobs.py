"""The right to be forgotten in Dagster: the ``forget_user`` job and the rebuild after it.

``forget_user`` (launch it from the UI's Launchpad with the config below) puts one user on
the lake's forget list (every later ingest keeps them out), removes them from every lake
table, rewrites the month releases and deletes the LLM answers computed from their prompts
alone (``arena_assets.privacy.forget``, the same library as ``arena-assets forget``), logs
what it removed and the raw files of every month folder that hold them, and records the forget in
the lake's journal with the partitions to rebuild (``rebuild.rebuild_plan``, from this code
location's asset graph). When it succeeds, ``rematerialize_after_forget_sensor`` launches a
``rematerialize_after_forget`` run for the first month with work left; each successful run
is recorded in the journal and ``rebuild_next_month_sensor`` launches the next month (in
order: a month's battles read the earlier months'). A failed run leaves its months in the
journal: the next ``forget_user`` run (for anyone, or with no user at all: "finish what is
unfinished") asks for them again. Both sensors run by default: a forget that leaves stale
boards behind is not done.
"""

import dagster as dg

from arena_assets.defs.completions.resources import CompletionSettings
from arena_assets.defs.failures import one_line_failures
from arena_assets.defs.ingest.resources import IngestSettings
from arena_assets.defs.llm_resources import LLMCache
from arena_assets.defs.privacy.rebuild import (
    JOURNALS_TAG,
    materialized_months,
    pending_by_month,
    pending_steps,
    rebuild_plan,
    record_rebuilt,
)
from arena_assets.defs.release.resources import ReleaseSettings
from arena_assets.defs.resources import ArenaStorage

AFFECTED_TAG = "arena/forget_affected_months"
MONTH_TAG = "arena/forget_month"


class ForgetConfig(dg.Config):
    """Who to forget: ``user`` (user id or IP as logged; hashed with ARENA_USER_SALT) or
    ``user_hash``; neither = only finish the rebuild of earlier forgets. ``purge_raw`` also
    blanks their lines in the raw files of every month folder (ingest keeps them out
    anyway, through the forget list; this removes their text from the platform's copy);
    ``dry_run`` counts and changes nothing."""

    user: str = ""
    user_hash: str = ""
    purge_raw: bool = False
    dry_run: bool = False


def release_target(storage: ArenaStorage, settings: ReleaseSettings):
    from arena_assets.privacy.releases import ReleaseTarget

    return ReleaseTarget(
        settings.release_root,
        settings.secret,
        settings.license,
        storage._options_for(settings.release_root),
        settings.published,
    )


def _asset_graph(context: dg.OpExecutionContext):
    """This code location's asset graph: the run's repository, or, when the job runs
    outside one (``execute_in_process``), the graph of the defs folder loaded here."""
    try:
        return context.repository_def.asset_graph
    except Exception:  # no repository on the step context (dagster's CheckError)
        from pathlib import Path

        package = Path(__file__).resolve().parents[2]  # arena_assets/
        return dg.load_from_defs_folder(path_within_project=package).resolve_asset_graph()


@dg.op(tags={"kind": "privacy"})
@one_line_failures
def forget_user_rows(
    context: dg.OpExecutionContext,
    config: ForgetConfig,
    storage: ArenaStorage,
    ingest_settings: IngestSettings,
    release_settings: ReleaseSettings,
    completion_settings: CompletionSettings,
    llm_cache: LLMCache,
) -> list[str]:
    """Remove the user from the lake and the releases; returns the months with rebuild
    work left over every unfinished forget (also a run tag for the sensor)."""
    from arena_assets.ingest.forgotten import ForgetListSaltError
    from arena_assets.privacy import journal
    from arena_assets.privacy.forget import forget_user, user_hash_of
    from arena_assets.privacy.releases import released_months

    if config.user and config.user_hash:
        raise dg.Failure("give at most one of `user` and `user_hash`")
    lake = storage.lake()
    target = release_target(storage, release_settings)
    if config.user or config.user_hash:
        who = config.user_hash or user_hash_of(config.user, ingest_settings.user_salt)
        graph = _asset_graph(context)
        materialized = materialized_months(
            lake,
            context.instance,
            lambda: set(released_months(target, sorted(lake.months("conversations")))),
        )
        try:
            report = forget_user(
                lake,
                user_hash=who,
                raw_root=storage.raw_root,
                salt=ingest_settings.user_salt,
                identity=config.user or None,
                dry_run=config.dry_run,
                purge_raw=config.purge_raw,
                storage_options=storage.raw_storage_options(),
                release=target,
                plan_rebuild=lambda months, edited: rebuild_plan(
                    graph, months, materialized, edited
                ),
                completions_root=completion_settings.root_for(storage.raw_root),
                cache_root=llm_cache.root_for(storage),
                cache_storage_options=llm_cache.storage_options(storage),
            )
        except ForgetListSaltError as exc:  # nothing was removed: one line, no traceback
            raise dg.Failure(description=str(exc)) from exc
        # the report names the hash, tables, months and files, never the identity itself
        context.log.info("\n".join(report.lines()))
        for line in report.lines():
            if line.startswith("warning:"):
                context.log.warning(line)
    months = [] if config.dry_run else list(pending_by_month(journal.unfinished(lake)))
    context.instance.add_run_tags(context.run_id, {AFFECTED_TAG: ",".join(months)})
    return months


@dg.job(
    description="Remove one user from every partition of every lake table (by user "
    "hash, conversation id, prompts only they typed) and from the month "
    "releases; the sensors then rebuild what depends on them, month by month."
)
def forget_user():
    forget_user_rows()


rematerialize_after_forget = dg.define_asset_job(
    "rematerialize_after_forget",
    selection=dg.AssetSelection.all() - dg.AssetSelection.assets("raw_logs", "raw_rejects"),
    description="The partitions a forget planned to rebuild, one month per run.",
)


def next_request(storage: ArenaStorage) -> dg.RunRequest | None:
    """The run for the first month with rebuild work left, if any."""
    from arena_assets.privacy import journal

    entries = journal.unfinished(storage.lake())
    steps = pending_steps(entries)
    if not steps:
        return None
    month, assets = steps[0]
    ids = ",".join(e.id for e in entries)
    return dg.RunRequest(
        run_key=f"forget:{month}:{ids}:{sum(len(e.rebuilt) for e in entries)}",
        partition_key=month,
        asset_selection=[dg.AssetKey(a) for a in assets],
        tags={JOURNALS_TAG: ids, MONTH_TAG: month, "arena/after_forget": "true"},
    )


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[forget_user],
    request_job=rematerialize_after_forget,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="After a successful forget_user run, rebuild the first month it left stale.",
)
def rematerialize_after_forget_sensor(context: dg.RunStatusSensorContext, storage: ArenaStorage):
    return next_request(storage)


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[rematerialize_after_forget],
    request_job=rematerialize_after_forget,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Records a rebuilt month in the forget journal and asks for the next one.",
)
def rebuild_next_month_sensor(context: dg.RunStatusSensorContext, storage: ArenaStorage):
    run = context.dagster_run
    month = run.tags.get(MONTH_TAG)
    if month:  # what the run did materialize, from its own events
        records = context.instance.get_records_for_run(
            run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
        ).records
        done = {r.event_log_entry.dagster_event.asset_key.to_user_string() for r in records}
        record_rebuilt(storage.lake(), month, done)
    return next_request(storage)
