"""The client side of an LLM call, measured apart from the server (run by hand).

    .venv/bin/python benchmarks/bench_llm_client.py [--calls 3000] [--concurrency 64]
        [--latency 0.3] [--sessions N] [--embed-texts N]

A real endpoint costs the client only its own side of a call: building the request,
the ``openai`` client (request options, httpx, the response model), parsing the answer
and writing the cache. So the simulated arena runs here in ANOTHER process
(``arena-sim serve``), and this process's CPU is the client's. Prints:

1. per phase, one call at a time (thread CPU of the calling thread, median over the
   calls): request building (messages + cache key), the ``openai`` client's call and the
   reply's decoding (``llm.batch.post_chat``, what ``run_batch`` sends), parsing, cache
   write; the target is <= 1 ms CPU per call in all;
2. ``run_batch`` over ``--calls`` distinct criteria-v1 labelling requests at
   ``--concurrency``, latency 0 and ``--latency``: this process's CPU per call (threads,
   locks and the pool included) and the server process's CPU per call (from /proc);
   with latency, the share of the concurrency bound calls / (concurrency / latency)
   reached and how much of one core the client used;
3. with ``--embed-texts N`` (100,000 in the figures of docs/performance.md),
   ``embed_texts`` as ``prompt_embeddings`` calls it, over N distinct
   first prompts cut to 1,000 characters (64 a call) at ``--concurrency`` and
   ``--latency``: the client's and the server's CPU per call and the share of the bound
   (the server's vectors are the simulator's own work: a real endpoint's is elsewhere).

Load average printed beside the figures (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
from arena_assets.llm import (
    LLMRequest,
    LLMTask,
    ResponseCache,
    embed_texts,
    make_client,
    request_key,
    run_batch,
)
from arena_assets.llm.batch import chat_body, post_chat
from arena_assets.simulator import read_prompt_truth, simulate_months

CLI = str(Path(sys.executable).with_name("arena-assets"))
SIM = str(Path(sys.executable).with_name("arena-sim"))
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """user + system CPU seconds of a process (from /proc; threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start_server(truth_root: str, latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [SIM, "serve", "--port", "0", "--truth-root", truth_root, "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()  # "simulated arena at http://127.0.0.1:PORT/v1 ..."
    # then "truth read in S s": the month's prompts and battles, read in the server's
    # background; a batch timed before it shares the CPU with that read (a real endpoint
    # has none), as full_month.py also waits
    if not (read := proc.stdout.readline()).startswith("truth read"):
        proc.terminate()
        raise SystemExit(
            f"the simulated arena stopped before it had read its truth: {read.strip() or 'it exited'}"
        )
    return proc, line.split(" at ", 1)[1].split()[0]


def phases(task: LLMTask, texts: list[str], cache_dir: str) -> dict[str, float]:
    """Median thread-CPU microseconds of each phase of one call, one call at a time."""
    client = make_client(task)
    cache = ResponseCache(cache_dir, "phases")
    params = task.generation_params()
    out: dict[str, list[float]] = {"build": [], "openai": [], "parse": [], "cache": []}
    for text in texts:
        t0 = time.thread_time()
        messages = criteria_messages(text)
        key = request_key(task.model, messages, params, CRITERIA_VERSION)
        t1 = time.thread_time()
        data = post_chat(client, chat_body(task, messages))  # what run_batch sends
        t2 = time.thread_time()
        content = data["choices"][0]["message"]["content"]
        parse_criteria(content)
        t3 = time.thread_time()
        cache.put(
            key,
            model=task.model,
            prompt_version=CRITERIA_VERSION,
            content=content,
            prompt_tokens=data["usage"]["prompt_tokens"],
            completion_tokens=data["usage"]["completion_tokens"],
        )
        t4 = time.thread_time()
        for name, a, b in (
            ("build", t0, t1),
            ("openai", t1, t2),
            ("parse", t2, t3),
            ("cache", t3, t4),
        ):
            out[name].append((b - a) * 1e6)
    cache.flush()
    return {k: statistics.median(v) for k, v in out.items()}


def batch(task: LLMTask, texts: list[str], cache_dir: str, server_pid: int, tag: str) -> dict:
    reqs = [LLMRequest(str(i), criteria_messages(t), CRITERIA_VERSION) for i, t in enumerate(texts)]
    cache = ResponseCache(cache_dir, f"batch-{tag}")
    s0, c0, w0 = proc_cpu(server_pid), time.process_time(), time.perf_counter()
    _, report = run_batch(task, reqs, cache, parse_criteria)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {
        "calls": report.calls,
        "wall": wall,
        "client_ms": cpu / report.calls * 1e3,
        "server_ms": (proc_cpu(server_pid) - s0) / report.calls * 1e3,
        "client_core": cpu / wall,
        "ok": report.statuses["ok"],
    }


def embeddings(task: LLMTask, texts: list[str], cache_dir: str, server_pid: int) -> dict:
    s0, c0, w0 = proc_cpu(server_pid), time.process_time(), time.perf_counter()
    _, report = embed_texts(task, texts, ResponseCache(cache_dir, "embeddings", 1024))
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {
        "calls": report.calls,
        "wall": wall,
        "client_ms": cpu / report.calls * 1e3,
        "server_ms": (proc_cpu(server_pid) - s0) / report.calls * 1e3,
        "client_core": cpu / wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--sessions", type=int, default=0, help="simulated sessions (default: enough)")
    ap.add_argument("--phase-calls", type=int, default=300)
    ap.add_argument(
        "--embed-texts", type=int, default=0, help="texts of the embeddings batch (0: none)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_llm_client_") as tmp:
        raw = f"{tmp}/raw"
        need = args.calls * 2 + args.phase_calls
        # distinct prompts the simulator wrote (as in a real month, every one is in its
        # truth; ~0.7 distinct first prompts per session)
        simulate_months(
            raw,
            ["2024-06"],
            max(args.sessions, int(need * 1.6), int(args.embed_texts * 1.6)),
            seed=7,
        )
        texts = read_prompt_truth(raw, "2024-06")["text"].unique(maintain_order=True).to_list()
        if len(texts) < max(need, args.embed_texts):
            raise SystemExit(
                f"only {len(texts)} distinct prompts for {need} calls and {args.embed_texts} "
                "texts to embed: more --sessions"
            )
        to_embed = list(dict.fromkeys(t[:1000] for t in texts))[
            : args.embed_texts
        ]  # as prompt_embeddings cuts
        texts = texts[:need]
        print(
            f"load average {os.getloadavg()[0]:.1f}; {args.calls} calls per batch, "
            f"concurrency {args.concurrency}; server in its own process"
        )
        for latency in (0.0, args.latency):
            proc, url = start_server(raw, latency)
            try:
                task = LLMTask(
                    model="sim-labeler-large",
                    base_url=url,
                    max_concurrency=args.concurrency,
                    timeout=30,
                )
                if latency == 0.0:
                    ph = phases(task, texts[-args.phase_calls :], f"{tmp}/cache")
                    print(
                        "one call at a time, thread CPU per call (median, µs): "
                        + ", ".join(f"{k} {v:.0f}" for k, v in ph.items())
                        + f"; total {sum(ph.values()) / 1e3:.2f} ms (target <= 1 ms)"
                    )
                part = texts[: args.calls] if latency == 0.0 else texts[args.calls : 2 * args.calls]
                r = batch(task, part, f"{tmp}/cache", proc.pid, f"{latency}")
                if latency and to_embed:
                    e = embeddings(
                        LLMTask(
                            model="sim-embed-small",
                            base_url=url,
                            max_concurrency=args.concurrency,
                            timeout=30,
                        ),
                        to_embed,
                        f"{tmp}/cache",
                        proc.pid,
                    )
                    bound = e["calls"] * latency / args.concurrency
                    embedded = (
                        f"embed_texts latency {latency:.2f} s: {len(to_embed):,} texts, {e['calls']} calls "
                        f"in {e['wall']:.1f} s = {bound / e['wall']:.1%} of the bound ({bound:.1f} s); "
                        f"client {e['client_ms']:.2f} ms CPU per call ({e['client_core']:.0%} of a core), "
                        f"server {e['server_ms']:.2f} ms CPU per call"
                    )
            finally:
                proc.terminate()
                proc.wait()
            line = (
                f"run_batch latency {latency:.2f} s: {r['calls']} calls ({r['ok']} ok) in "
                f"{r['wall']:.1f} s = {r['calls'] / r['wall']:.0f} calls/s; client "
                f"{r['client_ms']:.2f} ms CPU per call ({r['client_core']:.0%} of a core), "
                f"server {r['server_ms']:.2f} ms CPU per call"
            )
            if latency > 0:
                bound = args.concurrency / latency
                line += f"; {r['calls'] / r['wall'] / bound:.1%} of the bound {bound:.0f}/s"
            print(line, flush=True)
            if latency and to_embed:
                print(embedded, flush=True)
        # the demo's and the tests' set-up: the simulated arena inside the client's process
        from arena_assets.simulator import start_endpoint

        with start_endpoint(seed=7, truth_root=raw) as ep:
            task = LLMTask(model="sim-labeler-large", base_url=ep.base_url, max_concurrency=8)
            part = (
                texts[2 * args.calls : 2 * args.calls + args.phase_calls]
                or texts[: args.phase_calls]
            )
            reqs = [
                LLMRequest(str(i), criteria_messages(t), CRITERIA_VERSION)
                for i, t in enumerate(part)
            ]
            ep.truth_read.wait()  # its truth read before the clock starts (not a call's cost)
            ep.reset_counts()
            c0, w0 = time.process_time(), time.perf_counter()
            _, report = run_batch(
                task, reqs, ResponseCache(f"{tmp}/cache", "in-process"), parse_criteria
            )
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            print(
                f"in-process simulated arena (the demo's set-up), concurrency 8: {report.calls} "
                f"calls in {wall:.1f} s, {cpu / report.calls * 1e3:.2f} ms CPU per call, of which "
                f"the server {ep.cpu_seconds / report.calls * 1e3:.2f} ms "
                f"({ep.cpu_seconds / cpu:.0%})"
            )
        print(f"load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
