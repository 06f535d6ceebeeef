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
    def partition_args(self) -> list[str]:
        return PlannedRun(self.assets, self.months).partition_args


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
        gid = (stage[n.name], "range") if n.name in single else (
            stage[n.name], "serial" if n.name in serial else "months")
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
                    elif gid[1] == "range" or off <= -len(months):
                        after.update(run_key(ug, m) for m in months)
                    else:
                        j = i + off
                        if 0 <= j < len(months):
                            after.add(run_key(ug, months[j]))
            key = run_key(gid, month)
            after.discard(key)
            runs.append(ParallelRun(key, tuple(names), tuple(months) if month is None else (month,),
                                    frozenset(after)))
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
    running: dict[int, tuple[ParallelRun, float]] = {}
    failed = False
    while pending or running:
        ok = {k for k, v in done.items() if v[0] == 0}
        while not failed and len(running) < workers:
            ready = next((r for r in pending if r.after <= ok), None)
            if ready is None:
                break
            pending.remove(ready)
            proc = launch(ready)
            running[proc.pid] = (ready, time.perf_counter())
        if not running:
            break  # what is left waits on a failed run
        pid, status, usage = os.wait4(-1, 0)
        if pid not in running:
            continue
        run, started = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        done[run.key] = (code, time.perf_counter() - started, usage.ru_utime + usage.ru_stime,
                         usage.ru_maxrss * 1024)
        failed = failed or code != 0
    return done
