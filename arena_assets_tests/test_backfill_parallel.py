"""A backfill whose independent months run at once: the plan from the code
location's own graph, and the runner's order, concurrency and failure handling."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from arena_assets.cli.backfill import parallel_backfill_plan
from arena_assets.pipeline.backfill import AssetNode, ParallelRun, plan_parallel, run_parallel

MONTHS = ["2024-01", "2024-02", "2024-03"]


def test_plan_from_the_code_location_serialises_only_what_reads_earlier_months():
    plan = parallel_backfill_plan(MONTHS[0], MONTHS[-1])
    by_assets: dict[tuple, list[ParallelRun]] = {}
    for run in plan:
        by_assets.setdefault(run.assets, []).append(run)
    assert all(a != "month_release" for run in plan for a in run.assets)
    ingest = next(runs for assets, runs in by_assets.items() if "conversations" in assets)
    battles = next(runs for assets, runs in by_assets.items() if "battles" in assets)
    # every month's ingest, clean, labels and clusters at once: they wait for nothing
    assert [r.months for r in ingest] == [(m,) for m in MONTHS] and all(not r.after for r in ingest)
    assert {"topic_labels", "topic_clusters"} <= set(ingest[0].assets)
    # battles (the anomaly crowd reads earlier months) and what reads them the same month
    # wait for their own month's conversations and the previous month's battles
    assert "battle_cells" in battles[0].assets and "topic_labels" not in battles[0].assets
    assert battles[0].after == {ingest[0].key}
    # (p2l_model joins that run and reads every earlier month's prompts: earlier ingest
    # runs may be waited for too, never a later month's)
    for i in (1, 2):
        assert {ingest[i].key, battles[i - 1].key} <= battles[i].after
        assert battles[i].after <= {r.key for r in ingest[: i + 1] + battles[:i]}
    # the cumulative boards: one run over the range after every month they read
    boards = next(r for r in plan if "arena_leaderboard" in r.assets)
    assert boards.months == tuple(MONTHS) and {r.key for r in ingest + battles} <= boards.after
    # every run comes after what it waits for: the listing is a valid sequential order
    seen: set = set()
    for run in plan:
        assert run.after <= seen
        seen.add(run.key)
    assert {a for r in plan for a in r.assets} >= {
        "judgments",
        "bench_leaderboard",
        "leaderboard_history",
    }


def test_a_month_asset_reading_every_earlier_month_waits_only_for_earlier_months():
    # a per-month asset on a cumulative mapping (p2l_model reads the replayed months) beside
    # one that reads its own previous month: month i waits for months <= i, so no cycle
    nodes = [
        AssetNode("ingest", None),
        AssetNode("battles", None, (("ingest", 0), ("battles", -1))),
        AssetNode("model", None, (("ingest", -1200), ("battles", -1200))),
    ]
    plan = plan_parallel(nodes, MONTHS)
    serial = [r for r in plan if "model" in r.assets]
    assert [r.months for r in serial] == [(m,) for m in MONTHS]
    for i, run in enumerate(serial):
        waited = {m for k in run.after for m in (k[2:] if k[0] == "month" else ())}
        assert waited <= set(MONTHS[: i + 1]) and set(MONTHS[:i]) <= waited


CHILD = r"""
import os, sys
key, log, fifo, mode = sys.argv[1:5]
with open(log, "a") as f:
    f.write(f"start {key}\n")
if mode == "write":    # a FIFO's open blocks until the other end is open: both runs must
    open(fifo, "w").close()   # be alive at the same time to get past this line
elif mode == "read":
    open(fifo).close()
with open(log, "a") as f:
    f.write(f"end {key}\n")
sys.exit(1 if mode == "fail" else 0)
"""


def _launcher(tmp_path: Path, modes: dict):
    fifo = tmp_path / "rendezvous"
    os.mkfifo(fifo)
    log = tmp_path / "order.log"

    def launch(run: ParallelRun) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-c", CHILD, run.key, str(log), str(fifo), modes.get(run.key, "plain")]
        )

    return launch, log


def _runs(fail: str | None = None) -> list[ParallelRun]:
    a1, a2 = ParallelRun("a1", ("x",), ("m1",)), ParallelRun("a2", ("x",), ("m2",))
    b1 = ParallelRun("b1", ("y",), ("m1",), frozenset({"a1"}))
    b2 = ParallelRun("b2", ("y",), ("m2",), frozenset({"a2", "b1"}))
    return [a1, a2, b1, b2]


def test_independent_runs_overlap_and_dependents_wait(tmp_path):
    launch, log = _launcher(tmp_path, {"a1": "write", "a2": "read"})
    done = run_parallel(_runs(), launch, workers=2)
    assert {k: v[0] for k, v in done.items()} == dict.fromkeys(["a1", "a2", "b1", "b2"], 0)
    lines = log.read_text().split("\n")
    at = {line: i for i, line in enumerate(lines)}
    # a1 and a2 met at the FIFO, so both had started before either ended
    assert max(at["start a1"], at["start a2"]) < min(at["end a1"], at["end a2"])
    assert at["end a1"] < at["start b1"]
    assert max(at["end a2"], at["end b1"]) < at["start b2"]


def test_a_failed_run_stops_what_waits_on_it(tmp_path):
    launch, log = _launcher(tmp_path, {"a1": "fail"})
    done = run_parallel(_runs(), launch, workers=1)
    assert done["a1"][0] == 1
    assert "b1" not in done and "b2" not in done  # b1 waits on a1; nothing new after a failure
    assert "start b1" not in log.read_text()


def _pool_run(ops: tuple, months: tuple):
    """A stand-in run for the worker pool (module level: spawned workers import it): the
    CHILD script's steps, in the worker process."""
    import time
    from pathlib import Path

    from arena_assets.cli.worker_pool import RunOutcome

    key, log, meet, mode = ops
    with open(log, "a") as f:
        f.write(f"start {key}\n")
    if mode.startswith("meet:"):  # wait (10 s at most) for the other run to be alive too
        Path(meet, key).touch()
        deadline = time.monotonic() + 10
        while not Path(meet, mode[5:]).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        mode = "plain" if Path(meet, mode[5:]).exists() else "fail"
    with open(log, "a") as f:
        f.write(f"end {key}\n")
    return RunOutcome(mode != "fail", key, "it failed" if mode == "fail" else "", 0.0, 0.0)


def test_the_worker_pool_overlaps_independent_runs_and_stops_after_a_failure(tmp_path):
    """`backfill --parallel N --in-process-workers` and `make demo`: the same order,
    concurrency and failure handling as the process-per-run runner, in spawned workers."""
    from arena_assets.cli.worker_pool import execute_runs

    meet, log = tmp_path / "meet", tmp_path / "order.log"
    meet.mkdir()

    def ops_of(modes):
        return lambda run: (run.key, str(log), str(meet), modes.get(run.key, "plain"))

    lines: list[str] = []
    # a1 and a2 each wait for the other to have started: both alive at once, or they fail
    left = execute_runs(
        _runs(),
        ops_of({"a1": "meet:a2", "a2": "meet:a1"}),
        2,
        lines.append,
        execute=_pool_run,
        initializer=None,
    )
    assert left == [] and len(lines) == 4
    at = {line: i for i, line in enumerate(log.read_text().split("\n"))}
    assert max(at["start a1"], at["start a2"]) < min(at["end a1"], at["end a2"])
    assert at["end a1"] < at["start b1"] and max(at["end a2"], at["end b1"]) < at["start b2"]
    log.unlink()
    left = execute_runs(
        _runs(), ops_of({"a1": "fail"}), 1, lines.append, execute=_pool_run, initializer=None
    )
    assert [r.key for r in left] == ["a1", "a2", "b1", "b2"]  # the failed one, then the rest
    assert "start b1" not in log.read_text() and "FAILED" in lines[-4]
    assert all("not started" in line for line in lines[-3:])
