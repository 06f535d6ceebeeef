"""After a forget: which partitions to rebuild, and rebuilding them with the assets' own code.

The plan comes from the code location's asset graph, not from a list kept here: every asset
downstream of ``raw_logs`` (the user's rows all start there), in every month its partition
mapping reaches from the months the user was in, and downstream of every other table the
forget edited (``completion_battles``, read from Copilot Arena's own records: its board
follows). Monthly assets follow their own month;
the battles of later months follow too (their anomaly test reads the earlier months'
kept votes); the cumulative boards follow every later month. Only partitions that exist
are rebuilt (a month never materialized stays unmaterialized). ``raw_logs`` and
``raw_rejects`` are not rebuilt, nor is any edited table with nothing upstream of it that
changed: the forget removed the user's rows there, and a re-ingest would read the user back
from the raw files unless they were purged.

Rebuilding is materializing: ``arena-assets forget --recompute`` runs the plan in-process
with ``dg.materialize`` over the code location's assets and resources (the same settings
as any run: the process environment, the shell winning over ``.env``), month by month in
order, recording the runs in the instance of ``DAGSTER_HOME`` when set; the Dagster path
launches ``rematerialize_after_forget`` runs for the same plan (``jobs.py``). Either way
each month's success is recorded in the forget's journal, so a failed rebuild is resumed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import dagster as dg

from arena_assets.privacy import journal
from arena_assets.privacy.journal import ForgetEntry
from arena_assets.storage import Lake

ROOT = dg.AssetKey("raw_logs")
NOT_REBUILT = frozenset({"raw_logs", "raw_rejects"})
PUBLISH_LAST = frozenset({"month_release"})
JOURNALS_TAG = "arena/forget_journals"


def _downstream(graph, child: dg.AssetKey, parent: dg.AssetKey, months: set[str]) -> set[str]:
    pdef, cdef = graph.get(parent).partitions_def, graph.get(child).partitions_def
    if pdef is None or cdef is None:
        return set()
    subset = pdef.empty_subset().with_partition_keys(sorted(months))
    mapping = graph.get_partition_mapping(child, parent)
    return set(
        mapping.get_downstream_partitions_for_partitions(subset, pdef, cdef).get_partition_keys()
    )


def rebuild_plan(
    graph,
    months: Iterable[str],
    materialized: Callable[[str], set[str]],
    edited: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, list[str]]:
    """asset -> months to rebuild after forgetting a user who was in ``months``; ``edited``
    (table -> months the forget changed) adds the tables the graph knows as starting points
    besides ``raw_logs``."""
    seeds: dict[dg.AssetKey, set[str]] = {ROOT: set(months)}
    for table, changed in (edited or {}).items():
        if graph.has(dg.AssetKey(table)):
            seeds.setdefault(dg.AssetKey(table), set()).update(changed)
    dirty: dict[dg.AssetKey, set[str]] = {}  # months whose rows changed: what children read
    derived: dict[dg.AssetKey, set[str]] = {}  # months computed from a changed input
    for key in graph.toposorted_asset_keys:
        got: set[str] = set()
        for parent in graph.get(key).parent_keys:
            if parent != key and parent in dirty:
                got |= _downstream(graph, key, parent, dirty[parent])
        if key in graph.get(key).parent_keys:  # a self-dependency (battles): to a fixpoint
            reached, frontier = got | seeds.get(key, set()), got | seeds.get(key, set())
            while frontier:
                frontier = _downstream(graph, key, key, frontier) - reached
                reached |= frontier
            got |= reached - seeds.get(key, set())
        if got:
            derived[key] = got
        if got or key in seeds:
            dirty[key] = got | seeds.get(key, set())
    plan = {}
    for key, wanted in derived.items():
        name = key.to_user_string()
        if name not in NOT_REBUILT:
            keep = sorted(wanted & materialized(name))
            if keep:
                plan[name] = keep
    return plan


def materialized_months(
    lake: Lake,
    instance: dg.DagsterInstance | None,
    release_months: Callable[[], set[str]] | None = None,
    site_months: Callable[[], set[str]] | None = None,
) -> Callable[[str], set[str]]:
    """Months an asset exists for: its lake files, the instance's records, and for
    ``month_release`` the release folders, for ``leaderboard_site`` the site's months."""

    def months(asset: str) -> set[str]:
        found = set(lake.months(asset))
        if instance is not None:
            found |= set(instance.get_materialized_partitions(dg.AssetKey(asset)))
        if asset == "month_release" and release_months is not None:
            found |= release_months()
        if asset == "leaderboard_site" and site_months is not None:
            found |= site_months()
        return found

    return months


def pending_by_month(entries: list[ForgetEntry]) -> dict[str, list[str]]:
    """month -> assets still to rebuild there, over every unfinished forget."""
    out: dict[str, set[str]] = {}
    for entry in entries:
        for asset, months in entry.pending().items():
            for month in months:
                out.setdefault(month, set()).add(asset)
    return {m: sorted(a) for m, a in sorted(out.items())}


def pending_steps(entries: list[ForgetEntry]) -> list[tuple[str, list[str]]]:
    """(month, assets) runs in order: each month's assets, then its release on its own (the
    release reads the month's bench without a declared dependency, so in one run it could
    go before the bench it publishes)."""
    steps = []
    for month, assets in pending_by_month(entries).items():
        first = [a for a in assets if a not in PUBLISH_LAST]
        last = [a for a in assets if a in PUBLISH_LAST]
        steps += [(month, part) for part in (first, last) if part]
    return steps


def record_rebuilt(lake: Lake, month: str, assets: Iterable[str]) -> None:
    """Mark (asset, month) rebuilt in every unfinished forget that planned it."""
    assets = set(assets)
    for entry in journal.unfinished(lake):
        touched = False
        for asset in assets:
            if month in entry.pending().get(asset, []):
                entry.mark_rebuilt(asset, month)
                touched = True
        if touched:
            journal.save(lake, entry)


def failure_line(result: dg.ExecuteInProcessResult) -> str:
    """The first line of the first failed step's own error (Dagster's wrapper unwrapped)."""
    for event in result.get_step_failure_events():
        error = event.step_failure_data.error
        while error.cause is not None and (error.cls_name or "").startswith("Dagster"):
            error = error.cause
        text = (error.message or "").strip()
        return f"{event.step_key}: {text.splitlines()[0] if text else error.cls_name}"
    failed = [
        e.asset_check_key.to_user_string()
        for e in result.get_asset_check_evaluations()
        if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR
    ]
    return "blocking checks failed: " + ", ".join(failed) if failed else "the run failed"


def rebuild_in_process(
    defs: dg.Definitions, lake: Lake, instance: dg.DagsterInstance, say: Callable[[str], None]
) -> bool:
    """Rebuild every unfinished forget's plan, month by month; False (and the reason said)
    at the first month that fails: the journal keeps what is left."""
    entries = journal.unfinished(lake)
    ids = ",".join(e.id for e in entries)
    for month, assets in pending_steps(entries):
        result = dg.materialize(
            assets=list(defs.assets or []),
            resources=defs.resources,
            instance=instance,
            selection=dg.AssetSelection.assets(*assets),
            partition_key=month,
            raise_on_error=False,
            tags={JOURNALS_TAG: ids, "arena/after_forget": "true"},
        )
        if not result.success:
            reason = failure_line(result)
            for entry in journal.unfinished(lake):
                entry.last_error = f"{month}: {reason}"
                journal.save(lake, entry)
            say(f"error: rebuilding {month} failed: {reason}")
            return False
        record_rebuilt(lake, month, assets)
        say(f"rebuilt {month}: {', '.join(assets)}")
    return True
