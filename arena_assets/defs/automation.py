"""How new data flows downstream: declarative automation, on by default.

Every stage after ingest carries ``follow_upstream``: a partition is requested when any
partition it depends on was materialized since it was last handled, once nothing it needs
is missing or running. Unlike ``AutomationCondition.eager()`` it is not limited to the
latest month: a rewritten old month of battles refreshes every later leaderboard snapshot
(their partition mapping reaches back to the first month). The ``arena_automation``
sensor evaluates the conditions; it is RUNNING by default because it only ever reacts to
a materialization (nothing happens until someone, or the raw-root sensor, ingests a month).
"""

from __future__ import annotations

import dagster as dg

follow_upstream = (
    dg.AutomationCondition.any_deps_updated().since_last_handled()
    & ~dg.AutomationCondition.any_deps_missing()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("follow upstream (any month)")

arena_automation = dg.AutomationConditionSensorDefinition(
    "arena_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Refreshes every stage after ingest when what it reads changed "
    "(conditions on the assets: 'follow upstream (any month)').",
)
