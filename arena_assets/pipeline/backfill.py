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

from arena_assets.errors import ArenaError

SINGLE_RUN = "single_run"


class MonthError(ArenaError, ValueError):
    """A month argument that is not a real YYYY-MM month, or a range the plan refuses."""


def parse_month(text: str, flag: str = "month") -> str:
    """``text`` if it is a calendar month written ``YYYY-MM`` (``2024-03``), else
    MonthError with one line saying what is wrong (``2024-13``, ``2024-1``, ``24-03``)."""
    if not re.fullmatch(r"\d{4}-\d{2}", text or ""):
        raise MonthError(f"{flag} {text!r} is not a month: write YYYY-MM, e.g. 2024-03")
    if not 1 <= int(text[5:]) <= 12:
        raise MonthError(f"{flag} {text}: there is no month {text[5:]} (01-12)")
    return text


def run_ops(assets, ops: dict[str, str]) -> list[str]:
    """The every-asset job's ops that materialize ``assets`` (an op of several assets once)."""
    return list(dict.fromkeys(ops[a] for a in assets))


@dataclass(frozen=True)
class PlannedRun:
    assets: tuple[str, ...]
    months: tuple[str, ...]  # one month, a chunk, or the whole range

    @property
    def partition_tags(self) -> dict[str, str]:
        """The run tags that target these months (one partition, or a range)."""
        if len(self.months) == 1:
            return {"dagster/partition": self.months[0]}
        return {
            "dagster/asset_partition_range_start": self.months[0],
            "dagster/asset_partition_range_end": self.months[-1],
        }

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
        raise MonthError(
            f"{', '.join(outside)} outside the partition range {where} "
            "(ARENA_PARTITIONS_START / ARENA_PARTITIONS_END)"
        )
    return months


def policy_of(policy) -> tuple[str | None, int | None]:
    """(kind, max months per run) of an asset's Dagster ``BackfillPolicy`` (None: no
    policy), as ``plan_backfill`` and ``AssetNode`` take them: kind "single_run" or
    "multi_run"."""
    if policy is None:
        return None, None
    return policy.policy_type.value.lower(), policy.max_partitions_per_run


def _policy(item: tuple) -> tuple:
    """(kind, months per run) of an (name, policy kind, max months per run) item: runs of
    one stage share both."""
    kind, per_run = item[1], item[2] if len(item) > 2 else None
    return (SINGLE_RUN, None) if kind == SINGLE_RUN else ("multi_run", per_run or 1)


def plan_backfill(
    assets: list[tuple[str, str | None, int | None]], months: list[str]
) -> list[PlannedRun]:
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
        runs += [
            PlannedRun(tuple(names), tuple(months[i : i + size]))
            for i in range(0, len(months), size)
        ]
    return runs


@dataclass(frozen=True)
class AssetNode:
    """What the parallel plan needs of an asset: its policy kind and what it reads.

    ``deps``: (upstream asset, start offset in months of the partition mapping), e.g.
    ("battles", -1) for a month reading the previous month's battles, (..., -1200) for the
    cumulative boards reading every earlier month, (..., 0) for the same month."""

    name: str
    kind: str | None
    deps: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class ParallelRun:
    key: tuple  # ("month", group, month) or ("range", group)
    assets: tuple[str, ...]
    months: tuple[str, ...]
    after: frozenset = frozenset()  # keys of the runs that must finish first

    @property
    def partition_tags(self) -> dict[str, str]:
        return PlannedRun(self.assets, self.months).partition_tags

    @property
    def label(self) -> str:
        return PlannedRun(self.assets, self.months).label

    @property
    def partition_args(self) -> list[str]:
        """The `dagster asset materialize` arguments that target these months."""
        if len(self.months) == 1:
            return ["--partition", self.months[0]]
        return ["--partition-range", f"{self.months[0]}...{self.months[-1]}"]


def plan_parallel(nodes: list[AssetNode], months: list[str]) -> list[ParallelRun]:
    """The runs of a backfill with what each waits for, so that months that do not
    depend on each other can run at once (``run_parallel``).

    Per month, the assets without a single-run policy split into a part no later month
    needs (ingest, clean, topic labels and clusters: every month at once) and a serial
    part: an asset reading its own previous month (``battles``: the anomaly test's crowd
    of earlier months) and what reads it the same month (``battle_cells``) wait for the
    previous month's run. Single-run assets (the cumulative boards, BenchBuilder whose
    decontamination reads every earlier bench) are one run over the range each stage,
    after every month they read; assets after them (answers, judgments) are again one
    run per month. Runs come out in a valid sequential order too.
    """
    by_name = {n.name: n for n in nodes}
    single = {n.name for n in nodes if n.kind == SINGLE_RUN}
    serial: set[str] = set()
    stage: dict[str, int] = {}
    for n in nodes:  # topological order
        ups = [(u, off) for u, off in n.deps if u in by_name and u != n.name]
        reads_itself = any(u == n.name and off < 0 for u, off in n.deps)
        if n.name in single:  # a range run after the stage it reads
            stage[n.name] = max([stage[u] for u, _ in ups], default=0)
        else:  # a month run after a range run starts the next stage
            stage[n.name] = max([stage[u] + (1 if u in single else 0) for u, _ in ups], default=0)
            if reads_itself or any(u in serial for u, _ in ups if u not in single):
                serial.add(n.name)
    groups: dict[tuple, list[str]] = {}
    for n in nodes:
        gid = (
            (stage[n.name], "range")
            if n.name in single
            else (stage[n.name], "serial" if n.name in serial else "months")
        )
        groups.setdefault(gid, []).append(n.name)
    group_of = {a: gid for gid, names in groups.items() for a in names}

    def run_key(gid: tuple, month: str | None) -> tuple:
        return ("range", gid) if gid[1] == "range" else ("month", gid, month)

    runs = []
    for gid in sorted(groups, key=lambda g: (g[0], g[1] == "range", g[1] == "serial")):
        names = groups[gid]
        for i, month in enumerate(months if gid[1] != "range" else [None]):
            after = set()
            for a in names:
                for u, off in by_name[a].deps:
                    if u not in by_name:
                        continue
                    ug = group_of[u]
                    if ug[1] == "range":
                        after.add(run_key(ug, None))
                    elif gid[1] == "range":
                        after.update(run_key(ug, m) for m in months)
                    else:  # a month run reads months i+off..i (a window, or every earlier
                        # month for a cumulative mapping), never a later one: waiting for
                        # later months too would make a month-by-month asset a cycle
                        after.update(run_key(ug, months[j]) for j in range(max(0, i + off), i + 1))
            key = run_key(gid, month)
            after.discard(key)
            runs.append(
                ParallelRun(
                    key,
                    tuple(names),
                    tuple(months) if month is None else (month,),
                    frozenset(after),
                )
            )
    return _topological(runs)  # listed so that each run comes after what it waits for


def _topological(runs: list[ParallelRun]) -> list[ParallelRun]:
    done: set = set()
    out: list[ParallelRun] = []
    pending = list(runs)
    while pending:
        ready = [r for r in pending if r.after <= done]
        if not ready:
            raise ValueError("the backfill's runs wait on each other in a cycle")
        out.append(ready[0])
        done.add(ready[0].key)
        pending.remove(ready[0])
    return out


def run_parallel(runs: list[ParallelRun], launch, workers: int) -> dict:
    """Launch ``runs`` (``launch(run)`` -> a started ``subprocess.Popen``) with at most
    ``workers`` at once, each as soon as what it waits for succeeded, in plan order.
    Returns {run key: (returncode, wall s, CPU s, peak RSS bytes)}; stops launching after
    a failure (runs already started finish)."""
    import os
    import time

    done: dict = {}
    pending = list(runs)
    # the Popen objects stay referenced until reaped here: one dropped while its process
    # runs goes to subprocess's list of orphans, and the next Popen() reaps it silently, so
    # wait4 below would never see that run end (a lost run, or ECHILD)
    running: dict[int, tuple[ParallelRun, float, object]] = {}
    failed = False
    while pending or running:
        ok = {k for k, v in done.items() if v[0] == 0}
        while not failed and len(running) < workers:
            ready = next((r for r in pending if r.after <= ok), None)
            if ready is None:
                break
            pending.remove(ready)
            proc = launch(ready)
            running[proc.pid] = (ready, time.perf_counter(), proc)
        if not running:
            break  # what is left waits on a failed run
        pid, status, usage = os.wait4(-1, 0)
        if pid not in running:
            continue
        run, started, proc = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code  # reaped here: Popen must not wait for it again
        done[run.key] = (
            code,
            time.perf_counter() - started,
            usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss * 1024,
        )
        failed = failed or code != 0
    return done


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
        after = max(
            (stage_of[d] for d in deps.get(name, ()) if d in stage_of and d != name), default=0
        )
        index = next((i for i in range(after, len(stages)) if stages[i][0] == policy), None)
        if index is None:
            stages.append((policy, []))
            index = len(stages) - 1
        stages[index][1].append(item)
        stage_of[name] = index
    return [item for _, items in stages for item in items]
