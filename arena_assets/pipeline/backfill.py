"""Plan of a backfill over a range of months: which runs, in which order (pure).

The assets arrive in topological order with their backfill policy, and the plan follows
the policies exactly as Dagster's own backfills do (the UI's daemon), so a range costs
the same runs from the shell and from the UI. Consecutive assets with the same policy form
a stage, and the stages run in order:

- single-run (SQL / polars work over the whole range, the cumulative boards): one run
  for the whole range;
- multi-run with at most N months a run (the LLM stages, N = 3): the range in chunks of
  N consecutive months, in month order (a failure or a quota costs one chunk);
- no policy: one run per month, in month order (battles read the previous month).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SINGLE_RUN = "single_run"


class MonthError(ValueError):
    """A month argument that is not a real YYYY-MM month, or a range the plan refuses."""


def parse_month(text: str, flag: str = "month") -> str:
    """``text`` if it is a calendar month written ``YYYY-MM`` (``2024-03``), else
    MonthError with one line saying what is wrong (``2024-13``, ``2024-1``, ``24-03``)."""
    if not re.fullmatch(r"\d{4}-\d{2}", text or ""):
        raise MonthError(f"{flag} {text!r} is not a month: write YYYY-MM, e.g. 2024-03")
    if not 1 <= int(text[5:]) <= 12:
        raise MonthError(f"{flag} {text}: there is no month {text[5:]} (01-12)")
    return text


@dataclass(frozen=True)
class PlannedRun:
    assets: tuple[str, ...]
    months: tuple[str, ...]  # one month, a chunk, or the whole range

    @property
    def partition_tags(self) -> dict[str, str]:
        """The run tags that target these months (one partition, or a range)."""
        if len(self.months) == 1:
            return {"dagster/partition": self.months[0]}
        return {"dagster/asset_partition_range_start": self.months[0],
                "dagster/asset_partition_range_end": self.months[-1]}

    @property
    def label(self) -> str:
        return self.months[0] if len(self.months) == 1 else f"{self.months[0]}..{self.months[-1]}"


def months_between(first: str, last: str) -> list[str]:
    """Every month key from ``first`` to ``last`` inclusive ("YYYY-MM")."""
    parse_month(first, "--from")
    parse_month(last, "--to")
    if last < first:
        raise MonthError(f"--to {last} is before --from {first}")
    y, m = (int(p) for p in first.split("-"))
    end = tuple(int(p) for p in last.split("-"))
    out = []
    while (y, m) <= end:
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def within_partitions(months: list[str], partitions: list[str]) -> list[str]:
    """``months`` if every one is a partition of the code location, else MonthError naming
    the months outside and the range there is (ARENA_PARTITIONS_START / _END)."""
    known = set(partitions)
    outside = [m for m in months if m not in known]
    if outside:
        where = f"{partitions[0]}..{partitions[-1]}" if partitions else "empty"
        raise MonthError(f"{', '.join(outside)} outside the partition range {where} "
                         "(ARENA_PARTITIONS_START / ARENA_PARTITIONS_END)")
    return months


def _policy(item: tuple) -> tuple:
    """(kind, months per run) of an (name, policy kind, max months per run) item: runs of
    one stage share both."""
    kind, per_run = item[1], item[2] if len(item) > 2 else None
    return (SINGLE_RUN, None) if kind == SINGLE_RUN else ("multi_run", per_run or 1)


def plan_backfill(assets: list[tuple[str, str | None, int | None]],
                  months: list[str]) -> list[PlannedRun]:
    """``assets``: (name, policy kind, max months per run) in topological order; the kind
    is "single_run", "multi_run" or None (no policy: one month a run). Returns the runs in
    the order to launch them."""
    stages: list[tuple[tuple, list[str]]] = []
    for item in assets:
        name, policy = item[0], _policy(item)
        if stages and stages[-1][0] == policy:
            stages[-1][1].append(name)
        else:
            stages.append((policy, [name]))
    runs = []
    for (kind, per_run), names in stages:
        size = len(months) if kind == SINGLE_RUN else per_run
        runs += [PlannedRun(tuple(names), tuple(months[i:i + size]))
                 for i in range(0, len(months), size)]
    return runs


def stage_order(assets: list[tuple], deps: dict[str, set[str]]) -> list[tuple]:
    """``assets`` (name, policy kind, ...) reordered so that each joins the earliest stage
    of its policy (kind and months per run) that comes after every stage holding one of its
    dependencies (``deps``: asset -> the assets it reads). Fed to :func:`plan_backfill`,
    an asset independent of a chain (the Copilot Arena tables beside the chat ones) forms
    its own stage instead of splitting the chain's stages wherever the topological order
    happens to list it. A topological order stays topological."""
    stages: list[tuple[tuple, list[tuple]]] = []
    stage_of: dict[str, int] = {}
    for item in assets:
        name, policy = item[0], _policy(item)
        after = max((stage_of[d] for d in deps.get(name, ()) if d in stage_of and d != name), default=0)
        index = next((i for i in range(after, len(stages)) if stages[i][0] == policy), None)
        if index is None:
            stages.append((policy, []))
            index = len(stages) - 1
        stages[index][1].append(item)
        stage_of[name] = index
    return [item for _, items in stages for item in items]
