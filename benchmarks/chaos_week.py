"""An operator's bad week, replayed on a finished lake: one line per case.

    .venv/bin/python benchmarks/chaos_week.py [--per-month 300] [--out benchmarks/out/chaos]
    # the same week against another checkout's code (e.g. main, exported to /tmp/main):
    PYTHONPATH=/tmp/main .venv/bin/python benchmarks/chaos_week.py --project /tmp/main

Every command is what an operator runs: the `dagster` CLI (`python -m dagster`) against an
instance made from the project's dagster.yaml (pools `clean` and `llm` at one slot, so one
dead run is enough to block a stage), and `arena-assets` (`python -m arena_assets.cli`).
Cases: kills (SIGKILL) at four points of `conversations` and of `topic_labels`, then
`arena-assets recover` and the same run again; four months ingested at once; the labeller
behind a simulated endpoint with ~30 % faults, then healed; a forget with --recompute
against a forget followed by a Dagster rematerialization of everything downstream; and
configuration mistakes (a raw root without the month, with an empty month folder, or with
a month folder that holds one of its files, refused, then allowed for one run by its tag on
a copy of the lake; the partitions ending before they start, a setting the registry
refuses, a truncated partition, a read-only lake folder, an unreachable labeller, an s3://
lake with no server, raw_logs without raw_rejects, a held or unwritable catalog, a full
disk, the shell's settings against .env). Per case it prints the rows lost (must be 0), what
the user is told (one line naming what to fix) and the seconds until things work again.
The machine is shared: `uptime` is printed with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

MONTHS = ("2024-01", "2024-02", "2024-03")
TARGET = "2024-02"
IN_PROCESS = json.dumps({"execution": {"config": {"in_process": {}}}})
POINTS = {
    "conversations": ("computing", "tmp-written", "renamed", "publish"),
    "topic_labels": ("mid-calls", "tmp-written", "renamed", "publish"),
}


# -- the killed child: a real `dagster` CLI that dies at one point ---------------------------
def child(point: str, asset: str, marker: str, args: list[str]) -> None:
    import threading

    def die() -> None:
        Path(marker).write_text(point)
        threading.Event().wait()  # the parent kills us here

    from fsspec.implementations.local import LocalFileSystem

    final = f"/{asset}/{TARGET}.parquet"
    mv = LocalFileSystem.mv

    def patched_mv(self, src, dst, *a, **kw):
        if str(dst).endswith(final) and point == "tmp-written":
            die()  # the temporary file is complete, the rename has not happened
        mv(self, src, dst, *a, **kw)
        if str(dst).endswith(final) and point == "renamed":
            die()  # replaced, but the run never records it

    LocalFileSystem.mv = patched_mv
    if point == "computing":
        import arena_assets.pipeline.clean as clean

        clean.clean_conversations = lambda *a, **kw: die()
    if point == "mid-calls":
        from arena_assets.llm import cache

        put, calls = cache.ResponseCache.put, [0]

        def patched_put(self, *a, **kw):
            put(self, *a, **kw)
            calls[0] += 1
            if calls[0] == 40:
                die()

        cache.ResponseCache.put = patched_put
    if point == "publish":
        from arena_assets.defs.resources import ArenaStorage

        publish = ArenaStorage.publish
        ArenaStorage.publish = lambda self, name, log=None: (
            die() if name == asset else publish(self, name, log)
        )
    from dagster._cli import main as dagster_main

    sys.argv = ["dagster", *args]
    dagster_main()


# -- helpers -----------------------------------------------------------------------------------
def run(cmd: list[str], env: dict, cwd: Path, timeout: float = 600) -> tuple[int, str, float]:
    started = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
        return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started
    except subprocess.TimeoutExpired as exc:
        return -9, str(exc.stdout or "") + str(exc.stderr or ""), time.monotonic() - started


def dagster(*args: str) -> list[str]:
    return [sys.executable, "-m", "dagster", *args]


def arena(*args: str) -> list[str]:
    return [sys.executable, "-m", "arena_assets.cli", *args]


def arena_sim(*args: str) -> list[str]:
    return [sys.executable, "-m", "arena_assets.simulator.cli", *args]


def materialize(select: str, month: str) -> list[str]:
    return dagster(
        "asset",
        "materialize",
        "-m",
        "arena_assets.definitions",
        "--select",
        select,
        "--partition",
        month,
        "--config-json",
        IN_PROCESS,
    )


def digest(lake: Path, tables=None) -> dict[str, tuple[int, str]]:
    """table/month -> (rows, hash of the sorted row hashes)."""
    import polars as pl

    out = {}
    for path in sorted(lake.glob("*/*.parquet")):
        table = path.parent.name
        if tables and table not in tables:
            continue
        frame = pl.read_parquet(path)
        rows = sorted(frame.hash_rows(seed=0).to_list())
        out[f"{table}/{path.stem}"] = (frame.height, hashlib.sha256(str(rows).encode()).hexdigest())
    return out


def lost(before: dict, after: dict) -> int:
    """Rows of `before` that `after` does not reproduce (a partition missing or changed)."""
    return sum(n for key, (n, h) in before.items() if after.get(key, (0, ""))[1] != h)


def headline(home: Path) -> str:
    """The latest failed run's first step error, first line (what the UI puts on top)."""
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home)
    with dg.DagsterInstance.get() as instance:
        for run in instance.get_runs(
            dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]), limit=1
        ):
            for record in instance.get_records_for_run(
                run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE
            ).records:
                data = record.event_log_entry.dagster_event.step_failure_data
                said = data.user_failure_data.description if data.user_failure_data else ""
                if said:  # a failure with its one line: the UI's headline is that line
                    return said.strip().splitlines()[0]
                error = data.error
                while error.cause is not None and (error.cls_name or "").startswith("Dagster"):
                    error = error.cause
                return (error.message or "").strip().splitlines()[0]
            failed = [
                r.event_log_entry.dagster_event.event_specific_data.asset_check_evaluation
                for r in instance.get_records_for_run(
                    run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
                ).records
            ]
            names = [e.check_name for e in failed if not e.passed]
            return "blocking check failed: " + ", ".join(names) if names else "run failed"
    return "no failed run"


def ours(text: str) -> list[str]:
    """Output lines, without Dagster's own supersession notice."""
    return [
        line
        for line in text.splitlines()
        if line.strip() and "Supersession" not in line and "return callback(" not in line
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Week:
    def __init__(self, base: Path, project: Path, per_month: int) -> None:
        from dotenv import dotenv_values

        self.base, self.project, self.per_month = base, project, per_month
        self.stall_after = 240.0  # seconds a rerun may take before it counts as stalled
        self.work = base / "work"  # the working directory: no .env, the environment decides
        self.home = base / "home"
        for d in (self.work, self.home):
            d.mkdir(parents=True, exist_ok=True)
        shutil.copy(project / "dagster.yaml", self.home / "dagster.yaml")
        env = {k: v or "" for k, v in dotenv_values(project / ".env.example").items()}
        env.update(
            ARENA_RAW_ROOT=str(base / "raw"),
            ARENA_LAKE_ROOT=str(base / "lake"),
            ARENA_CATALOG=str(base / "arena.duckdb"),
            ARENA_RELEASE_ROOT=str(base / "release"),
            ARENA_PARTITIONS_START="2024-01",
            ARENA_PARTITIONS_END="2024-04",
            ARENA_MIN_BATTLES="10",
            ARENA_BOOTSTRAP_ROUNDS="50",
            ARENA_BENCH_SIZE="20",
        )
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ARENA_")},
            **env,
            "DAGSTER_HOME": str(self.home),
        }
        self.results: list[dict] = []

    def say(self, case: str, lost_rows, told: str, seconds: float, **extra) -> None:
        line = f"{case:<48} | lost {lost_rows!s:>5} | {told[:240]:<240} | {seconds:6.1f} s"
        print(line, flush=True)
        self.results.append(
            {"case": case, "lost": lost_rows, "told": told, "seconds": round(seconds, 1), **extra}
        )

    # -- setup -----------------------------------------------------------------------------
    def build(self) -> None:
        import dagster as dg

        from arena_assets.simulator import simulate_months

        simulate_months(self.env["ARENA_RAW_ROOT"], [*MONTHS, "2024-04"], self.per_month, seed=7)
        # the LLM stages meet the simulated arena by URL, as `make demo` hands one to its
        # runs; it lives as long as the week (and dies with this process)
        from arena_assets.cli.arena_child import arena_process

        self.arena = contextlib.ExitStack()
        self.env["ARENA_SIM_BASE_URL"] = self.arena.enter_context(
            arena_process(7, self.env["ARENA_RAW_ROOT"])
        )
        for month in MONTHS:
            rc, out, s = run(materialize("*", month), self.env, self.work, 1800)
            assert rc == 0, out[-3000:]
            print(f"  built {month} in {s:.0f} s", flush=True)
        os.environ["DAGSTER_HOME"] = str(self.home)
        with dg.DagsterInstance.get() as instance:
            for pool in ("clean", "llm"):
                instance.event_log_storage.set_concurrency_slots(pool, 1)
        self.reference = digest(Path(self.env["ARENA_LAKE_ROOT"]))
        shutil.copytree(self.base / "lake", self.base / "lake-finished")
        shutil.copytree(self.base / "release", self.base / "release-finished")

    # -- kills -----------------------------------------------------------------------------
    def kill(self, asset: str, point: str) -> None:
        lake = Path(self.env["ARENA_LAKE_ROOT"])
        marker = self.base / f"marker-{asset}-{point}"
        # labels start from an empty answer cache, so the run makes calls to be killed among
        env = {**self.env, "ARENA_LLM_CACHE_ROOT": str(self.base / "cache-kills")}
        proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--child",
                point,
                asset,
                str(marker),
                *materialize(asset, TARGET)[3:],
            ],
            env=env,
            cwd=self.work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 900
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        reached = marker.exists()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        key = f"{asset}/{TARGET}"
        during = digest(lake, {asset}).get(key)
        intact = during is not None and during[1] == self.reference[key][1]
        started = time.monotonic()
        rc_recover, recovered, _ = run(arena("recover"), env, self.work, 300)
        rc, _out, _ = run(materialize(asset, TARGET), env, self.work, self.stall_after)
        took = time.monotonic() - started
        left = (
            len(list((lake / asset / "_tmp").glob("*"))) if (lake / asset / "_tmp").exists() else 0
        )
        after = lost({key: self.reference[key]}, digest(lake, {asset}))
        state = (
            "completed"
            if rc == 0
            else "STALLED (pool slot of the dead run)"
            if rc == -9
            else f"failed: {headline(self.home)}"
        )
        told = (
            f"{'killed' if reached else 'NOT REACHED'}; partition {'intact' if intact else 'CHANGED'}"
            f" during the outage; recover rc {rc_recover} ({len(ours(recovered))} lines); "
            f"next run {state}; {left} tmp files left"
        )
        self.say(f"kill {asset} at {point}", after, told, took)

    # -- four months at once ---------------------------------------------------------------
    def concurrent(self) -> None:
        env = {
            **self.env,
            "ARENA_LAKE_ROOT": str(self.base / "lake-concurrent"),
            "ARENA_CATALOG": str(self.base / "concurrent.duckdb"),
        }
        started = time.monotonic()
        procs = [
            subprocess.Popen(
                materialize("raw_logs,raw_rejects,conversations", m),
                env=env,
                cwd=self.work,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for m in (*MONTHS, "2024-04")
        ]
        codes = [p.wait(timeout=1800) for p in procs]
        tables = {"raw_logs", "raw_rejects", "conversations"}
        ref = {k: v for k, v in self.reference.items() if k.split("/")[0] in tables}
        got = digest(self.base / "lake-concurrent", tables)
        self.say(
            "four months ingested and cleaned at once",
            lost(ref, got),
            f"exit codes {codes}; {len(got)} partitions, the 3 built months equal the "
            "sequential ones"
            if not lost(ref, got)
            else f"exit codes {codes}",
            time.monotonic() - started,
        )

    # -- a labeller with ~30 % faults ------------------------------------------------------
    def faulty_endpoint(self) -> None:
        import urllib.request

        import polars as pl

        port = free_port()
        server = subprocess.Popen(
            arena_sim(
                "serve",
                "--world-seed",
                "7",
                "--port",
                str(port),
                "--truth-root",
                self.env["ARENA_RAW_ROOT"],
                "--rate-429",
                "0.1",
                "--rate-500",
                "0.06",
                "--rate-garbage",
                "0.06",
                "--rate-empty",
                "0.04",
                "--rate-truncated",
                "0.04",
            ),
            env=self.env,
            cwd=self.work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        env = {
            **self.env,
            "ARENA_LABELER_BASE_URL": f"{url}/v1",
            "ARENA_LABELER_API_KEY": "sim",
            "ARENA_LLM_CACHE_ROOT": str(self.base / "cache-faulty"),
        }
        try:
            for _ in range(600):
                try:
                    urllib.request.urlopen(f"{url}/_faults", timeout=2)
                    break
                except OSError:
                    time.sleep(0.2)
            rc1, _, _ = run(materialize("topic_labels", TARGET), env, self.work, 900)
            told1 = headline(self.home) if rc1 else "run succeeded"
            labels = pl.read_parquet(
                Path(env["ARENA_LAKE_ROOT"]) / "topic_labels" / f"{TARGET}.parquet"
            )
            status = [c for c in labels.columns if c.endswith("_status")]
            gap = lambda f: int(
                f.select(
                    pl.sum_horizontal(
                        [pl.col(c).is_in(["failed", "parse_failed"]).sum() for c in status]
                    )
                ).item()
            )
            missing = gap(labels)
            asked = int(
                labels.select(
                    pl.sum_horizontal([(pl.col(c) != "not_applicable").sum() for c in status])
                ).item()
            )
            request = urllib.request.Request(
                f"{url}/_faults",
                data=b"{}",
                method="POST",
                headers={"Content-Type": "application/json"},
            )
            urllib.request.urlopen(request, timeout=10)  # the endpoint is healthy again
            rc2, _, took = run(materialize("topic_labels", TARGET), env, self.work, 900)
            labels = pl.read_parquet(
                Path(env["ARENA_LAKE_ROOT"]) / "topic_labels" / f"{TARGET}.parquet"
            )
            self.say(
                "labeller with ~30 % faults, then healed",
                gap(labels),
                f"faulty run rc {rc1}: {missing} of {asked} labels failed/unparsed "
                f"({missing / max(asked, 1):.1%}; {told1}); healed rerun rc {rc2}, "
                f"{gap(labels)} left",
                took,
            )
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)

    # -- forget with recompute against a clean rematerialization ---------------------------
    def forget(self) -> None:
        import orjson
        import polars as pl

        from arena_assets.privacy.forget import user_hash_of

        copies = {}
        for name in ("recompute", "rematerialized"):
            root = self.base / f"forget-{name}"
            shutil.copytree(self.base / "lake-finished", root / "lake")
            shutil.copytree(self.base / "release-finished", root / "release")
            copies[name] = {
                **self.env,
                "ARENA_LAKE_ROOT": str(root / "lake"),
                "ARENA_RELEASE_ROOT": str(root / "release"),
                "ARENA_CATALOG": str(root / "arena.duckdb"),
            }
        conv = pl.read_parquet(
            Path(copies["recompute"]["ARENA_LAKE_ROOT"]) / "conversations" / f"{TARGET}.parquet"
        )
        target = (
            conv["user_hash"]
            .value_counts()
            .sort(["count", "user_hash"], descending=[True, False])["user_hash"][0]
        )
        identity = None
        for path in sorted(Path(self.env["ARENA_RAW_ROOT"]).glob(f"{TARGET}/*.jsonl")):
            for raw in path.read_bytes().splitlines():
                try:
                    event = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                who = (event.get("user_id") or event.get("ip")) if isinstance(event, dict) else None
                if (
                    isinstance(who, str)
                    and user_hash_of(who, self.env["ARENA_USER_SALT"]) == target
                ):
                    identity = who
        rc_a, out_a, took = run(
            arena("forget", "--user", identity, "--recompute"), copies["recompute"], self.work, 3600
        )
        rc_b, _, _ = run(
            arena("forget", "--user", identity), copies["rematerialized"], self.work, 3600
        )
        every = (
            "conversations,battles,battle_cells,topic_labels,topic_clusters,arena_leaderboard,"
            "leaderboard_history,bench_prompts,model_answers,judgments,bench_leaderboard,"
            "judge_human_agreement,over_refusal,leaderboard_site"
        )
        for month in MONTHS:
            run(materialize(every, month), copies["rematerialized"], self.work, 1800)
            run(materialize("month_release", month), copies["rematerialized"], self.work, 900)
        a = digest(Path(copies["recompute"]["ARENA_LAKE_ROOT"]))
        b = digest(Path(copies["rematerialized"]["ARENA_LAKE_ROOT"]))
        differ = sorted(k for k in set(a) | set(b) if a.get(k, (0, ""))[1] != b.get(k, (0, ""))[1])
        before = digest(self.base / "lake-finished", {"battles"})
        deltas = [a.get(k, (0, ""))[0] - before[k][0] for k in sorted(before)]
        still = conv.filter(pl.col("user_hash") == target).height
        self.say(
            "forget --recompute vs Dagster rematerialization",
            len(differ),
            f"rc {rc_a}/{rc_b}; {len(a)} partitions compared, {len(differ)} differ "
            f"{differ[:3]}; battles per month {deltas}; {still} conversations of the user before",
            took,
            output_tail=ours(out_a)[-5:],
        )

    # -- configuration mistakes ------------------------------------------------------------
    def mistake(
        self,
        case: str,
        env_changes: dict,
        select: str = "raw_logs,raw_rejects",
        setting: str = "",
        tables=("raw_logs", "raw_rejects"),
    ) -> None:
        env = {**self.env, **env_changes}
        lake = Path(env["ARENA_LAKE_ROOT"])
        before = digest(lake, set(tables)) if lake.exists() else {}
        rc, out, took = run(materialize(select, TARGET), env, self.work, 900)
        lines = ours(out)
        told = (
            headline(self.home)
            if rc and any("RUN_FAILURE" in x for x in lines)
            else (lines[-1] if rc else "run succeeded")
        )
        named = "names " + setting if setting and setting in told else "does NOT name " + setting
        self.say(
            case,
            lost(before, digest(lake, set(tables))) if before else 0,
            f"rc {rc}, {len(lines)} output lines, {named}: {told.split(': ', 1)[-1][:200]}",
            took,
            told_in_full=told,
        )

    def held_catalog(self, case: str, catalog: str, hold: bool) -> None:
        if not hasattr(self, "free_catalog_s"):  # the same run with a free catalog, to compare
            self.free_catalog_s = run(
                materialize("battle_cells", TARGET), self.env, self.work, 900
            )[2]
        holder = None
        if hold:
            ready = self.base / "holding"
            holder = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import duckdb, sys, pathlib, threading; c = duckdb.connect(sys.argv[1]); "
                    "c.execute('create table if not exists held(x int)'); pathlib.Path(sys.argv[2]).write_text('1'); "
                    "threading.Event().wait()",
                    catalog,
                    str(ready),
                ],
                start_new_session=True,
            )
            while not ready.exists():
                time.sleep(0.1)
        try:
            rc, out, took = run(
                materialize("battle_cells", TARGET),
                {**self.env, "ARENA_CATALOG": catalog},
                self.work,
                900,
            )
        finally:
            if holder:
                os.killpg(holder.pid, signal.SIGKILL)
                holder.wait()
        warned = [x for x in out.splitlines() if "not updated for" in x]
        self.say(
            case,
            0,
            f"rc {rc} in {took:.0f} s (free catalog: {self.free_catalog_s:.0f} s); "
            f"warning: {warned[0].split(' - ')[-1][:120] if warned else 'none'}",
            took,
        )

    def partial_month(self) -> None:
        """The month folder holds one of its day files (a sync cut short): the run must be
        refused in one line naming the run tag, with no row lost; then the documented
        one-run allowance (`dagster job execute` with the tag) shrinks a copy of the lake."""
        src, partial = Path(self.env["ARENA_RAW_ROOT"]), self.base / "partial-raw"
        days = sorted((src / TARGET).glob("events-*"))
        (partial / TARGET).mkdir(parents=True)
        shutil.copy(src / "models.json", partial / "models.json")
        shutil.copy(days[0], partial / TARGET / days[0].name)
        tables = ("raw_logs", "raw_rejects", "conversations")
        self.mistake(
            f"month folder holds 1 of its {len(days)} files",
            {"ARENA_RAW_ROOT": str(partial)},
            ",".join(tables),
            setting="arena/allow_shrink=true",
            tables=tables,
        )
        copy = self.base / "lake-shrunk"
        shutil.copytree(self.env["ARENA_LAKE_ROOT"], copy)
        env = {
            **self.env,
            "ARENA_RAW_ROOT": str(partial),
            "ARENA_LAKE_ROOT": str(copy),
            "ARENA_CATALOG": str(self.base / "shrunk.duckdb"),
        }
        tags = {"dagster/partition": TARGET, "arena/allow_shrink": "true"}
        before = digest(copy, {"raw_logs"})[f"raw_logs/{TARGET}"][0]
        rc, out, took = run(
            dagster(
                "job", "execute", "-m", "arena_assets.definitions", "-j", "monthly_refresh",
                "-o", "raw_logs", "--tags", json.dumps(tags),
            ),
            env,
            self.work,
            900,
        )  # fmt: skip
        after = digest(copy, {"raw_logs"})[f"raw_logs/{TARGET}"][0]
        told = f"raw_logs {TARGET} {before:,} -> {after:,} rows, as asked"
        self.say(
            "  ...allowed for one run by its tag (a copy)",
            "n/a",
            f"rc {rc}: " + (told if rc == 0 else " | ".join(ours(out)[-3:])),
            took,
        )

    def partitions_range(self) -> None:
        rc, out, took = run(
            materialize("raw_logs,raw_rejects", TARGET),
            {**self.env, "ARENA_PARTITIONS_END": "2023-06"},
            self.work,
            600,
        )
        lines = ours(out)
        self.say(
            "ARENA_PARTITIONS_END before START",
            0,
            f"rc {rc}, {len(lines)} output lines: {lines[-1] if lines else ''}",
            took,
        )

    def disk_full(self) -> None:
        mount = self.base / "tiny-disk"
        mount.mkdir()
        src = self.base / "lake-finished"
        sizes = [
            (src / t / f"{TARGET}.parquet").stat().st_size for t in ("raw_logs", "conversations")
        ]
        need = sum(sizes) + sizes[1] // 2 + 16 * 4096  # the new file cannot fit beside the old
        if subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={need}", "tmpfs", str(mount)], capture_output=True
        ).returncode:
            self.say("disk full (tmpfs lake)", "n/a", "skipped: cannot mount a tmpfs here", 0.0)
            return
        try:
            for table in ("raw_logs", "conversations"):
                (mount / table).mkdir()
                shutil.copy(src / table / f"{TARGET}.parquet", mount / table)
            self.mistake(
                "disk full while writing conversations",
                {"ARENA_LAKE_ROOT": str(mount)},
                "conversations",
                str(mount),
                ("conversations",),
            )
        finally:
            subprocess.run(["umount", str(mount)], capture_output=True)

    def damaged_partition(self) -> None:
        """conversations 2024-02 cut to half its bytes while battles, which reads it, runs;
        the file is put back afterwards."""
        path = Path(self.env["ARENA_LAKE_ROOT"]) / "conversations" / f"{TARGET}.parquet"
        whole = path.read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
        try:
            self.mistake(
                "conversations partition truncated, battles reads it",
                {},
                "battles",
                "ARENA_LAKE_ROOT",
                ("battles",),
            )
        finally:
            path.write_bytes(whole)

    def read_only_lake(self) -> None:
        """The lake's conversations folder mounted read-only while conversations runs."""
        folder = Path(self.env["ARENA_LAKE_ROOT"]) / "conversations"
        case = "lake folder read-only, conversations writes it"
        bind = ["mount", "--bind", str(folder), str(folder)]
        if subprocess.run(bind, capture_output=True).returncode:
            self.say(case, "n/a", "skipped: cannot mount here", 0.0)
            return
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
            self.mistake(case, {}, "conversations", "ARENA_LAKE_ROOT", ("conversations",))
        finally:
            subprocess.run(["umount", str(folder)], capture_output=True)

    def settings_rule(self) -> None:
        project = self.base / "settings-project"
        project.mkdir()
        try:
            from arena_assets.envfile import sync_env_file

            sync_env_file(self.project / ".env.example", project / ".env")
        except ImportError:  # an older checkout: `make` copied .env.example
            shutil.copy(self.project / ".env.example", project / ".env")
        env = {k: v for k, v in self.env.items() if not k.startswith("ARENA_")}
        env["ARENA_RAW_ROOT"] = self.env[
            "ARENA_RAW_ROOT"
        ]  # the shell's value; .env says ./data/raw
        started = time.monotonic()
        rc, _out, _ = run(materialize("raw_logs,raw_rejects", TARGET), env, project, 900)
        got = (project / "data" / "lake" / "raw_logs" / f"{TARGET}.parquet").exists()
        rows = digest(project / "data" / "lake", {"raw_logs"}).get(f"raw_logs/{TARGET}", (0, ""))[0]
        _rc2, out2, _ = run(arena("summary"), env, project, 300)
        shell_won = f"Raw logs:        {self.env['ARENA_RAW_ROOT']}" in out2
        self.say(
            "shell ARENA_RAW_ROOT vs .env (both CLIs)",
            0 if rows else "all",
            f"dagster CLI rc {rc}, read {rows} raw_logs rows from the shell's root "
            f"({'yes' if got and rows else 'NO: .env won'}); arena-assets used the shell's: "
            f"{'yes' if shell_won else 'no'}",
            time.monotonic() - started,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-month", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/chaos"))
    parser.add_argument("--project", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--kill-points", type=int, default=4, help="kill points per asset")
    parser.add_argument("--cases", default="kills,concurrent,faults,forget,mistakes")
    args = parser.parse_args()
    cases = set(args.cases.split(","))
    if args.out.exists():
        shutil.rmtree(args.out)
    week = Week(args.out.resolve(), args.project.resolve(), args.per_month)
    print(
        f"uptime: {os.getloadavg()}; building {MONTHS} x {args.per_month} sessions ...", flush=True
    )
    week.build()
    for asset, points in POINTS.items():
        for point in points[: args.kill_points] if "kills" in cases else ():
            week.kill(asset, point)
    if "concurrent" in cases:
        week.concurrent()
    if "faults" in cases:
        week.faulty_endpoint()
    if "forget" in cases:
        week.forget()
    if "mistakes" in cases:
        mistakes(week)
    week.arena.close()
    (args.out / "results.json").write_text(json.dumps(week.results, indent=2))
    print(f"uptime after: {os.getloadavg()}; results in {args.out / 'results.json'}")


def mistakes(week: Week) -> None:
    week.mistake(
        "ARENA_RAW_ROOT names no month folder",
        {"ARENA_RAW_ROOT": str(week.base / "typo")},
        setting="ARENA_RAW_ROOT",
    )
    (week.base / "empty-raw" / TARGET).mkdir(parents=True)
    week.mistake(
        "ARENA_RAW_ROOT month folder empty",
        {"ARENA_RAW_ROOT": str(week.base / "empty-raw")},
        setting="ARENA_ALLOW_EMPTY_MONTH",
    )
    week.partial_month()
    week.partitions_range()
    week.mistake(
        "a setting the registry refuses (labeller concurrency -3)",
        {"ARENA_LABELER_MAX_CONCURRENCY": "-3"},
        setting="ARENA_LABELER_MAX_CONCURRENCY",
    )
    week.damaged_partition()
    week.read_only_lake()
    unreachable = f"http://127.0.0.1:{free_port()}/v1"
    week.mistake(
        "labeller base URL unreachable",
        {
            "ARENA_LABELER_BASE_URL": unreachable,
            "ARENA_LLM_CACHE_ROOT": str(week.base / "cache-unreachable"),
        },
        "topic_labels",
        setting=unreachable,
        tables=("topic_labels",),
    )
    week.mistake(
        "s3:// lake with no server",
        {
            "ARENA_LAKE_ROOT": "s3://arena-lake/lake",
            "ARENA_S3_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
            "ARENA_S3_ACCESS_KEY_ID": "x",
            "ARENA_S3_SECRET_ACCESS_KEY": "y",
            "ARENA_S3_REGION": "us-east-1",
        },
        setting="ARENA_LAKE_ROOT",
    )
    week.mistake(
        "raw_logs,conversations without raw_rejects",
        {},
        "raw_logs,conversations",
        setting="raw_rejects",
    )
    week.held_catalog(
        "catalog held by a duckdb shell (write lock)", week.env["ARENA_CATALOG"], True
    )
    week.held_catalog("catalog not writable (path under /proc)", "/proc/arena.duckdb", False)
    week.disk_full()
    week.settings_rule()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        main()
