"""The right to be forgotten in Dagster: the ``forget_user`` job and what follows it.

``forget_user`` (launch it from the UI's Launchpad with the config below) removes every
row of one user from the lake (``arena_assets.privacy.forget``, the same library as
``arena-assets forget``), logs what it removed per table and month, and tags its run with
the months it touched. When it succeeds, ``rematerialize_after_forget_sensor`` asks for
the derived partitions to be rebuilt from the forgotten tables: conversations and
battles of each affected month, and the leaderboards of every month from the first
affected one on (a snapshot covers all battles up to its month). The sensor is running
by default: a forget that leaves stale leaderboards behind is not done.
"""

import dagster as dg

from arena_assets.defs.completions.resources import CompletionSettings
from arena_assets.defs.ingest.resources import IngestSettings
from arena_assets.defs.resources import ArenaStorage

AFFECTED_TAG = "arena/forget_affected_months"
MONTHLY_DERIVED = ("conversations", "battles", "battle_cells")
CUMULATIVE_DERIVED = ("arena_leaderboard", "leaderboard_history")
COPILOT_DERIVED = ("copilot_leaderboard",)  # cumulative too; its months are its own


class ForgetConfig(dg.Config):
    """Who to forget: ``user`` (user id or IP as logged; hashed with ARENA_USER_SALT) or
    ``user_hash``; ``purge_raw`` also blanks their lines in the raw JSON-lines files
    (otherwise a re-ingest of those months would bring them back); ``dry_run`` counts
    and changes nothing."""

    user: str = ""
    user_hash: str = ""
    purge_raw: bool = False
    dry_run: bool = False


@dg.op(tags={"kind": "privacy"})
def forget_user_rows(context: dg.OpExecutionContext, config: ForgetConfig, storage: ArenaStorage,
                     ingest_settings: IngestSettings, completion_settings: CompletionSettings) -> list[str]:
    """Remove the user's rows from every lake table with a user column; returns the
    affected months (also set as a run tag for the rematerialization sensor)."""
    from arena_assets.privacy.forget import forget_user, user_hash_of

    if bool(config.user) == bool(config.user_hash):
        raise dg.Failure("give exactly one of `user` and `user_hash`")
    target = config.user_hash or user_hash_of(config.user, ingest_settings.user_salt)
    report = forget_user(
        storage.lake(), user_hash=target, raw_root=storage.raw_root,
        salt=ingest_settings.user_salt, identity=config.user or None, dry_run=config.dry_run,
        purge_raw=config.purge_raw, storage_options=storage.raw_storage_options(),
        completions_root=completion_settings.root_for(storage.raw_root))
    # the report names the hash, tables, months and raw files, never the identity itself
    context.log.info("\n".join(report.lines()))
    months = [] if config.dry_run else report.affected_months
    context.instance.add_run_tags(context.run_id, {AFFECTED_TAG: ",".join(months)})
    return months


@dg.job(description="Remove every row of one user from every partition of every lake table "
                    "(raw_logs, raw_rejects, conversations, battles, and any later table with a "
                    "user_hash / voter_hash column); the sensor then rebuilds what depends "
                    "on them.")
def forget_user():
    forget_user_rows()


rematerialize_after_forget = dg.define_asset_job(
    "rematerialize_after_forget",
    selection=dg.AssetSelection.assets(*MONTHLY_DERIVED, *CUMULATIVE_DERIVED, *COPILOT_DERIVED),
    description="Conversations, battles and leaderboards of the months a forget touched.",
)


def rematerialize_requests(affected: list[str], leaderboard_months: list[str],
                           raw_logs_months: list[str] | None = None,
                           copilot_months: list[str] | None = None) -> list[dg.RunRequest]:
    """One run per month: its conversations and battles when affected (and its raw_logs
    still exist: a month past retention keeps its forgotten tables as they are), and the
    leaderboards of every month from the first affected one on; Copilot Arena's board in
    the months it was built (``copilot_months``) from the first affected one on."""
    if not affected:
        return []
    first = min(affected)
    copilot = {m for m in copilot_months or () if m >= first}
    months = sorted(set(affected) | {m for m in leaderboard_months if m >= first} | copilot)
    requests = []
    rebuildable = set(affected if raw_logs_months is None else raw_logs_months)
    for month in months:
        monthly = month in affected and month in rebuildable
        boards = CUMULATIVE_DERIVED if month in affected or month in leaderboard_months else ()
        assets = [*(MONTHLY_DERIVED if monthly else ()), *boards, *(COPILOT_DERIVED if month in copilot else ())]
        requests.append(dg.RunRequest(
            run_key=None, partition_key=month,
            asset_selection=[dg.AssetKey(a) for a in assets],
            tags={"arena/after_forget": "true"}))
    return requests


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[forget_user],
    request_job=rematerialize_after_forget,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="After a successful forget_user run, rebuild the partitions it affected.",
)
def rematerialize_after_forget_sensor(context: dg.RunStatusSensorContext, storage: ArenaStorage):
    tag = context.dagster_run.tags.get(AFFECTED_TAG, "")
    affected = [m for m in tag.split(",") if m]
    lake = storage.lake()
    return rematerialize_requests(affected, lake.months("arena_leaderboard"),
                                  lake.months("raw_logs"), lake.months("copilot_leaderboard"))
