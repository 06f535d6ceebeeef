"""FastChat's battle cleaning (``fastchat/serve/monitor/clean_battle_data.py``, fschat 0.2.36)
beside our ingest + clean, on the same simulated month.

    .venv/bin/python benchmarks/compare_fastchat_clean.py --sessions 50000

FastChat runs in its own venv (``benchmarks/.fastchat-venv``, created here when missing;
fschat is not a dependency of this project) and is called unchanged, as a library:
``clean_battle_data(log_files, [])``. Its reader expects FastChat's own log layout, which
the simulator's native format nearly is; the differences, bridged by a copy of the month
written once under benchmarks/out/ (timed apart, not counted on either side):

- messages: FastChat logs ``[role, text]`` pairs, the simulator OpenAI ``{role, content}``
  objects (both formats occur on the real platform; our ingest reads both);
- FastChat reads ``ip`` and ``offset`` unconditionally: events that name the user by
  ``user_id`` only get it copied to ``ip``, a missing ``offset`` becomes 0, a missing
  ``models`` becomes the names (or ``""`` for anonymous battles), ISO timestamps become
  epoch seconds;
- junk lines (the simulator plants ~0.4 %) are dropped: FastChat's reader stops at the
  first line that is not JSON (our ingest rejects them with a reason instead).

Scope differs and the table says so: FastChat keeps vote events only (~15 % of lines) and
outputs battles; we validate every event and output conversations (and later battles).
FastChat's language detection needs polyglot + pyicu + pycld2; when those do not install,
``detect_language`` is replaced by a constant and the run is marked so (its figure is then
an upper bound on its speed). Prints wall and CPU seconds (process tree) for both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
VENV = HERE / ".fastchat-venv"
OUT = HERE / "out"
MONTH = "2024-05"
FSCHAT = "fschat==0.2.36"
VOTES = ("leftvote", "rightvote", "tievote", "bothbad_vote")


def tree_cpu() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def ensure_venv() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", FSCHAT, "pandas", "plotly", "pytz", "tqdm"],
            check=True,
        )
        # optional: FastChat's language detection; pyicu needs ICU headers to build
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "polyglot", "pycld2", "pyicu", "morfessor"],
            check=False,
        )
    return python


def _fastchat_state(state: dict) -> dict | None:
    msgs = state.get("messages")
    if type(msgs) is not list or not msgs or not isinstance(state.get("conv_id"), str):
        return None
    pairs = []
    for m in msgs:
        if type(m) is dict and isinstance(m.get("role"), str):
            pairs.append([m["role"], m.get("content")])
        elif type(m) is list and len(m) == 2:
            pairs.append(m)
        else:
            return None
    offset = state.get("offset") or 0
    if type(offset) is not int or offset >= len(pairs):
        return None
    return {**state, "messages": pairs, "offset": offset}


def to_fastchat_line(line: bytes) -> dict | None:
    """One native event in FastChat's layout, or None when FastChat's reader would fail on it."""
    import datetime as dt

    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if type(obj) is not dict or obj.get("type") not in ("chat", *VOTES):
        return None
    user = obj.get("ip") or obj.get("user_id")
    if not isinstance(user, str):
        return None
    obj["ip"] = user
    ts = obj.get("tstamp")
    if isinstance(ts, str):
        try:
            when = dt.datetime.fromisoformat(ts)
        except ValueError:
            return None
        obj["tstamp"] = (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()
    elif type(ts) not in (int, float):
        return None
    if obj["type"] == "chat":
        state = _fastchat_state(obj.get("state")) if type(obj.get("state")) is dict else None
        if state is None:
            return None
        obj["state"] = state
        return obj
    states = obj.get("states")
    if type(states) is not list or len(states) != 2 or not all(type(s) is dict for s in states):
        return None
    converted = [_fastchat_state(s) for s in states]
    if None in converted or not all(isinstance(s.get("model_name"), str) for s in converted):
        return None
    obj["states"] = converted
    models = obj.get("models")
    if type(models) is not list or len(models) != 2:
        obj["models"] = ["", ""] if obj.get("anony") else [s["model_name"] for s in converted]
    return obj


def convert_month(raw_month: Path, target: Path) -> tuple[int, int]:
    target.mkdir(parents=True, exist_ok=True)
    kept = dropped = 0
    for path in sorted(raw_month.glob("*.jsonl")):
        with open(path, "rb") as src, open(target / path.name, "w") as dst:
            for line in src:
                obj = to_fastchat_line(line)
                if obj is None:
                    dropped += 1
                    continue
                kept += 1
                dst.write(json.dumps(obj, ensure_ascii=False) + "\n")
    return kept, dropped


def fastchat_child(folder: str) -> None:
    """Runs inside the FastChat venv: the cleaning, timed; prints one JSON line."""
    import contextlib
    import io

    from fastchat.serve.monitor import clean_battle_data as fc

    language = "polyglot"
    try:
        fc.detect_language("Hello, how are you?")
    except ImportError:
        fc.detect_language = lambda text: "unknown"
        language = "replaced by a constant (polyglot not installed)"
    files = sorted(str(p) for p in Path(folder).glob("*.jsonl"))
    c0, t0 = tree_cpu(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        battles = fc.clean_battle_data(files, [])
    wall, cpu = time.perf_counter() - t0, tree_cpu() - c0
    print(json.dumps({"battles": len(battles), "wall_s": wall, "cpu_s": cpu, "language": language}))


def ours(raw_root: Path, workers: int) -> dict:
    from arena_assets.ingest import load_model_registry
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.pipeline.ingest import ingest_month
    from arena_assets.storage import Lake

    with tempfile.TemporaryDirectory(prefix="arena-fc-") as tmp:
        lake = Lake(tmp)
        c0, t0 = tree_cpu(), time.perf_counter()
        ingest = ingest_month(
            lake,
            str(raw_root),
            MONTH,
            salt="bench",
            known_models=load_model_registry(str(raw_root)),
            workers=workers,
        )
        clean = clean_month(lake, MONTH)
        wall, cpu = time.perf_counter() - t0, tree_cpu() - c0
        votes = lake.read("raw_logs", MONTH, columns=["type"]).filter(_is_vote()).height
    return {
        "lines": ingest.lines_read,
        "conversations": clean.conversations,
        "votes": votes,
        "wall_s": wall,
        "cpu_s": cpu,
    }


def _is_vote():
    import polars as pl

    return pl.col("type").is_in(list(VOTES))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fastchat-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fastchat_child:
        fastchat_child(args.fastchat_child)
        return

    from arena_assets.simulator import simulate_months

    raw = OUT / f"raw-{args.sessions}"
    if not (raw / MONTH).is_dir():
        simulate_months(str(raw), [MONTH], args.sessions, seed=1)
    converted = OUT / f"fastchat-{args.sessions}" / MONTH
    if not converted.is_dir():
        t = time.perf_counter()
        kept, dropped = convert_month(raw / MONTH, converted)
        print(
            f"converted to FastChat's layout: {kept:,} lines kept, {dropped:,} dropped "
            f"({time.perf_counter() - t:.1f}s, not counted)"
        )
    python = ensure_venv()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        [str(python), __file__, "--fastchat-child", str(converted)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    fc = json.loads(proc.stdout.strip().splitlines()[-1])
    us = ours(raw, args.workers)
    print(
        f"FastChat clean_battle_data: {fc['battles']:,} battles in {fc['wall_s']:.2f}s wall, "
        f"{fc['cpu_s']:.2f} CPU-s -> {fc['battles'] / fc['cpu_s']:,.0f} battles per CPU-s; "
        f"language detection: {fc['language']}"
    )
    print(
        f"ours, ingest + clean: {us['lines']:,} lines ({us['votes']:,} votes) -> "
        f"{us['conversations']:,} conversations in {us['wall_s']:.2f}s wall, {us['cpu_s']:.2f} CPU-s "
        f"-> {us['conversations'] / us['cpu_s']:,.0f} conversations and "
        f"{us['votes'] / us['cpu_s']:,.0f} votes per CPU-s"
    )


if __name__ == "__main__":
    main()
