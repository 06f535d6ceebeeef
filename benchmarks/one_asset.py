"""One asset of a month again, as `full_month.py` ran it, to measure a change to one stage.

    .venv/bin/python benchmarks/one_asset.py --out DIR --conversations N ASSET [ASSET ...] [--month 2025-01]
        [--empty-cache CACHE_DIR] [--models 120] [--latency 0.3] [--concurrency 64]
        [--bench-size 500] [--per-cluster 14] [--candidates 10] [--agreement-sample N] [--seed 7]
        [--budget USD]

``DIR`` is a `full_month.py --out` directory whose month was run (its raw logs, lake and
instance); the settings (``--conversations`` included: the boards' minimum battles scale
with it) must be the ones that run used (a month run before ``--per-cluster`` existed
used 2 a cluster: give ``--per-cluster 2`` when ``bench_prompts`` is among the assets).
Each asset is one `dagster asset materialize` run against the simulated arena in its own
process, as in `full_month.py`.
``--empty-cache`` points the LLM cache at another folder (empty the first time), so the
LLM assets make their calls again instead of reading the month's cache. Prints per asset
the run's wall, CPU and peak RSS, the step's own time and, for LLM assets, each batch's calls and
seconds in the calls (the instance's metadata), and the share of the concurrency bound over the
step and over the seconds in which its batches ran.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dagster_runs import calls_span, llm_figures, materialize_cmd, measured, recorded
from full_month import month_arguments, settings, start_endpoint


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("assets", nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--month", default="2025-01")
    ap.add_argument("--empty-cache", type=Path)
    ap.add_argument(
        "--budget",
        type=float,
        help="ARENA_LLM_BUDGET_USD for these runs (US dollars per "
        "asset and month; default: none). A run it stops prints its one line and goes on",
    )
    month_arguments(ap, conversations=None)  # as the full_month.py run
    args = ap.parse_args()
    out = args.out.resolve()
    if not (out / "lake").is_dir():
        sys.exit(f"{out} has no lake: run benchmarks/full_month.py --out {out} first")
    server, url = start_endpoint(out, args)
    try:
        env = settings(out, args, url)
        if args.empty_cache:
            env["ARENA_LLM_CACHE_ROOT"] = str(args.empty_cache.resolve())
        if args.budget is not None:
            if args.budget < 0:
                ap.error("--budget must be >= 0")
            env["ARENA_LLM_BUDGET_USD"] = repr(args.budget)
        for asset in args.assets:
            m = measured(
                materialize_cmd(asset, ["--partition", args.month]),
                env,
                out,
                out / f"{args.month}-{asset}-again.log",
            )
            if m.returncode:
                log = (out / f"{args.month}-{asset}-again.log").read_text()  # the run's whole log
                stop = next((ln for ln in log.splitlines() if ": stopped after " in ln), None)
                if args.budget is None or stop is None:
                    sys.exit(f"{asset} failed:\n{m.tail}")
                print(
                    f"{asset:24} wall {m.wall:6.1f} s  stopped by the budget: "
                    f"{stop.split('Failure: ')[-1].strip()[:400]}"
                )
                continue
            rec = recorded(env["DAGSTER_HOME"], asset, args.month)
            line = (
                f"{asset:24} wall {m.wall:6.1f} s  CPU {m.cpu:6.1f} s  step {rec.step_seconds or 0:6.2f} s  "
                f"peak RSS {m.peak_rss_gb:.2f} GB"
            )
            calls = llm_figures(asset, rec.metadata)[0]
            if calls and rec.step_seconds and args.latency:
                bound = calls * args.latency / args.concurrency  # seconds at the concurrency bound
                line += f"  {calls} calls, {bound / rec.step_seconds:.0%} of the bound"
                if span := calls_span(rec.metadata):
                    line += f" ({span:.2f} s in the calls: {bound / span:.0%})"
            print(line)
            for name, report in (rec.metadata.get("calls") or {}).items():
                if isinstance(report, dict) and "elapsed_s" in report:
                    print(f"    {name:30} {report['calls']:6} calls in {report['elapsed_s']:.2f} s")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
