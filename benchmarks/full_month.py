"""One production-size month through every asset, as a user runs it (run by hand).

    .venv/bin/python benchmarks/full_month.py [--conversations 500000] [--models 120]
        [--latency 0.3] [--concurrency 64] [--bench-size 500] [--per-cluster 14]
        [--candidates 10] [--agreement-sample N] [--completions N] [--out benchmarks/out/full_month]
        [--phases first,rerun,second] [--stop-after ASSET]

Simulates the month (``--conversations`` conversations, ``--models`` models, the
simulator's usual vision share, ``--completions`` Copilot Arena completion pairs: by
default 450,000 for 500,000 conversations, in proportion; 0 none) and a second month on
top, then materializes every asset of the month one `dagster asset materialize` run per op
of the code location, in graph order (in-process executor, the project's instance under
``--out``; a stage added later is measured without editing this file), the LLM stages
against the simulated arena serving in its own process (as a real endpoint is elsewhere)
with ``--latency`` seconds per call and ``--concurrency`` concurrent calls per task
(bench: ``--bench-size`` prompts, ``--per-cluster`` a topic cluster, ``--candidates``
candidates, one judge; ``--agreement-sample`` battles judged against the human votes, by
default `.env.example`'s). Per asset it prints the run's wall and CPU seconds and peak RSS
(its process, from wait4), the step's own body time (from the instance), rows, LLM calls,
tokens, estimated cost at the prices below and, for an LLM asset, the share of the
concurrency bound reached: bound time calls / (concurrency / latency) over the step's time
(``bound``), and over the seconds in which its batches were running (``calls``: the step's
own reading, planning and writing left out; its batches report when they ran). Phases:
``first`` (the month), ``rerun`` (the same again as a user reruns a month: one run of the
every-asset job, `dg launch --job monthly_refresh`; every answer cached, targets 0 calls
and <= 10 % of the first run's time), ``second`` (month 2: only its new distinct prompts
are labelled). Targets on the 2-core machine: every non-LLM asset together <= 10 min,
every LLM asset >= 90 % of the bound, peak RSS <= 6 GB. Figures go to
``<out>/<phase>.json`` too. ``--stop-after ASSET`` runs only that asset and what it reads
(with ``--phases first``): a stage measured at production size without the labels' ninety
minutes.

Each run process first loads dagster and the code location; that floor is measured and
printed (``floor``) so that the step bodies can be compared with it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dagster_runs import BIN, base_env, calls_span, llm_figures, materialize_cmd, measured, recorded

MONTHS = ("2025-01", "2025-02")  # the simulated world's models are all released by then
# the assets whose metadata records LLM calls (the rest is "non-LLM" in the targets)
LLM = {
    "topic_labels",
    "topic_clusters",
    "prompt_embeddings",
    "model_answers",
    "judgments",
    "judge_human_agreement",
    "over_refusal",
}


def month_runs() -> list[tuple[str, str]]:
    """(name, selection) of every run of a month in graph order: one run per op of the code
    location (an op that writes several assets, e.g. raw_logs + raw_rejects, is one run), so
    a stage added to the code location is measured without editing this list."""
    from arena_assets.definitions import defs

    graph = defs().resolve_asset_graph()
    ops: dict[str, list[str]] = {}
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if node.partitions_def is None:
            continue
        ops.setdefault(node.assets_def.op.name, []).append(key.to_user_string())
    return [(names[0], ",".join(names)) for names in ops.values()]


# prices at which the estimated cost is computed (USD per 1M tokens; of the order of a
# small hosted model for labels, an embedding model, a strong judge, a reward model,
# mid-size candidates)
PRICES = {
    "LABELER": ("0.15", "0.60"),
    "EMBED": ("0.02", "0"),
    "JUDGE": ("2.50", "10.00"),
    "REWARD": ("0.20", "0"),
}  # the reward model scores a conversation: input tokens only
CANDIDATE_PRICE = (0.50, 1.50)


def settings(out: Path, args, url: str) -> dict[str, str]:
    from arena_assets.simulator.config import WorldConfig
    from arena_assets.simulator.world import World

    world = World.build(WorldConfig(n_models=args.models), args.seed)
    names = [m.name for m in world.models][: args.candidates]
    candidates = [
        {
            "name": n,
            "base_url": url,
            "params": {
                "max_concurrency": args.concurrency,
                "max_tokens": 1024,
                "price_input_per_1m": CANDIDATE_PRICE[0],
                "price_output_per_1m": CANDIDATE_PRICE[1],
            },
        }
        for n in names
    ]
    over = {
        "ARENA_SIM_LATENCY": str(args.latency),
        "ARENA_SIM_WORLD_SEED": str(args.seed),
        "ARENA_CANDIDATES": json.dumps(candidates),
        "ARENA_BENCH_BASELINE": names[0],
        "ARENA_BENCH_JUDGES": "sim-judge",
        "ARENA_BENCH_SIZE": str(args.bench_size),
        "ARENA_BENCH_PER_CLUSTER": str(args.per_cluster),
        **(
            {"ARENA_AGREEMENT_SAMPLE_SIZE": str(args.agreement_sample)}
            if args.agreement_sample is not None
            else {}
        ),
        "ARENA_BENCH_VISION_SIZE": "0",
        "ARENA_BENCH_MIN_QUALITY": "6",
        # real-traffic values (README) at 500k; smaller months scaled down, so boards exist
        "ARENA_MIN_BATTLES": str(max(20, round(300 * args.conversations / 500_000))),
        "ARENA_MIN_CATEGORY_BATTLES": str(max(100, round(1000 * args.conversations / 500_000))),
        "ARENA_INGEST_WORKERS": "2",
    }
    for task, (pin, pout) in PRICES.items():
        over |= {
            f"ARENA_{task}_BASE_URL": url,
            f"ARENA_{task}_API_KEY": "sim",
            f"ARENA_{task}_MAX_CONCURRENCY": str(args.concurrency),
            f"ARENA_{task}_PRICE_INPUT_PER_1M": pin,
            f"ARENA_{task}_PRICE_OUTPUT_PER_1M": pout,
        }
    return base_env(out, MONTHS[0], MONTHS[-1], **over)


def simulate(out: Path, args, months: list[str]) -> None:
    from arena_assets.simulator import simulate_months
    from arena_assets.simulator.config import WorldConfig

    todo = [m for m in months if not (out / "raw" / m).exists()]
    if todo:
        sessions = round(args.conversations / 1.55)  # a battle is two conversations (55 %)
        t = time.perf_counter()
        # Copilot Arena's pairs come from their own random stream: the chat logs are the same
        simulate_months(
            out / "raw",
            todo,
            sessions,
            seed=args.seed,
            config=WorldConfig(n_models=args.models),
            completions_per_month=args.completions,
        )
        print(
            f"simulated {', '.join(todo)}: {sessions:,} sessions and {args.completions:,} completion "
            f"pairs each in {time.perf_counter() - t:.0f} s"
        )
    from arena_assets.simulator.completions import COMPLETIONS_DIR

    for month in months:  # a month simulated before --completions keeps its raw logs as they are
        if args.completions and not (out / "raw" / COMPLETIONS_DIR / month).exists():
            print(
                f"{month} was simulated without completion pairs: the completions' assets run on "
                "an empty month (a new --out simulates them)",
                file=sys.stderr,
            )


def start_endpoint(out: Path, args) -> tuple[subprocess.Popen, str]:
    """The simulated arena in its own process, as a real endpoint is on other machines:
    the month's runs pay only the client side of each call (its CPU and RSS apart)."""
    proc = subprocess.Popen(
        [
            str(BIN / "arena-sim"),
            "serve",
            "--port",
            "0",
            "--world-seed",
            str(args.seed),
            "--config",
            json.dumps({"n_models": args.models}),
            "--truth-root",
            str(out / "raw"),
            "--latency",
            str(args.latency),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )
    url = proc.stdout.readline().split(" at ", 1)[1].split()[0]
    # its truth (the month's prompts and battles) is read in the background: wait for it,
    # or the first LLM asset's first wave waits on it and is timed as the client's
    print(f"simulated arena: {proc.stdout.readline().strip()}", file=sys.stderr)
    return proc, url


def endpoint_usage(pid: int) -> tuple[float, float]:
    """(CPU seconds, resident GB) of the endpoint process so far."""
    import psutil

    p = psutil.Process(pid)
    return sum(p.cpu_times()[:2]), p.memory_info().rss / 1024**3


def floor(env: dict[str, str], out: Path) -> float:
    """CPU seconds a run process spends loading dagster and the code location (median of 3)."""
    cmd = [str(BIN / "python"), "-c", "from arena_assets.definitions import defs; defs()"]
    return statistics.median(measured(cmd, env, out).cpu for _ in range(3))


def run_month(month: str, env: dict[str, str], out: Path, args) -> list[dict]:
    rows = []
    bound_rate = args.concurrency / args.latency if args.latency else None
    for asset, selection in until(month_runs(), args.stop_after):
        m = measured(
            materialize_cmd(selection, ["--partition", month]),
            env,
            out,
            out / f"{month}-{asset}.log",
        )
        note = ""
        if m.returncode:
            # a blocking check that failed after the partition was written: said, and the
            # month goes on (the next runs read the lake); anything else stops here
            failed = [
                line.split(":", 1)[1].strip()
                for line in m.tail.splitlines()
                if line.startswith(f"{asset}:")
            ]
            written = (out / "lake" / asset / f"{month}.parquet").exists()
            if not (written and "blocking asset check failed" in m.tail):
                sys.exit(f"{asset} {month} failed:\n{m.tail}")
            note = f"blocking check failed: {', '.join(dict.fromkeys(failed)) or '?'}"
            print(f"   ({asset} {month}: {note}; its partition was written, the month goes on)")
        rec = recorded(env["DAGSTER_HOME"], asset, month)
        row = {
            "asset": asset,
            "month": month,
            "wall": m.wall,
            "cpu": m.cpu,
            "peak_rss_gb": m.peak_rss_gb,
            "step": rec.step_seconds,
            "rows": rec.metadata.get("dagster/row_count"),
            "load": m.load,
            "llm": asset in LLM,
            "note": note,
        }
        if asset in LLM or asset == "bench_prompts":
            calls, pin, pout, cost = llm_figures(asset, rec.metadata)
            row |= {"calls": calls, "prompt_tokens": pin, "completion_tokens": pout, "cost": cost}
            if bound_rate and calls and rec.step_seconds:
                row["bound_share"] = calls / bound_rate / rec.step_seconds
                if span := calls_span(rec.metadata):  # the same, over the seconds its batches ran
                    row["calls_share"] = calls / bound_rate / span
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def until(runs: list[tuple[str, str]], last: str | None) -> list[tuple[str, str]]:
    """The month's runs that write ``last`` or what it reads, directly or not (all when
    None): the rest of the month is left out whatever order the graph gives it."""
    if last is None:
        return runs
    import dagster as dg

    from arena_assets.definitions import defs

    names = [n for _, selection in runs for n in selection.split(",")]
    if last not in names:
        sys.exit(f"--stop-after {last}: not an asset of the month ({', '.join(names)})")
    graph = defs().resolve_asset_graph()
    needed = {k.to_user_string() for k in dg.AssetSelection.assets(last).upstream().resolve(graph)}
    return [(name, selection) for name, selection in runs if needed & set(selection.split(","))]


def rerun_month(month: str, env: dict[str, str], out: Path) -> tuple[list[dict], dict]:
    """The month again as a user reruns it: one run of the every-asset job (``dg launch
    --job monthly_refresh``, in-process executor), so the floor is paid once. Per asset:
    the step's time and LLM calls from the instance; wall, CPU and peak RSS for the run."""
    cmd = [
        str(BIN / "dg"),
        "launch",
        "--job",
        "monthly_refresh",
        "--partition",
        month,
        "-m",
        "arena_assets.definitions",
        "--config-json",
        json.dumps({"execution": {"config": {"in_process": {}}}}),
    ]
    log = out / f"{month}-rerun.log"
    m = measured(cmd, env, out, log)
    if m.returncode:
        # as in the first run: a blocking check that failed is said and the figures stand
        # (in one job run its downstream steps are skipped: listed below with no step time)
        if "blocking asset check failed" not in log.read_text():
            sys.exit(f"the rerun of {month} failed:\n{m.tail}")
        print(
            f"   (the rerun of {month}: a blocking check failed; the steps after it were skipped)"
        )
    rows = []
    for asset, _ in month_runs():
        rec = recorded(env["DAGSTER_HOME"], asset, month)
        row = {"asset": asset, "step": rec.step_seconds, "llm": asset in LLM}
        if asset in LLM or asset == "bench_prompts":
            row["calls"] = llm_figures(asset, rec.metadata)[0]
        rows.append(row)
        print(
            f"{asset:24} step {rec.step_seconds or 0:7.1f} s"
            + (f"  {row['calls']} calls" if "calls" in row else "")
        )
    run = {
        "wall": m.wall,
        "cpu": m.cpu,
        "peak_rss_gb": m.peak_rss_gb,
        "load": m.load,
        "calls": sum(r.get("calls", 0) for r in rows),
    }
    print(
        f"-- the rerun as one run: {m.wall:.0f} s wall, {m.cpu:.0f} CPU-s, peak RSS "
        f"{m.peak_rss_gb:.2f} GB, {run['calls']} LLM calls, load {m.load[0]:.1f}-{m.load[1]:.1f}"
    )
    return rows, run


HEAD = (
    f"{'asset':20} {'wall s':>8} {'step s':>8} {'CPU s':>8} {'RSS GB':>7} {'rows':>10} "
    f"{'calls':>9} {'in tok':>12} {'out tok':>11} {'cost $':>9} {'bound':>6} {'calls':>6} {'load':>9}"
)


def _line(r: dict) -> str:
    step = f"{r['step']:8.1f}" if r.get("step") is not None else f"{'-':>8}"
    rows = f"{r['rows']:>10,}" if r.get("rows") is not None else f"{'-':>10}"
    llm = (
        f"{r['calls']:>9,} {r['prompt_tokens']:>12,} {r['completion_tokens']:>11,} {r['cost']:>9.2f}"
        if "calls" in r
        else f"{'':>9} {'':>12} {'':>11} {'':>9}"
    )
    bound = f"{r['bound_share']:6.0%}" if "bound_share" in r else f"{'':>6}"
    bound += f" {r['calls_share']:6.0%}" if "calls_share" in r else f" {'':>6}"
    return (
        f"{r['asset']:20} {r['wall']:8.1f} {step} {r['cpu']:8.1f} {r['peak_rss_gb']:7.2f} {rows} "
        f"{llm} {bound} {r['load'][0]:4.1f}-{r['load'][1]:<4.1f}"
    )


def summarize(rows: list[dict], floor_cpu: float, title: str) -> dict:
    non = [r for r in rows if not r["llm"]]
    llm = [r for r in rows if r["llm"]]
    s = {
        "title": title,
        "non_llm_wall": sum(r["wall"] for r in non),
        "non_llm_step": sum(r["step"] or 0 for r in non),
        "llm_wall": sum(r["wall"] for r in llm),
        "total_wall": sum(r["wall"] for r in rows),
        "total_cpu": sum(r["cpu"] for r in rows),
        "peak_rss_gb": max(r["peak_rss_gb"] for r in rows),
        "calls": sum(r.get("calls", 0) for r in rows),
        "cost": sum(r.get("cost", 0.0) for r in rows),
        "floor_cpu": floor_cpu,
        "step_total": sum(r["step"] or 0 for r in rows),
        "runs": len(rows),
    }
    print(
        f"-- {title}: every non-LLM asset together {s['non_llm_wall'] / 60:.1f} min wall "
        f"({s['non_llm_step'] / 60:.1f} min in the steps; target 10 min), LLM assets "
        f"{s['llm_wall'] / 60:.1f} min, whole month {s['total_wall'] / 60:.1f} min / "
        f"{s['total_cpu'] / 60:.1f} CPU-min; peak RSS {s['peak_rss_gb']:.2f} GB (target 6); "
        f"{s['calls']:,} LLM calls, estimated ${s['cost']:,.2f}; each run's floor (loading "
        f"dagster and the code location) {floor_cpu:.1f} CPU-s",
        flush=True,
    )
    return s


def new_prompts(out: Path, first: str, second: str) -> tuple[int, int]:
    """(distinct prompt-tag requests of month 2, of which month 1 did not have): the
    labeller asks the prompt tags once per distinct text of the user turns joined and cut
    (``labels.label.label_inputs``; the image is not part of this request), so a month-2
    text seen in month 1 is a cache hit."""
    import polars as pl

    from arena_assets.labels.label import LabelConfig, label_inputs

    limit = LabelConfig().max_prompt_chars
    keys = []
    for month in (first, second):
        conv = pl.read_parquet(
            out / "lake" / "conversations" / f"{month}.parquet", columns=["conv_id", "messages"]
        )
        inputs = label_inputs(conv, limit).filter(pl.col("label_text").str.strip_chars() != "")
        keys.append(set(inputs["label_text"].to_list()))
    return len(keys[1]), len(keys[1] - keys[0])


def positive(text: str) -> int:
    """An argparse type: an integer of 1 or more (argparse says which argument is wrong)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def month_arguments(ap: argparse.ArgumentParser, conversations: int | None = 500_000) -> None:
    """The month's settings (``one_asset.py`` takes the same: a rerun must match the run);
    ``conversations`` None makes the month's size required."""
    ap.add_argument(
        "--conversations", type=int, default=conversations, required=conversations is None
    )
    ap.add_argument("--models", type=int, default=120)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--bench-size", type=int, default=500)
    # prompts a topic cluster: the simulated world has 105 fine topics (64 of them text), so
    # a month of any size has ~65 text clusters, of which 36 pass BenchBuilder's cluster
    # rule: at the anchor's 2 a cluster the bench is 72 prompts. At 14 the 500,000 month
    # fills a bench of 500 (50,000: 498; 20,000: 369), the load a real month gives at 2
    # (Arena-Hard-Auto v0.1: 500 prompts from 250 clusters). --per-cluster 2 is the anchor's
    # rule
    ap.add_argument("--per-cluster", type=positive, default=14)
    ap.add_argument("--candidates", type=int, default=10)
    # judge_human_agreement's battles (its LLM judge asks each in both orders, the reward
    # model scores both sides: 4 calls a battle); None: .env.example's
    ap.add_argument("--agreement-sample", type=positive, default=None)
    ap.add_argument("--seed", type=int, default=7)
    # Copilot Arena completion pairs a month (0: none); by default 450,000 at 500,000
    # conversations, scaled with the month: its paper (arXiv 2502.09328, February 2025)
    # counts over 4.5 million suggestions served, two a pair, in its first ~4-5 months
    ap.add_argument("--completions", type=int, default=None)


def main() -> None:
    ap = argparse.ArgumentParser()
    month_arguments(ap)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/full_month"))
    ap.add_argument("--phases", default="first,rerun,second")
    ap.add_argument("--stop-after", metavar="ASSET", help="run only this asset and what it reads")
    args = ap.parse_args()
    if args.completions is None:
        args.completions = round(450_000 * args.conversations / 500_000)
    if args.completions < 0:
        ap.error(f"--completions must be 0 or more (pairs a month), not {args.completions}")
    if args.stop_after and args.phases != "first":
        ap.error(
            "--stop-after measures the first run only (--phases first): the rerun is one job "
            "of every asset, and month 2's check reads topic_labels"
        )
    until(month_runs(), args.stop_after)  # a wrong name said before the month is simulated
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    phases = args.phases.split(",")
    simulate(out, args, list(MONTHS if "second" in phases else MONTHS[:1]))
    server, url = start_endpoint(out, args)
    try:
        run_phases(out, args, phases, server, url)
    finally:
        server.terminate()
        server.wait()


def run_phases(out: Path, args, phases: list[str], server: subprocess.Popen, url: str) -> None:
    env = settings(out, args, url)
    floor_cpu = floor(env, out)
    print(
        f"{args.conversations:,} conversations a month, {args.models} models; latency "
        f"{args.latency} s, concurrency {args.concurrency}; bench {args.bench_size} prompts "
        f"({args.per_cluster} a cluster) x {args.candidates} candidates, one judge; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    results = {}
    for phase in phases:
        month = MONTHS[1] if phase == "second" else MONTHS[0]
        print(f"\n== {phase}: {month}" + ("" if phase == "rerun" else f"\n{HEAD}"))
        cpu0 = endpoint_usage(server.pid)[0]
        if phase == "rerun":
            rows, run = rerun_month(month, env, out)
            results[phase] = {"rows": rows, "summary": {"total_wall": run["wall"], **run}}
        else:
            rows = run_month(month, env, out, args)
            results[phase] = {
                "rows": rows,
                "summary": summarize(rows, floor_cpu, f"{phase} {month}"),
            }
        cpu, rss = endpoint_usage(server.pid)
        results[phase]["endpoint"] = {"cpu": cpu - cpu0, "rss_gb": rss}
        print(
            f"-- the simulated endpoint (own process, not in the figures above): "
            f"{cpu - cpu0:.0f} CPU-s, {rss:.2f} GB resident"
        )
        (out / f"{phase}.json").write_text(json.dumps(results[phase], indent=1))
        if phase == "rerun" and "first" in results:
            first = results["first"]["summary"]
            s = results[phase]["summary"]
            print(
                f"-- rerun: {s['calls']} calls; {s['total_wall']:.0f} s = "
                f"{s['total_wall'] / first['total_wall']:.1%} of the first run's "
                f"{first['total_wall']:.0f} s (target <= 10 %); against the first run's step "
                f"bodies alone ({first['step_total']:.0f} s, without a floor per asset): "
                f"{s['total_wall'] / first['step_total']:.1%}"
            )
        if phase == "second":
            distinct, new = new_prompts(out, MONTHS[0], MONTHS[1])
            meta = recorded(env["DAGSTER_HOME"], "topic_labels", MONTHS[1]).metadata
            groups = meta.get("calls_by_group") or {}
            # the group that asks the prompt tags (criteria ...): one call per distinct input
            asked = groups.get("prompt-tags", groups.get("criteria", 0))
            print(
                f"-- month 2: {distinct:,} distinct prompt texts to tag, {new:,} of them not in "
                f"month 1; prompt-tag calls {asked:,} (target: = the new ones); "
                f"all topic_labels calls {groups} with {meta.get('cache_hits', 0):,} cache hits"
            )
            results[phase]["new_prompts"] = {
                "distinct": distinct,
                "new": new,
                "calls_by_group": groups,
            }
            (out / f"{phase}.json").write_text(json.dumps(results[phase], indent=1))


if __name__ == "__main__":
    main()
