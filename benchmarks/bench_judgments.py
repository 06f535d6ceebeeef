"""Judging throughput: N prompts x 2 games x M candidates against a baseline at a simulated latency.

    .venv/bin/python benchmarks/bench_judgments.py [--prompts 500] [--models 5] \
        [--latency 0.2] [--concurrency 32] [--repeats 1]

The simulated arena runs as its own process (``arena-sim serve --port 0``, as a
real endpoint would). Candidate answers are written first without latency (not timed);
then the latency is switched on (POST /_faults) and ``judgments_month`` judges every game
with a fresh cache. Ideal time = games x latency / concurrency; prints the median measured
time and its ratio to the ideal (target <= 1.2).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena_assets.bench.schema import BENCH_PROMPTS, CRITERIA  # noqa: E402
from arena_assets.llm import LLMTask  # noqa: E402
from arena_assets.pipeline.bench import judgments_month, model_answers_month  # noqa: E402
from arena_assets.simulator.world import World  # noqa: E402
from arena_assets.storage import Lake  # noqa: E402

MONTH = "2024-01"


def _faults(base_url: str, latency: float) -> None:
    req = urllib.request.Request(
        base_url.removesuffix("/v1") + "/_faults",
        method="POST",
        data=json.dumps({"latency": latency}).encode(),
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(req, timeout=10).read()


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--prompts", type=int, default=500)
    p.add_argument("--models", type=int, default=5, help="candidates besides the baseline")
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--repeats", type=int, default=1)
    args = p.parse_args()

    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena_assets.simulator.cli",
            "serve",
            "--port",
            "0",
            "--world-seed",
            "7",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        base_url = re.search(r"(http://\S+/v1)", line).group(1)
        names = sorted(World.build(seed=7).model_names)[: args.models + 1]
        root = Path(tempfile.mkdtemp(prefix="bench-judgments-"))
        lake = Lake(str(root / "lake"))
        prompts = pl.DataFrame(
            {
                "bench_version": "bench",
                "bench_kind": "text",
                "prompt_id": [f"q{i:04d}" for i in range(args.prompts)],
                "prompt": [
                    f"Question {i}: write a function that sorts {i} records by date and explain it."
                    for i in range(args.prompts)
                ],
                "language": "en",
                "category": "coding",
                "cluster_id": 0,
                "cluster_mean_quality": 6.0,
                "quality": 6,
                "text_hash": [f"h{i}" for i in range(args.prompts)],
                **dict.fromkeys(CRITERIA, True),
            }
        ).select([pl.col(c).cast(t) for c, t in BENCH_PROMPTS.items()])
        lake.write("bench_prompts", MONTH, prompts)
        task = lambda m, **kw: LLMTask(
            model=m,
            base_url=base_url,
            api_key="sim",
            max_concurrency=args.concurrency,
            **kw,
        )
        model_answers_month(
            lake, MONTH, [(n, task(n)) for n in names], cache_root=str(root / "cache")
        )
        _faults(base_url, args.latency)
        games = args.prompts * 2 * args.models
        ideal = games * args.latency / args.concurrency
        times = []
        for r in range(args.repeats):
            started = time.perf_counter()
            step = judgments_month(
                lake,
                MONTH,
                [("sim-judge", task("sim-judge", max_tokens=512))],
                names[0],
                cache_root=str(root / f"judge-cache-{r}"),
            )
            times.append(time.perf_counter() - started)
            assert step.judgments.height == games and int(step.judgments["parsed"].sum()) == games
        med = statistics.median(times)
        print(
            f"{args.prompts} prompts x 2 games x {args.models} candidates = {games} games at "
            f"{args.latency * 1000:.0f} ms, concurrency {args.concurrency}: median {med:.1f} s "
            f"(runs {[round(t, 1) for t in times]}), ideal {ideal:.1f} s, ratio {med / ideal:.2f} "
            f"(target <= 1.2)"
        )
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
