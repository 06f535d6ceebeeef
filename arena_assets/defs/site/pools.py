"""Pool limits that ``dagster.yaml`` cannot hold: an open-source instance's file takes one
``pools.default_limit`` for every pool, and a pool's own limit is instance state (the UI's
concurrency page, or ``dagster instance concurrency set``). ``make install`` runs this
module on the project's instance; a shared instance needs it once (deploy/README.md).

``site_root``: one site build at a time, since every build rewrites the root's index and
history from the months it finds (``site/publish.py``).
"""

from __future__ import annotations

import dagster as dg

POOL_LIMITS = {"site_root": 1}


def apply_pool_limits(instance: dg.DagsterInstance) -> dict[str, int]:
    """Set every limit of ``POOL_LIMITS`` on ``instance``; returns what the instance holds."""
    storage = instance.event_log_storage
    for pool, limit in POOL_LIMITS.items():
        storage.set_concurrency_slots(pool, limit)
    return {pool: storage.get_concurrency_info(pool).slot_count for pool in POOL_LIMITS}


if __name__ == "__main__":
    with dg.DagsterInstance.get() as instance:
        held = apply_pool_limits(instance)
    print("pool limits on the instance: " + ", ".join(f"{k}={v}" for k, v in held.items()))
