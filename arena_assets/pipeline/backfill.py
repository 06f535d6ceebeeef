"""Plan of a backfill over a range of months: which runs, in which order (pure).

The assets arrive in topological order with their backfill policy. Consecutive assets
with the same kind of policy form a stage, and the stages run in order:

- a stage of single-run assets (SQL / polars work over the whole range, the cumulative
  boards) is one run for the whole range;
- any other stage (no policy, or bounded multi-run where an LLM is called) is one run per
  month, in month order: such assets may read the previous month (battles' crowd), and a
  month per run is the tightest bound for LLM spend and retries.
"""

from __future__ import annotations

from dataclasses import dataclass

SINGLE_RUN = "single_run"


@dataclass(frozen=True)
class PlannedRun:
    assets: tuple[str, ...]
    months: tuple[str, ...]  # one month, or the whole range for a single run

    @property
    def partition_args(self) -> list[str]:
        """The `dagster asset materialize` arguments that target these months."""
        if len(self.months) == 1:
            return ["--partition", self.months[0]]
        return ["--partition-range", f"{self.months[0]}...{self.months[-1]}"]


def months_between(first: str, last: str) -> list[str]:
    """Every month key from ``first`` to ``last`` inclusive ("YYYY-MM")."""
    y, m = (int(p) for p in first.split("-"))
    end = tuple(int(p) for p in last.split("-"))
    if end < (y, m):
        raise ValueError(f"--to {last} is before --from {first}")
    out = []
    while (y, m) <= end:
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def plan_backfill(assets: list[tuple[str, str | None]], months: list[str]) -> list[PlannedRun]:
    """``assets``: (name, policy kind) in topological order; kind is "single_run" or
    anything else (None, "multi_run"). Returns the runs in the order to launch them."""
    stages: list[tuple[bool, list[str]]] = []
    for name, kind in assets:
        single = kind == SINGLE_RUN
        if stages and stages[-1][0] == single:
            stages[-1][1].append(name)
        else:
            stages.append((single, [name]))
    runs = []
    for single, names in stages:
        if single:
            runs.append(PlannedRun(tuple(names), tuple(months)))
        else:
            runs.extend(PlannedRun(tuple(names), (month,)) for month in months)
    return runs


def stage_order(assets: list[tuple], deps: dict[str, set[str]]) -> list[tuple]:
    """``assets`` (name, policy kind, ...) reordered so that each joins the earliest stage
    of its kind (single-run or not) that comes after every stage holding one of its
    dependencies (``deps``: asset -> the assets it reads). Fed to :func:`plan_backfill`,
    an asset independent of a chain (the Copilot Arena tables beside the chat ones) forms
    its own stage instead of splitting the chain's stages wherever the topological order
    happens to list it. A topological order stays topological."""
    stages: list[tuple[bool, list[tuple]]] = []
    stage_of: dict[str, int] = {}
    for item in assets:
        name, single = item[0], item[1] == SINGLE_RUN
        after = max((stage_of[d] for d in deps.get(name, ()) if d in stage_of and d != name), default=0)
        index = next((i for i in range(after, len(stages)) if stages[i][0] == single), None)
        if index is None:
            stages.append((single, []))
            index = len(stages) - 1
        stages[index][1].append(item)
        stage_of[name] = index
    return [item for _, items in stages for item in items]
