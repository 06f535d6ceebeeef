"""Ingest parse throughput: lines/s of ``parse_month`` on one month of native events.

Usage: .venv/bin/python benchmarks/bench_ingest_parse.py [--conversations 50000] [--repeats 3]
       [--workers 1] [--files 4] [--gzip]

The month is synthesized here (seeded): each conversation is logged as it grows (one chat
event per turn, re-logging the whole state) and a third of them end in a vote whose event
carries both states, as the platform logs them; texts are 100-1,500 characters. With
``--simulator`` the month comes from ``arena_assets.simulator.api.simulate_months`` instead
(--conversations then counts its sessions; one file per day, registry checked).
Prints the median of the repeats, lines/s and conversations/s.
"""

from __future__ import annotations

import argparse
import gzip
import random
import statistics
import tempfile
import time
from pathlib import Path

import orjson

from arena_assets.ingest import list_month_files, load_model_registry, parse_month

MONTH = "2024-05"
WORDS = (
    "model",
    "answer",
    "python",
    "the",
    "of",
    "explain",
    "why",
    "data",
    "arena",
    "vote",
    "quickly",
    "function",
    "list",
    "image",
    "describe",
    "write",
    "a",
    "poem",
    "about",
    "cats",
)


def _text(rng: random.Random, lo: int, hi: int) -> str:
    n = rng.randint(lo, hi) // 6
    return " ".join(rng.choice(WORDS) for _ in range(n))


def synth_month(conversations: int, seed: int) -> list[bytes]:
    """Native event lines for one month; ~3 lines per conversation."""
    rng = random.Random(seed)
    models = [f"model-{i}" for i in range(20)]
    start = 1714521600.0  # 2024-05-01T00:00:00Z
    lines: list[bytes] = []
    for c in range(conversations):
        ip = f"10.0.{rng.randint(0, 40)}.{rng.randint(0, 255)}"
        ts = start + rng.random() * 29 * 86400
        battle = rng.random() < 0.35
        pair = rng.sample(models, 2)
        sides = pair if battle else pair[:1]
        msgs: list[list[dict]] = [[] for _ in sides]
        turns = rng.choice((1, 1, 1, 2, 3))
        for t in range(turns):
            prompt = _text(rng, 40, 600)
            image = [f"{rng.getrandbits(256):064x}"] if rng.random() < 0.05 else None
            for history in msgs:
                user = {"role": "user", "content": prompt}
                if image:
                    user["images"] = image
                history += [user, {"role": "assistant", "content": _text(rng, 100, 1500)}]
            ts += rng.random() * 60
            for side, history in enumerate(msgs):
                lines.append(
                    orjson.dumps(
                        {
                            "event_id": f"e-{c}-{t}-{side}",
                            "type": "chat",
                            "tstamp": ts,
                            "ip": ip,
                            "anony": battle,
                            "state": {
                                "conv_id": f"c-{c}-{side}",
                                "model_name": sides[side],
                                "offset": 0,
                                "messages": history,
                            },
                        }
                    )
                )
        if battle:
            lines.append(
                orjson.dumps(
                    {
                        "event_id": f"e-{c}-vote",
                        "type": rng.choice(("leftvote", "rightvote", "tievote", "bothbad_vote")),
                        "tstamp": ts + 5,
                        "ip": ip,
                        "anony": True,
                        "models": ["", ""],
                        "states": [
                            {
                                "conv_id": f"c-{c}-{s}",
                                "model_name": sides[s],
                                "offset": 0,
                                "messages": msgs[s],
                            }
                            for s in range(2)
                        ],
                    }
                )
            )
    return lines


def write_month(root: Path, lines: list[bytes], files: int, use_gzip: bool) -> None:
    folder = root / MONTH
    folder.mkdir(parents=True)
    per = -(-len(lines) // files)
    for i in range(files):
        data = b"\n".join(lines[i * per : (i + 1) * per]) + b"\n"
        name = folder / f"events-{i:02d}.jsonl"
        if use_gzip:
            Path(f"{name}.gz").write_bytes(gzip.compress(data, compresslevel=1))
        else:
            name.write_bytes(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--simulator", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        known = None
        if args.simulator:
            from arena_assets.simulator.api import simulate_months

            simulate_months(root, [MONTH], args.conversations, seed=args.seed, compress=args.gzip)
            known = load_model_registry(str(root))
            args.files = len(list_month_files(str(root), MONTH))
        else:
            lines = synth_month(args.conversations, args.seed)
            write_month(root, lines, args.files, args.gzip)
            del lines
        size_mb = sum(f.stat().st_size for f in (root / MONTH).iterdir()) / 1e6
        times, cpu = [], []
        for _ in range(args.repeats):
            c0 = time.process_time()
            t0 = time.perf_counter()
            parsed = parse_month(
                str(root), MONTH, salt="bench", known_models=known, workers=args.workers
            )
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        assert parsed.lines_read == parsed.raw_logs.height + parsed.rejects.height
        med = statistics.median(times)
        source = "simulator" if args.simulator else "synthetic"
        print(
            f"{source}: lines={parsed.lines_read:,} ({size_mb:.0f} MB on disk{' gz' if args.gzip else ''}) "
            f"accepted={parsed.raw_logs.height:,} rejected={parsed.rejects.height:,} "
            f"workers={args.workers} files={args.files}"
        )
        print(
            f"median {med:.2f}s over {args.repeats} (all: {', '.join(f'{t:.2f}' for t in times)})"
        )
        unit = "sessions" if args.simulator else "conversations"  # the simulator counts sessions
        print(
            f"{parsed.lines_read / med:,.0f} lines/s  {args.conversations / med:,.0f} {unit}/s"
            f"  {size_mb / med:.0f} MB/s"
        )
        if args.workers <= 1:  # CPU time is immune to other processes sharing the cores
            med_cpu = statistics.median(cpu)
            print(
                f"CPU: median {med_cpu:.2f}s -> {parsed.lines_read / med_cpu:,.0f} lines/s per core, "
                f"{args.conversations / med_cpu:,.0f} {unit}/s per core"
            )


if __name__ == "__main__":
    main()
