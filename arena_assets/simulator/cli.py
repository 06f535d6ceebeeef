"""`arena-sim`: the simulated arena's own program, beside the product.

``arena-sim simulate`` writes months of raw platform logs (and the hidden truth they were
drawn from); ``arena-sim serve`` answers the OpenAI-compatible API on that same world. The
product meets both as it meets a real platform: raw files on disk, an endpoint by URL.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    sim = subparsers.add_parser(
        "simulate", help="generate months of raw arena logs with hidden truth"
    )
    sim.add_argument("--out", required=True, help="raw root folder (months go under it)")
    sim.add_argument("--months", nargs="+", metavar="YYYY-MM", help="months to generate")
    sim.add_argument("--start", metavar="YYYY-MM", help="first month (with --n-months)")
    sim.add_argument("--n-months", type=int, default=1)
    sim.add_argument(
        "--per-month", type=int, default=3000, help="sessions (chats or battles) per month"
    )
    sim.add_argument("--seed", type=int, default=7, help="world seed")
    sim.add_argument("--gzip", action="store_true", help="write .jsonl.gz")
    sim.add_argument("--config", help="JSON object of WorldConfig overrides")
    sim.add_argument(
        "--completions",
        type=int,
        default=0,
        metavar="N",
        help="also N Copilot Arena completion pairs a month (under OUT/_completions)",
    )
    sim.set_defaults(func=_simulate)

    srv = subparsers.add_parser(
        "serve", help="serve the simulated world over an OpenAI-compatible API"
    )
    srv.add_argument("--world-seed", type=int, default=7)
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8089)
    srv.add_argument("--config", help="JSON object of WorldConfig overrides")
    srv.add_argument(
        "--truth-root",
        help="simulated raw root whose _truth/prompts labels the "
        "labelling and embedding calls use (else the prompt part parser alone)",
    )
    srv.add_argument("--embedding-dim", type=int, default=128, help="default embedding size")
    srv.add_argument(
        "--latency", type=float, default=0.0, help="seconds from a /v1 call's arrival to its reply"
    )
    for fault in (
        "rate_429",
        "rate_500",
        "rate_slow",
        "rate_garbage",
        "rate_empty",
        "rate_truncated",
    ):
        srv.add_argument(f"--{fault.replace('_', '-')}", type=float, default=0.0)
    srv.add_argument(
        "--prompt-token-scale",
        type=float,
        default=1.0,
        help="bill prompt tokens at this multiple of the plan's approximate count, as an "
        "endpoint whose model has another tokenizer (try the plan's calibration)",
    )
    srv.add_argument(
        "--batch-delay",
        type=float,
        default=0.0,
        help="seconds from a Batch-API job's creation to its end (its lines answered first)",
    )
    srv.add_argument(
        "--batch-expire",
        type=float,
        default=0.0,
        help="share of Batch-API jobs that expire, half their lines answered",
    )
    srv.add_argument(
        "--batch-error-rate",
        type=float,
        default=0.0,
        help="share of a job's lines answered with an error (in its error file)",
    )
    srv.add_argument(
        "--batch-missing-rate",
        type=float,
        default=0.0,
        help="share of a job's lines in neither its output nor its error file",
    )
    srv.set_defaults(func=_serve)


def _config(raw: str | None):
    from arena_assets.simulator.config import WorldConfig

    return WorldConfig(**json.loads(raw)) if raw else WorldConfig()


def _simulate(args: argparse.Namespace) -> int:
    from arena_assets.simulator.api import month_range, simulate_months

    if args.months:
        months = args.months
    elif args.start:
        months = month_range(args.start, args.n_months)
    else:
        print("give --months or --start")
        return 2
    summary = simulate_months(
        args.out,
        months,
        args.per_month,
        args.seed,
        _config(args.config),
        compress=args.gzip,
        completions_per_month=args.completions,
    )
    for m in summary.months:
        print(
            f"{m.month}: {m.sessions} sessions, {m.conversations} conversations, {m.events} events, "
            f"{m.votes} votes, {m.malformed} malformed lines, {m.files} files, "
            f"{m.bytes / 1e6:.1f} MB in {m.seconds:.1f} s"
        )
    return 0


def _serve(args: argparse.Namespace) -> int:
    import signal

    from arena_assets.simulator.endpoint import ArenaEndpoint, Faults

    # a server stops on SIGTERM and Ctrl-C whatever its parent left: a process that ran
    # Dagster maps SIGTERM to its SIGINT handler, SIG_IGN in a pytest-xdist worker, and an
    # ignored signal is inherited through exec (the demo's child arena, a test's server)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from arena_assets.simulator.shared import world_config
    from arena_assets.simulator.truth import TRUTH_DIR
    from arena_assets.simulator.world import World

    def world() -> World:
        # without --config, the world the truth root's logs were simulated with (its
        # world.json, when it has this seed), read at the first request: the arena may start
        # before the logs are written; else the default world
        config = _config(args.config) if args.config else None
        if config is None and args.truth_root:
            config = world_config(args.truth_root, args.world_seed)
        return World.build(config or _config(None), args.world_seed)

    # logs already written: the world now, and the truth read before the first request
    ready = args.truth_root and (Path(args.truth_root) / TRUTH_DIR / "world.json").is_file()

    faults = Faults(
        rate_429=args.rate_429,
        rate_500=args.rate_500,
        rate_slow=args.rate_slow,
        rate_garbage=args.rate_garbage,
        rate_empty=args.rate_empty,
        rate_truncated=args.rate_truncated,
        latency=args.latency,
        prompt_token_scale=args.prompt_token_scale,
        batch_delay=args.batch_delay,
        batch_expire=args.batch_expire,
        batch_error_rate=args.batch_error_rate,
        batch_missing_rate=args.batch_missing_rate,
    )
    with ArenaEndpoint(
        world() if ready else world,
        host=args.host,
        port=args.port,
        faults=faults,
        truth_root=args.truth_root,
        embedding_dim=args.embedding_dim,
    ) as ep:
        # flushed: a parent reads this line to learn the port (cli/arena_child.py)
        print(
            f"simulated arena at {ep.base_url} (world seed {args.world_seed}); Ctrl-C stops",
            flush=True,
        )
        try:
            if args.truth_root:
                # a second line once the truth is read: a benchmark that times its first
                # batch waits for it (a production month's truth takes seconds, and the first
                # wave of requests would wait on it and be counted as the client's)
                started = time.perf_counter()
                ep.truth_read.wait()
                print(f"truth read in {time.perf_counter() - started:.1f} s", flush=True)
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


def _parser_and_commands() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog="arena-sim",
        description="The simulated arena: raw platform logs with a hidden truth, and an "
        "OpenAI-compatible endpoint on the same world.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    register(sub)
    return parser, dict(sub.choices)


def build_parser() -> argparse.ArgumentParser:
    return _parser_and_commands()[0]


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by name (the command reference)."""
    return _parser_and_commands()[1]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
