"""Backfilling history past one process: in-process, multiprocess, Celery (run by hand).

    .venv/bin/python benchmarks/backfill_scale.py [--months 6] [--conversations 50000]
        [--modes in_process,parallel,pool,multiprocess,celery] [--workers 2] [--out benchmarks/out/backfill]
        [--arena in_run|own_process] [--latency 0] [--concurrency N] [--llm-pool N]

Simulates ``--months`` months of ``--conversations`` conversations, then backfills every
asset but the release over them once per mode, each mode on a fresh lake, LLM cache and
Dagster instance (same raw logs), with the runs of ``pipeline.backfill.plan_parallel``:

- ``in_process``: one run at a time, the in-process executor (the baseline: one core);
- ``parallel``: ``--workers`` runs at once, each with the in-process executor (what
  ``arena-assets backfill --parallel N`` does: a process per run, not per step);
- ``pool``: ``--workers`` runs at once in as many long-lived worker processes, each with
  the in-process executor (``arena-assets backfill --parallel N --in-process-workers``,
  what ``make demo`` does: Dagster and the code location loaded once a worker);
- ``multiprocess``: ``--workers`` runs at once, each with the multiprocess executor (a
  process per step), as the daemon's queued coordinator launches a UI backfill;
- ``celery``: the same runs through ``arena_assets.celery_location``: every step a Celery
  task, ``--workers`` workers started from ``deploy/celery-worker.yaml`` (concurrency 1
  each; broker and results as SQLite files on this machine, RabbitMQ/Redis in a cluster).

``--arena own_process`` serves the LLM calls from one simulated arena in its own process per
mode (``arena-sim serve``, as a real endpoint is another machine): the runs then
pay only the client side of their calls, and the arena's CPU is printed apart. The default
``in_run`` starts the arena inside every run's process (``.env.example``'s set-up), where
client and server share one interpreter lock. ``--latency S`` makes the arena answer each
call after S seconds, as a real endpoint does (300 ms: ``--latency 0.3``), and ``--concurrency N``
sets every LLM task's concurrent calls (labeller, embedder, judge, reward model; the
candidates keep their own): then a month's LLM steps are bound by the endpoint, not by the
2 cores, and months at once overlap their waiting. The default 0 s and ``.env.example``'s
concurrency measure the CPU-bound case. ``--llm-pool N`` sets the instance's limit of the
``llm`` pool (how many LLM steps run at once across runs; ``dagster.yaml``'s default is 2)
before the runs, for ``--workers`` above 2.

Prints per mode the wall and CPU seconds (runs and workers), the speed-up over the
baseline, the runs and which of them waited on the previous month; then checks that every
(asset, month) was materialized exactly once per mode and that each mode's lake holds the
same rows as the baseline's (per table and month: row count and a hash of the sorted rows).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dagster_runs import BIN, PROJECT, base_env, materializations, materialize_cmd

from arena_assets.cli.arena_child import death_signal, stop_child

FIRST = "2024-07"  # months of a world whose launch models are all out
LLM_TASKS = ("LABELER", "EMBED", "JUDGE", "REWARD")  # the tasks with an ARENA_*_MAX_CONCURRENCY


def months_from(first: str, n: int) -> list[str]:
    from arena_assets.pipeline.backfill import months_between

    y, m = (int(p) for p in first.split("-"))
    last_index = y * 12 + m - 1 + n - 1
    return months_between(first, f"{last_index // 12:04d}-{last_index % 12 + 1:02d}")


def parallel_plan(months: list[str]):
    from arena_assets.cli.backfill import parallel_backfill_plan

    return parallel_backfill_plan(months[0], months[-1])


def lake_digest(lake: Path) -> dict[tuple[str, str], tuple[int, str]]:
    """(table, month) -> (rows, hash of the sorted rows) of every Parquet table in a lake."""
    import polars as pl

    out = {}
    for path in sorted(lake.glob("*/*.parquet")):
        frame = pl.read_parquet(path)
        cols = [c for c, t in frame.schema.items() if not t.is_nested()]
        digest = hashlib.sha256()
        if frame.height and cols:
            for row in frame.select(cols).sort(cols).iter_rows():
                digest.update(repr(row).encode())
        out[(path.parent.name, path.stem)] = (frame.height, digest.hexdigest()[:16])
    return out


def start_workers(env: dict, root: Path, n: int) -> list[subprocess.Popen]:
    workers = []
    for i in range(n):
        log = (root / f"worker-{i}.log").open("w")
        workers.append(
            subprocess.Popen(
                [
                    str(BIN / "dagster-celery"),
                    "worker",
                    "start",
                    "-A",
                    "dagster_celery.app",
                    "-y",
                    str(PROJECT / "deploy" / "celery-worker.yaml"),
                    "--name",
                    f"w{i}@%h",
                    "--",
                    "--concurrency=1",
                ],
                cwd=root,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    return workers


def process_tree_cpu(pid: int) -> float:
    """user + sys CPU seconds of a live process and its children (from /proc)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        total = sum(proc.cpu_times()[:2])
        for child in proc.children(recursive=True):
            try:
                total += sum(child.cpu_times()[:2])
            except psutil.NoSuchProcess:
                pass
        return total
    except psutil.NoSuchProcess:
        return 0.0


def start_arena(raw: Path, seed: int, log: Path, latency: float = 0.0) -> subprocess.Popen:
    """``arena-sim serve`` on a free port over ``raw``'s truth, its URL in ``proc.url``; returns
    once it has read the truth (its second line), so no run's first calls wait on that
    read. Killed with this script (a death signal), and stopped if it does not come up."""
    with log.open("w") as err:
        proc = subprocess.Popen(
            [
                str(BIN / "arena-sim"),
                "serve",
                "--port",
                "0",
                "--world-seed",
                str(seed),
                "--truth-root",
                str(raw),
                "--latency",
                str(latency),
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            preexec_fn=death_signal(os.getpid()),
            env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        )
    first, second = proc.stdout.readline(), proc.stdout.readline()
    if " at " not in first or not second.startswith("truth read"):
        stop_child(proc)
        sys.exit(
            f"arena-sim serve did not come up: {(first + second).strip() or 'no output'}; its log: {log}"
        )
    print(f"  {first.split(';')[0].strip()}, {second.strip()}", flush=True)
    proc.url = first.split(" at ", 1)[1].split()[0]
    # keep reading what it prints: a server whose full pipe nobody reads blocks
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return proc


def run_mode(
    mode: str,
    raw: Path,
    out: Path,
    months: list[str],
    workers: int,
    arena: str = "in_run",
    seed: int = 7,
    latency: float = 0.0,
    concurrency: int | None = None,
    llm_pool: int | None = None,
) -> dict:
    root = out / mode
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "raw").symlink_to(raw)
    # the runs' simulated world is the one the logs were simulated with, in either set-up
    over = {"ARENA_INGEST_WORKERS": "1", "ARENA_SIM_WORLD_SEED": str(seed)}
    if concurrency is not None:
        over |= {f"ARENA_{task}_MAX_CONCURRENCY": str(concurrency) for task in LLM_TASKS}
    if mode == "celery":
        over |= {
            "ARENA_CELERY_BROKER_URL": f"sqla+sqlite:///{root}/broker.sqlite",
            "ARENA_CELERY_BACKEND_URL": f"db+sqlite:///{root}/results.sqlite",
        }
    if arena == "in_run":
        if latency:  # at 0, .env.example's own (empty) setting, as before the option
            over["ARENA_SIM_LATENCY"] = str(latency)
        return _run_mode(mode, root, over, months, workers, llm_pool) | {"arena_cpu": None}
    server = start_arena(raw, seed, root / "arena.log", latency)
    # its CPU while the runs ran: start-up and reading the truth are before the clock starts
    cpu0 = process_tree_cpu(server.pid)
    over["ARENA_SIM_BASE_URL"] = server.url
    try:
        result = _run_mode(mode, root, over, months, workers, llm_pool)
        if server.poll() is not None:  # run_parallel reaps any child: ask it, not the pid
            sys.exit(
                f"{mode}: the simulated arena stopped during the runs; its log: {root / 'arena.log'}"
            )
        return result | {"arena_cpu": process_tree_cpu(server.pid) - cpu0}
    finally:
        stop_child(server, timeout=60)


def _run_mode(
    mode: str, root: Path, over: dict, months: list[str], workers: int, llm_pool: int | None = None
) -> dict:
    from arena_assets.pipeline.backfill import run_parallel

    env = base_env(root, months[0], months[-1], **over)
    subprocess.run(
        [str(BIN / "dagster"), "instance", "migrate"],
        env=env,
        cwd=root,
        check=True,
        capture_output=True,
    )
    if llm_pool is not None:
        subprocess.run(
            [str(BIN / "dagster"), "instance", "concurrency", "set", "llm", str(llm_pool)],
            env=env,
            cwd=root,
            check=True,
            capture_output=True,
        )
    plan = parallel_plan(months)
    executor = {
        "in_process": "in_process",
        "parallel": "in_process",
        "pool": "in_process",
        "multiprocess": "multiprocess",
        "celery": "",
    }[mode]
    module = "arena_assets.celery_location" if mode == "celery" else "arena_assets.definitions"
    logs = root / "runs"
    logs.mkdir()
    celery = start_workers(env, root, workers) if mode == "celery" else []

    def launch(run):
        name = f"{run.key[0]}-{'-'.join(map(str, run.key[1]))}-{run.months[0]}"
        return subprocess.Popen(
            materialize_cmd(",".join(run.assets), run.partition_args, executor, module),
            env=env,
            cwd=root,
            stdout=(logs / f"{name}.log").open("w"),
            stderr=subprocess.STDOUT,
        )

    started, load0 = time.perf_counter(), os.getloadavg()[0]
    if mode == "pool":  # the CLI itself: its workers are its children, their CPU in its usage
        cli = subprocess.Popen(
            [
                str(BIN / "arena-assets"),
                "backfill",
                "--from",
                months[0],
                "--to",
                months[-1],
                "--parallel",
                str(workers),
                "--in-process-workers",
            ],
            env=env,
            cwd=root,
            stdout=(logs / "pool.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(cli.pid, 0)
        cli.returncode = os.waitstatus_to_exitcode(status)
        if cli.returncode:
            sys.exit(f"pool: the backfill failed; log in {logs / 'pool.log'}")
        return {
            "mode": mode,
            "wall": time.perf_counter() - started,
            "cpu": usage.ru_utime + usage.ru_stime,
            "worker_cpu": 0.0,
            "runs": len(plan),
            "load": (load0, os.getloadavg()[0]),
            "home": env["DAGSTER_HOME"],
            "lake": root / "lake",
            "peak_rss_gb": usage.ru_maxrss / 1024**2,
        }
    try:
        done = run_parallel(plan, launch, 1 if mode == "in_process" else workers)
        worker_cpu = sum(process_tree_cpu(w.pid) for w in celery)
    finally:
        for w in celery:
            os.killpg(w.pid, signal.SIGTERM)
            w.wait(timeout=120)
    wall = time.perf_counter() - started
    failed = [k for k, v in done.items() if v[0] != 0]
    if failed or len(done) != len(plan):
        sys.exit(f"{mode}: runs failed or not started: {failed}; logs in {logs}")
    return {
        "mode": mode,
        "wall": wall,
        "cpu": sum(v[2] for v in done.values()) + worker_cpu,
        "worker_cpu": worker_cpu,
        "runs": len(plan),
        "load": (load0, os.getloadavg()[0]),
        "home": env["DAGSTER_HOME"],
        "lake": root / "lake",
        "peak_rss_gb": max(v[3] for v in done.values()) / 1024**3,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--months", type=int, default=6)
    ap.add_argument("--conversations", type=int, default=50_000)
    ap.add_argument("--modes", default="in_process,parallel,pool,multiprocess,celery")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/backfill"))
    ap.add_argument(
        "--arena",
        choices=("in_run", "own_process"),
        default="in_run",
        help="where the simulated arena serves the LLM calls (module docstring)",
    )
    ap.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help="seconds the simulated arena waits before each answer (module docstring)",
    )
    ap.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="concurrent calls of every LLM task (default: .env.example's)",
    )
    ap.add_argument(
        "--llm-pool",
        type=int,
        default=None,
        help="the llm pool's limit on the instance (default: dagster.yaml's)",
    )
    ap.add_argument(
        "--check-only",
        action="store_true",
        help="only the consistency checks, over the modes' folders already there",
    )
    args = ap.parse_args()
    if args.latency < 0 or any(v is not None and v < 1 for v in (args.concurrency, args.llm_pool)):
        ap.error("--latency must be 0 or more, --concurrency and --llm-pool 1 or more")
    out = args.out.resolve()
    months = months_from(FIRST, args.months)
    raw = out / f"raw-{args.conversations}"
    if not all((raw / m).exists() for m in months):
        from arena_assets.simulator import simulate_months

        simulate_months(raw, months, round(args.conversations / 1.55), seed=args.seed)
    plan = parallel_plan(months)
    print(
        f"{len(months)} months x {args.conversations:,} conversations; arena {args.arena}, latency "
        f"{args.latency} s, concurrency {args.concurrency or '.env.example'}; {args.workers} workers, llm pool "
        f"{args.llm_pool or 'dagster.yaml'}; {len(plan)} runs:"
    )
    for run in plan:
        waits = (
            "previous month"
            if any(k[0] == "month" and k[1] == run.key[1] for k in run.after)
            else ""
        )
        print(
            f"  {'+'.join(run.assets)} [{run.months[0]}{'..' + run.months[-1] if len(run.months) > 1 else ''}]"
            f"{' (waits for the ' + waits + ')' if waits else ''}"
        )
    results = []
    for mode in args.modes.split(","):
        if args.check_only:
            results.append(
                {
                    "mode": mode,
                    "home": str(out / mode / "dagster_home"),
                    "lake": out / mode / "lake",
                }
            )
            continue
        r = run_mode(
            mode,
            raw,
            out,
            months,
            args.workers,
            args.arena,
            args.seed,
            args.latency,
            args.concurrency,
            args.llm_pool,
        )
        results.append(r)
        base = results[0]
        print(
            f"{mode:13} {r['wall']:7.0f} s wall, {r['cpu']:7.0f} CPU-s ({r['worker_cpu']:.0f} in "
            f"workers), speed-up {base['wall'] / r['wall']:4.2f}x over {base['mode']}, peak RSS "
            f"{r['peak_rss_gb']:.2f} GB, load {r['load'][0]:.1f}-{r['load'][1]:.1f}"
            + (
                f", the arena apart {r['arena_cpu']:.0f} CPU-s"
                if r["arena_cpu"] is not None
                else ""
            ),
            flush=True,
        )
    reference = lake_digest(results[0]["lake"])
    for r in results:
        counts = materializations(r["home"])
        twice = {k: n for k, n in counts.items() if n != 1}
        same = lake_digest(r["lake"]) == reference
        print(
            f"{r['mode']:13} {len(counts)} (asset, month) materializations, written more than "
            f"once: {twice or 'none'}; lake identical to {results[0]['mode']}'s: {same}"
        )


if __name__ == "__main__":
    main()
