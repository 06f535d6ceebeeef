"""Topic labelling throughput at a simulated latency, and calls avoided by prompt dedup.

    .venv/bin/python benchmarks/bench_labels.py [--items 1000] [--latency 0.2] \
        [--concurrency 16] [--repeats 3] [--conversations 5000] [--base-url URL --model M]

1. Throughput: ``run_batch`` labels ``--items`` distinct prompts (criteria-v1) through an
   OpenAI-compatible server whose every answer takes ``--latency`` seconds, with a fresh
   cache each repeat (so every item is a call). The ideal is concurrency / latency items/s;
   prints the median measured rate and its ratio to the ideal (target >= 0.90). The server
   is the test suite's stand-in (``arena_assets_tests.labelling_server``, run as its own
   process with TCP_NODELAY, see its ``setup``) unless
   ``--base-url`` points at another (e.g. ``arena-sim serve`` with its latency set).
2. Dedup: simulates one month (``--conversations`` sessions), ingests and cleans it into a
   temporary lake, and counts conversations vs distinct first prompts (``dedup_key``):
   the criteria calls the dedup saves.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria  # noqa: E402
from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, run_batch  # noqa: E402


def throughput(args: argparse.Namespace) -> None:
    rates = []
    server = None
    if args.base_url is None:  # its own process, as a real endpoint would be
        server = subprocess.Popen(
            [sys.executable, "-m", "arena_assets_tests.labelling_server", str(args.latency)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
    base_url = args.base_url or server.stdout.readline().strip()
    try:
        for rep in range(args.repeats):
            task = LLMTask(
                model=args.model,
                base_url=base_url,
                api_key=args.api_key,
                max_concurrency=args.concurrency,
                timeout=30,
            )
            reqs = [
                LLMRequest(
                    f"r{rep}-{i}",
                    criteria_messages(f"benchmark prompt {rep}-{i}: explain item {i}"),
                    CRITERIA_VERSION,
                )
                for i in range(args.items)
            ]
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                _results, report = run_batch(
                    task, reqs, ResponseCache(tmp, "bench", 64), parse_criteria
                )
                elapsed = time.perf_counter() - start
            assert report.calls >= args.items and report.cache_hits == 0
            rates.append(args.items / elapsed)
            print(
                f"  repeat {rep}: {args.items} items in {elapsed:.2f}s = {rates[-1]:.1f} items/s, "
                f"statuses {report.statuses}"
            )
    finally:
        if server:
            server.stdin.close()
            server.wait(timeout=30)
    ideal = args.concurrency / args.latency
    med = statistics.median(rates)
    print(
        f"throughput: median {med:.1f} items/s, ideal {ideal:.1f} (concurrency {args.concurrency} / "
        f"latency {args.latency}s), ratio {med / ideal:.3f} (target >= 0.90)"
    )


def dedup(args: argparse.Namespace) -> None:
    from arena_assets.labels import distinct_prompts
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.pipeline.ingest import ingest_month
    from arena_assets.simulator import simulate_months
    from arena_assets.storage import Lake

    month = "2024-01"
    with tempfile.TemporaryDirectory() as tmp:
        simulate_months(f"{tmp}/raw", [month], args.conversations, seed=7)
        lake = Lake(f"{tmp}/lake")
        ingest_month(lake, f"{tmp}/raw", month, salt="bench", known_models=None)
        clean_month(lake, month, threads=1)
        conv = lake.read(
            "conversations", month, columns=["conv_id", "dedup_key", "first_prompt", "messages"]
        )
    prompts = distinct_prompts(conv)
    saved = conv.height - prompts.height
    print(
        f"dedup: {conv.height} conversations, {prompts.height} distinct first prompts "
        f"({prompts['is_vision'].sum()} with images): {saved} criteria calls avoided "
        f"({saved / max(1, conv.height):.1%})"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--items", type=int, default=1000)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--conversations", type=int, default=5000)
    p.add_argument("--base-url", default=None)
    p.add_argument("--model", default="labeler-strong")
    p.add_argument("--api-key", default="test-key")
    p.add_argument("--skip-dedup", action="store_true")
    args = p.parse_args()
    throughput(args)
    if not args.skip_dedup:
        dedup(args)


if __name__ == "__main__":
    main()
