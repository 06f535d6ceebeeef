"""Incremental cost: refreshing month 12 after 11 materialized months vs month 1 alone.

    .venv/bin/python benchmarks/bench_incremental.py [--per-month 3000] [--months 12]

Simulates the months, then materializes months 1..N-1 (not timed; also warms the process)
and month N, then month 1 alone in a fresh lake and instance: every asset but the release
(ingest, clean, battles, battle_cells, leaderboards); each timed run is one in-process
Dagster run.
Prints CPU seconds (this process: the run is in-process; polars/numpy threads included)
and wall seconds of both, and their ratios (target: month N <= 1.2x month 1). The machine
may be shared: CPU seconds are the steadier figure. Also prints the time the cumulative
boards spent and how many battle rows vs cells they read.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

DEFAULTS = {
    "ARENA_DUCKDB_MEMORY_LIMIT": "1GB",
    "ARENA_S3_ENDPOINT_URL": "",
    "ARENA_S3_ACCESS_KEY_ID": "",
    "ARENA_S3_SECRET_ACCESS_KEY": "",
    "ARENA_S3_REGION": "",
    "ARENA_USER_SALT": "bench",
    "ARENA_INGEST_WORKERS": "1",
    "ARENA_ALLOW_PARTIAL_FILES": "false",
    "ARENA_RAW_LOGS_RETENTION_MONTHS": "0",
    "ARENA_MODERATION_BASE_URL": "",
    "ARENA_MODERATION_API_KEY": "",
    "ARENA_MODERATION_MODEL": "x",
    "ARENA_ALIAS_TABLE": "",
    "ARENA_IDENTITY_NAMES": "",
    "ARENA_DAILY_VOTE_CAP": "50",
    "ARENA_ANOMALY_ALPHA": "0.001",
    "ARENA_BOOTSTRAP_ROUNDS": "200",
    "ARENA_MIN_BATTLES": "50",
    "ARENA_MIN_CATEGORY_BATTLES": "500",
    "ARENA_ANCHOR_MODEL": "",
    "ARENA_RELEASE_SECRET": "bench",
    "ARENA_RELEASE_LICENSE": "other",
}


def month_keys(n: int) -> list[str]:
    return [f"{2024 + i // 12:04d}-{i % 12 + 1:02d}" for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-month", type=int, default=3000)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-incremental-"))
    os.environ.update(DEFAULTS)
    os.environ.update(
        {
            "ARENA_RAW_ROOT": str(work / "raw"),
            "ARENA_LAKE_ROOT": str(work / "lake"),
            "ARENA_CATALOG": str(work / "arena.duckdb"),
            "ARENA_RELEASE_ROOT": str(work / "release"),
            "ARENA_PARTITIONS_START": "2024-01",
            "ARENA_PARTITIONS_END": "",
        }
    )
    import dagster as dg
    import polars as pl

    from arena_assets.definitions import defs as load_defs
    from arena_assets.simulator import simulate_months
    from arena_assets.storage import Lake

    months = month_keys(args.months)
    started = time.perf_counter()
    simulate_months(str(work / "raw"), months, args.per_month, seed=args.seed)
    print(
        f"simulated {len(months)} months x {args.per_month} conversations "
        f"in {time.perf_counter() - started:.0f}s ({work})"
    )
    defs = load_defs()
    selection = dg.AssetSelection.all() - dg.AssetSelection.groups("release")
    board_seconds: dict[str, float] = {}

    def run(month: str, instance) -> tuple[float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        result = dg.materialize(
            assets=list(defs.assets),
            resources=defs.resources,
            instance=instance,
            partition_key=month,
            selection=selection,
        )
        assert result.success, month
        for event in result.get_step_success_events():
            if event.step_key == "arena_leaderboard":
                board_seconds[month] = event.event_specific_data.duration_ms / 1000
        return time.process_time() - cpu, time.perf_counter() - wall

    def use_lake(name: str) -> None:  # resources read these when each run starts
        os.environ.update(
            {"ARENA_LAKE_ROOT": str(work / name), "ARENA_CATALOG": str(work / f"{name}.duckdb")}
        )

    # months 1..N-1 first (this also warms the process: imports, the language model), then
    # month N timed; then month 1 alone in a fresh lake and instance, timed
    use_lake("lake")
    with dg.DagsterInstance.ephemeral() as instance:
        for month in months[:-1]:
            run(month, instance)
        cpun, walln = run(months[-1], instance)
    use_lake("lake_month1")
    with dg.DagsterInstance.ephemeral() as instance:
        cpu1, wall1 = run(months[0], instance)
    lake = Lake(str(work / "lake"))
    rows = sum(lake.read("battles", m, columns=["keep"]).height for m in months)
    cells = sum(lake.read("battle_cells", m, columns=["n"]).height for m in months)
    last = months[-1]
    overall = lake.read("arena_leaderboard", last).filter(pl.col("board") == "overall")
    print(
        f"month 1 alone ({months[0]}):        cpu {cpu1:6.1f}s  wall {wall1:6.1f}s  "
        f"(boards step {board_seconds.get(months[0], 0):.1f}s)"
    )
    print(
        f"month {len(months)} after {len(months) - 1} ({last}): cpu {cpun:6.1f}s  "
        f"wall {walln:6.1f}s  (boards step {board_seconds.get(last, 0):.1f}s)"
    )
    print(
        f"ratio month {len(months)} / month 1: cpu {cpun / cpu1:.2f}x  wall {walln / wall1:.2f}x "
        "(target <= 1.2x)"
    )
    print(
        f"the last snapshot read {cells:,} cells for {rows:,} battle rows "
        f"({rows / max(cells, 1):.1f} battles per cell); overall board: {overall.height} models"
    )


if __name__ == "__main__":
    main()
