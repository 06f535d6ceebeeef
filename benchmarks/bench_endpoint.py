"""Throughput of the simulated arena endpoint for labelling and embedding calls.

    .venv/bin/python benchmarks/bench_endpoint.py [--calls 400] [--concurrency 16] [--latency 0.2]

Simulates a small month, starts the endpoint in process with its prompt truth, and sends
``criteria-v1`` labelling calls and embedding calls through the `openai` client from a
thread pool. Prints calls/s and, with a simulated latency, the share of the ideal rate
concurrency / latency that was reached (the endpoint must not be what limits a client).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import openai

from arena_assets.simulator import read_prompt_truth, simulate_months, start_endpoint
from arena_assets.simulator.endpoint import Faults


def run(ep, texts: list[str], concurrency: int, kind: str) -> float:
    client = openai.OpenAI(base_url=ep.base_url, api_key="sim", max_retries=0, timeout=30)

    def one(text: str) -> None:
        if kind == "label":
            client.chat.completions.create(
                model="sim-labeler-large",
                messages=[
                    {"role": "system", "content": "task: criteria-v1"},
                    {"role": "user", "content": f"<prompt>{text}</prompt>"},
                ],
            )
        else:
            client.embeddings.create(model="sim-embed-large", input=[text])

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, texts))
    return len(texts) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    out = tempfile.mkdtemp(prefix="bench_ep_")
    try:
        simulate_months(out, ["2024-06"], 3000, seed=7)
        texts = (
            read_prompt_truth(out, "2024-06")["text"]
            .unique(maintain_order=True)
            .to_list()[: args.calls]
        )
        ep = start_endpoint(seed=7, truth_root=out)
        try:
            for latency in (0.0, args.latency):
                ep.set_faults(Faults(latency=latency))
                for kind in ("label", "embed"):
                    rate = statistics.median(
                        run(ep, texts, args.concurrency, kind) for _ in range(args.repeats)
                    )
                    line = (
                        f"{kind:5} latency={latency:.2f}s concurrency={args.concurrency:3} "
                        f"{rate:8.1f} calls/s (median of {args.repeats})"
                    )
                    if latency > 0:
                        line += f"  {rate / (args.concurrency / latency):5.1%} of ideal {args.concurrency / latency:.0f}/s"
                    print(line, flush=True)
        finally:
            ep.stop()
    finally:
        shutil.rmtree(out)


if __name__ == "__main__":
    main()
