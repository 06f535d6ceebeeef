"""Helpers of the whole-pipeline benchmarks (full_month.py, backfill_scale.py): an
environment for the Dagster runs, one `dagster asset materialize` run measured (wall, CPU
and peak RSS of its process tree, from wait4), and what the instance recorded about it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def base_env(root: Path, first: str, last: str, **overrides: str) -> dict[str, str]:
    """``.env.example``'s settings with every path under ``root`` and the partitions
    ``first``..``last``; ``overrides`` win. DAGSTER_HOME is ``root/dagster_home``."""
    from dotenv import dotenv_values

    env = {k: v or "" for k, v in dotenv_values(PROJECT / ".env.example").items()}
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text((PROJECT / "dagster.yaml").read_text())
    env |= {
        "ARENA_RAW_ROOT": str(root / "raw"),
        "ARENA_LAKE_ROOT": str(root / "lake"),
        "ARENA_CATALOG": str(root / "arena.duckdb"),
        "ARENA_RELEASE_ROOT": str(root / "release"),
        "ARENA_PARTITIONS_START": first,
        "ARENA_PARTITIONS_END": last,
        "DAGSTER_HOME": str(home),
    }
    env |= overrides
    # as the Makefile does: a process that may not write bytecode compiles dagster, polars,
    # sklearn... again every time it starts (seconds of CPU per run)
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**inherited, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **env}


@dataclass
class Measured:
    """One process (tree) measured: wall and CPU seconds, peak resident memory."""

    wall: float
    cpu: float
    peak_rss_gb: float
    returncode: int
    tail: str = ""
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before / after


def measured(cmd: list[str], env: dict[str, str], cwd: Path, log: Path | None = None) -> Measured:
    """Run ``cmd`` and return its wall, CPU (user + sys of it and its waited-for children)
    and peak RSS (the largest process of the tree, from ``wait4``)."""
    load0 = os.getloadavg()[0]
    out = (log or cwd / "last_run.log").open("w")
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.close()
    tail = Path(out.name).read_text()[-3000:] if proc.returncode else ""
    return Measured(
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024**2,
        proc.returncode,
        tail,
        (load0, os.getloadavg()[0]),
    )


def materialize_cmd(
    selection: str,
    partition_args: list[str],
    executor: str = "in_process",
    module: str = "arena_assets.definitions",
) -> list[str]:
    cmd = [
        str(BIN / "dagster"),
        "asset",
        "materialize",
        "-m",
        module,
        "--select",
        selection,
        *partition_args,
    ]
    if executor:
        cmd += ["--config-json", json.dumps({"execution": {"config": {executor: {}}}})]
    return cmd


@dataclass
class Recorded:
    """What the instance holds about one asset's latest materialization of a month."""

    metadata: dict = field(default_factory=dict)
    step_seconds: float | None = None  # the step's own body (start to success)


def recorded(home: str, asset: str, month: str) -> Recorded:
    import dagster as dg

    with dg.DagsterInstance.from_config(home) as instance:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[month]), limit=1
        ).records
        if not records:
            return Recorded()
        record = records[0]
        meta = {k: v.value for k, v in record.asset_materialization.metadata.items()}
        run_id = record.event_log_entry.run_id
        start = end = None
        for e in instance.all_logs(run_id):
            if not e.dagster_event or not e.step_key:
                continue
            kind = e.dagster_event.event_type
            if kind == dg.DagsterEventType.STEP_START and _step_of(e.step_key, asset):
                start = e.timestamp
            elif kind == dg.DagsterEventType.STEP_SUCCESS and _step_of(e.step_key, asset):
                end = e.timestamp
        return Recorded(meta, end - start if start and end else None)


def calls_span(meta: dict) -> float | None:
    """Seconds in which an asset's LLM batches were running: the union of [started_at,
    started_at + elapsed_s] of every batch report in its metadata that made calls
    (batches asked at once overlap, batches one after another add up). None when no
    report says when it started."""
    spans: list[tuple[float, float]] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if value.get("started_at") and value.get("calls"):
                spans.append(
                    (
                        value["started_at"],
                        value["started_at"] + float(value.get("elapsed_s") or 0.0),
                    )
                )
            else:
                for v in value.values():
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(meta)
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total or None


def _step_of(step_key: str, asset: str) -> bool:
    return step_key.split(".")[0] in (asset, "raw_logs" if asset == "raw_rejects" else asset)


def materializations(home: str) -> dict[tuple[str, str], int]:
    """(asset, month) -> how many times it was materialized in the instance."""
    import dagster as dg

    out: dict[tuple[str, str], int] = {}
    with dg.DagsterInstance.from_config(home) as instance:
        for key in instance.get_asset_keys():
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key), limit=10_000
            ).records
            for r in records:
                part = r.asset_materialization.partition
                out[(key.to_user_string(), part)] = out.get((key.to_user_string(), part), 0) + 1
    return out


def llm_figures(asset: str, meta: dict) -> tuple[int, int, int, float]:
    """(calls, prompt tokens, completion tokens, estimated cost) an LLM asset recorded."""
    if asset in ("topic_labels", "topic_clusters"):
        return (
            int(meta.get("calls_made", 0)),
            int(meta.get("prompt_tokens", 0)),
            int(meta.get("completion_tokens", 0)),
            float(meta.get("estimated_cost", 0.0)),
        )
    if asset == "bench_prompts":
        r = meta.get("relabel_calls") or {}
        return (
            int(r.get("calls", 0)),
            int(r.get("prompt_tokens", 0)),
            int(r.get("completion_tokens", 0)),
            float(r.get("estimated_cost", 0.0)),
        )
    if asset == "over_refusal":  # one batch: the risk labels of the month's distinct prompts
        r = meta.get("risk_calls") or {}
        return (
            int(r.get("calls", 0)),
            int(r.get("prompt_tokens", 0)),
            int(r.get("completion_tokens", 0)),
            float(r.get("cost", 0.0)),
        )
    reports = list((meta.get("calls") or {}).values())
    if asset == "judgments":
        reports += list((meta.get("single_grade_calls") or {}).values())
    return (
        sum(r["calls"] for r in reports),
        sum(r["prompt_tokens"] for r in reports),
        sum(r["completion_tokens"] for r in reports),
        sum(r["cost"] for r in reports),
    )
