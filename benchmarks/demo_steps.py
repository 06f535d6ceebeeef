"""Where a demo's time went: per run and step, read back from the Dagster instance.

    make demo && DAGSTER_HOME=.dagster_home .venv/bin/python benchmarks/demo_steps.py [--last 3]

For each of the last N runs (oldest first): the run's wall time, and per step the time
from the step's worker starting to the step starting (a new process importing dagster and
the code location: the multiprocess executor only) and the step's own body (start to
success). Then the LLM calls each month's LLM assets recorded in their metadata. Wall
times on a shared machine: compare steps within one run, and quote the demo's own CPU
figures (printed by `arena-assets demo`) beside them.
"""

from __future__ import annotations

import argparse
import warnings
from collections import defaultdict

# (asset, metadata entry) pairs whose values say how much LLM work a month took
LLM_FIGURES = [
    ("topic_labels", "distinct_prompts"),
    ("topic_labels", "calls_made"),
    ("topic_clusters", "calls_made"),
    ("topic_clusters", "embedding_calls"),
]


def step_times(instance, run_id: str) -> tuple[float, dict[str, tuple[float | None, float | None]]]:
    """(run wall seconds, {step: (worker start seconds or None, body seconds or None)})."""
    logs = instance.all_logs(run_id)
    first: dict[str, dict[str, float]] = defaultdict(dict)
    for entry in logs:
        if entry.dagster_event is not None and entry.step_key:
            first[entry.step_key].setdefault(entry.dagster_event.event_type_value, entry.timestamp)
    out = {}
    for step, ev in first.items():
        start = ev.get("STEP_START")
        end = ev.get("STEP_SUCCESS") or ev.get("STEP_FAILURE")
        worker = ev.get("STEP_WORKER_STARTING")
        out[step] = (
            start - worker if worker and start else None,
            end - start if start and end else None,
        )
    return (logs[-1].timestamp - logs[0].timestamp if logs else 0.0), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--last", type=int, default=3, help="how many of the latest runs")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        runs = list(reversed(instance.get_runs(limit=args.last)))
        for run in runs:
            wall, steps = step_times(instance, run.run_id)
            executor = run.tags.get("arena/executor") or next(
                iter((run.run_config.get("execution") or {}).get("config") or {}), "default"
            )
            print(
                f"run {run.run_id[:8]} {run.job_name} {run.tags.get('dagster/partition')} "
                f"({executor} executor): {wall:.1f}s"
            )
            fmt = lambda v: "    -" if v is None else f"{v:5.1f}"
            for step, (worker, body) in sorted(steps.items(), key=lambda kv: -(kv[1][1] or 0)):
                print(f"   {step:<30} worker start {fmt(worker)}s   body {fmt(body)}s")
            print(
                f"   sum: worker start {sum(w or 0 for w, _ in steps.values()):.1f}s, "
                f"bodies {sum(b or 0 for _, b in steps.values()):.1f}s"
            )
        print("LLM work per month (materialization metadata):")
        for asset, entry in LLM_FIGURES:
            for rec in instance.fetch_materializations(dg.AssetKey(asset), limit=args.last).records:
                mat = rec.asset_materialization
                value = mat.metadata.get(entry)
                if value is not None:
                    print(f"   {asset:<15} {mat.partition} {entry}: {value.value}")


if __name__ == "__main__":
    main()
