"""`arena-assets judge-agreement`, `arena-assets over-refusal` and `arena-assets copilot-board`:
the evaluators' and the completions' month steps on a lake, without Dagster."""

from __future__ import annotations

import argparse
import json
import os
import sys

from arena_assets.cli.common import add_simulated_args, simulated_url


def _endpoint_args(p: argparse.ArgumentParser, what: str, default_model: str = "") -> None:
    p.add_argument(
        f"--{what}-base-url",
        default="",
        help=f"OpenAI-compatible /v1 root of the {what} "
        "endpoint ('simulated' = the simulated arena at --sim-base-url)",
    )
    p.add_argument(f"--{what}-model", default=default_model)
    p.add_argument(
        f"--{what}-api-key-env", default="OPENAI_API_KEY", help="variable holding its key"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    a = subparsers.add_parser(
        "judge-agreement",
        help="judges, reward models and baselines against a month's human votes",
        description="PPE's and MT-Bench's agreement metrics on a stratified sample of the month's "
        "battles in LAKE (battles, conversations, topic_labels); writes judge_human_agreement and "
        "judge_human_verdicts for the month and prints the overall rows with the yardsticks.",
    )
    a.add_argument("--lake", required=True, help="lake root (folder or s3:// URL)")
    a.add_argument("--month", required=True)
    a.add_argument(
        "--judges",
        default="longer,markdown",
        help="comma-separated: LLM judge models, reward:<model>, longer, markdown",
    )
    a.add_argument("--size", type=int, default=300, help="battles in the sample")
    a.add_argument("--seed", type=int, default=0)
    add_simulated_args(a)
    a.add_argument("--cache", default="", help="LLM cache root (default <lake>/_llm_cache)")
    a.add_argument("--json", action="store_true", help="print every row as JSON")
    _endpoint_args(a, "judge")
    _endpoint_args(a, "reward")
    a.set_defaults(func=run_agreement)

    o = subparsers.add_parser(
        "over-refusal",
        help="per-model refusal on benign-but-sensitive vs toxic prompts of a month",
        description="OR-Bench's question on the month's traffic in LAKE (conversations, topic_labels, "
        "arena_leaderboard): writes over_refusal and over_refusal_rates and prints the board.",
    )
    o.add_argument("--lake", required=True)
    o.add_argument("--month", required=True)
    add_simulated_args(o)
    o.add_argument("--cache", default="")
    o.add_argument(
        "--threshold", type=float, default=0.2, help="over-refuser: lower bound above this"
    )
    _endpoint_args(o, "labeler", "sim-labeler-large")
    o.set_defaults(func=run_over_refusal)

    b = subparsers.add_parser(
        "or-bench",
        help="OR-Bench's prompt sets answered by candidate models: rejection rates",
        description="Every candidate answers every prompt of the OR-Bench CSV files (prompt, category; "
        "80k / hard-1k over-refusal sets, toxic set). Each answer is judged by OR-Bench's own "
        "3-class check prompt (direct answer, direct refusal, indirect refusal), read from your "
        "OR-Bench checkout (--orbench-dir, else ARENA_ORBENCH_DIR), by the project's binary "
        "refusal judge, and by OR-Bench's keyword rule of the candidate's model family; both "
        "judges go to --judge-*. Writes the answers' verdicts and prints the rates side by side.",
    )
    b.add_argument(
        "files", nargs="+", help="or-bench-80k.csv, or-bench-hard-1k.csv, or-bench-toxic.csv"
    )
    b.add_argument(
        "--orbench-dir",
        default=None,
        help="your OR-Bench checkout (its response_checker/check_response.py holds the check "
        "prompt, read as data); default ARENA_ORBENCH_DIR; empty: OR-Bench's judge is not run",
    )
    b.add_argument(
        "--keyword-families",
        default="",
        help="JSON object candidate -> OR-Bench keyword family (gpt-3.5, gpt-4, claude, gemini, "
        "mistral, open, qwen) where the endpoint's model name does not say it",
    )
    b.add_argument("--candidates", required=True, help="JSON/YAML list as ARENA_CANDIDATES")
    b.add_argument("--limit", type=int, default=0, help="first N prompts of each file (0 = all)")
    b.add_argument("--out", required=True, help="Parquet of per-answer verdicts")
    b.add_argument("--cache", default="./data/lake/_llm_cache")
    add_simulated_args(b)
    _endpoint_args(b, "judge", "sim-labeler-large")
    b.set_defaults(func=run_orbench)

    c = subparsers.add_parser(
        "copilot-board",
        help="Copilot Arena completion battles and their leaderboard for a month",
        description="Reads ROOT/<MONTH>/ (Copilot Arena log records or its release CSV), writes "
        "completion_battles, completion_rejects, copilot_leaderboard (+ JSON) and "
        "copilot_user_boards into LAKE.",
    )
    c.add_argument("root", help="folder with one sub-folder per month")
    c.add_argument("--month", required=True)
    c.add_argument("--lake", required=True)
    c.add_argument(
        "--salt",
        default=None,
        help="user-id salt (default: ARENA_USER_SALT)",
    )
    c.add_argument("--bootstrap", type=int, default=200)
    c.add_argument(
        "--fit",
        choices=("copilot-arena", "bt"),
        default=None,
        help="copilot-arena: Copilot Arena's own penalised fit; bt: Bradley-Terry "
        "(default: ARENA_COPILOT_FIT, else copilot-arena)",
    )
    c.set_defaults(func=run_copilot_board)


def _task(args: argparse.Namespace, what: str, **extra):
    from arena_assets.llm import LLMTask
    from arena_assets.llm.endpoints import SIMULATED

    base = getattr(args, f"{what}_base_url").strip()
    if not base:
        return None
    if base == SIMULATED:
        base = simulated_url(args.sim_base_url, args.sim_seed, f"--{what}-base-url")
    key = os.environ.get(getattr(args, f"{what}_api_key_env"), "") or "sk-no-key"
    return LLMTask(
        model=getattr(args, f"{what}_model") or "unset", base_url=base, api_key=key, **extra
    )


def _cache_of(args: argparse.Namespace):
    from arena_assets.llm import ResponseCache

    root = args.cache or f"{args.lake.rstrip('/')}/_llm_cache"
    return lambda ns: ResponseCache(root, ns)


def run_agreement(args: argparse.Namespace) -> int:
    import polars as pl

    from arena_assets.evaluators.judges import parse_judges
    from arena_assets.pipeline.evaluators import judge_human_agreement_month
    from arena_assets.storage import Lake

    try:
        specs = parse_judges(args.judges)
        step = judge_human_agreement_month(
            Lake(args.lake, setting="--lake"),
            args.month,
            specs,
            size=args.size,
            seed=args.seed,
            judge_task=_task(args, "judge", max_tokens=512),
            reward_task=_task(args, "reward"),
            cache_of=_cache_of(args),
        )
    except (ValueError, FileNotFoundError) as exc:
        print(f"judge-agreement: {exc}", file=sys.stderr)
        return 2
    rows = step.table.filter(pl.col("slice") == "overall")
    if args.json:
        print(
            json.dumps({"rows": step.table.to_dicts(), "yardsticks": step.yardsticks}, default=str)
        )
        return 0
    cols = [
        "judge",
        "judged",
        "accuracy",
        "accuracy_lower",
        "accuracy_upper",
        "agreement_without_ties",
        "kappa",
        "flip_rate",
        "length_preference",
        "spearman",
    ]
    with pl.Config(tbl_rows=50, tbl_cols=20, tbl_width_chars=200):
        print(rows.select(cols).with_columns(pl.col(pl.Float64).round(3)))
        print(pl.DataFrame(step.yardsticks).with_columns(pl.col(pl.Float64).round(3)))
    return 0


def run_over_refusal(args: argparse.Namespace) -> int:
    import polars as pl

    from arena_assets.evaluators.refusal import RefusalOptions
    from arena_assets.pipeline.evaluators import over_refusal_month
    from arena_assets.storage import Lake

    try:
        task = _task(args, "labeler", max_tokens=64)
    except ValueError as exc:
        print(f"over-refusal: {exc}", file=sys.stderr)
        return 2
    if task is None:
        print("over-refusal: give --labeler-base-url (the risk labeller)", file=sys.stderr)
        return 2
    try:
        step = over_refusal_month(
            Lake(args.lake, setting="--lake"),
            args.month,
            task,
            cache=_cache_of(args)("over_refusal/risk"),
            options=RefusalOptions(threshold=args.threshold),
        )
    except (ValueError, FileNotFoundError) as exc:
        print(f"over-refusal: {exc}", file=sys.stderr)
        return 2
    with pl.Config(tbl_rows=80, tbl_cols=20, tbl_width_chars=200):
        print(
            step.board.select(
                "rank",
                "model",
                "benign_sensitive_n",
                "benign_sensitive_rate",
                "benign_sensitive_lower",
                "toxic_rate",
                "over_refuser",
            ).with_columns(pl.col(pl.Float64).round(3))
        )
    print(
        json.dumps(
            {"classes": step.classes, "no_refusal_board": step.relation, "plot": step.urls[2]}
        )
    )
    return 0


def run_copilot_board(args: argparse.Namespace) -> int:
    import polars as pl

    from arena_assets.completions.board import CopilotBoardOptions
    from arena_assets.envfile import setting
    from arena_assets.pipeline.completions import (
        completion_battles_month,
        copilot_leaderboard_month,
        copilot_user_boards_month,
    )
    from arena_assets.storage import Lake

    if args.salt is None:  # read here: `--help` shows no secret of this machine
        args.salt = os.environ.get("ARENA_USER_SALT", "")
    if not args.salt:
        print(
            "copilot-board: give --salt or set ARENA_USER_SALT (user ids are stored salted)",
            file=sys.stderr,
        )
        return 2
    lake = Lake(args.lake)
    step = completion_battles_month(lake, args.root, args.month, salt=args.salt)
    print(
        f"{step.records_read} records: {step.battles.height} pairs, {step.rejects.height} rejected "
        f"({step.listing.describe()})"
    )
    fit = args.fit or setting("ARENA_COPILOT_FIT", "").strip() or "copilot-arena"
    try:
        options = CopilotBoardOptions(bootstrap_rounds=args.bootstrap, fit=fit)
    except ValueError as exc:
        print(f"copilot-board: {exc}", file=sys.stderr)
        return 2
    board = copilot_leaderboard_month(lake, args.month, options)
    users = copilot_user_boards_month(lake, args.month, options)
    with pl.Config(tbl_rows=80, tbl_cols=12, tbl_width_chars=200):
        print(
            board.board.filter(pl.col("board").is_in(["overall", "latency_controlled"]))
            .select(
                "board", "rank", "model", "rating", "lower", "upper", "battles", "median_latency"
            )
            .with_columns(pl.col(pl.Float64).round(1))
        )
    print(
        json.dumps(
            {
                "latency_control": board.latency,
                "figures": board.figures,
                "user_boards": {"users": users.users, "lambdas": users.lambdas()},
                "site_data": board.urls[1],
            },
            default=str,
        )
    )
    return 0


def run_orbench(args: argparse.Namespace) -> int:
    import dataclasses

    import polars as pl

    from arena_assets.evaluators.orbench import orbench_answers, orbench_rates, read_orbench
    from arena_assets.evaluators.orbench_check import KEYWORD_RULES, CheckPrompt
    from arena_assets.judging.answers import parse_candidates
    from arena_assets.llm import ResponseCache
    from arena_assets.llm.endpoints import SIMULATED
    from arena_assets.pipeline.bench import candidate_task

    # read when the command runs: --help shows no path of this machine
    orbench_dir = (
        args.orbench_dir
        if args.orbench_dir is not None
        else os.environ.get("ARENA_ORBENCH_DIR", "")
    ).strip()
    try:
        judge = _task(args, "judge", max_tokens=64)
        check = CheckPrompt.from_checkout(orbench_dir) if orbench_dir else None
        families = json.loads(args.keyword_families) if args.keyword_families.strip() else {}
        if not isinstance(families, dict) or set(families.values()) - set(KEYWORD_RULES):
            raise ValueError(
                f"--keyword-families: a JSON object of candidate -> one of {sorted(KEYWORD_RULES)}"
            )
        prompts = pl.concat(
            [
                read_orbench(f).head(args.limit) if args.limit else read_orbench(f)
                for f in args.files
            ]
        )
        cands = []
        for c in parse_candidates(args.candidates):
            if c.base_url.strip() == SIMULATED:
                c = dataclasses.replace(
                    c, base_url=simulated_url(args.sim_base_url, args.sim_seed, "--candidates")
                )
            cands.append((c.name, candidate_task(c)))
        if judge is None:
            raise ValueError("give --judge-base-url (the refusal judges' endpoint)")
    except (ValueError, OSError) as exc:
        print(f"or-bench: {exc}", file=sys.stderr)
        return 2
    # OR-Bench's check as its script calls it: temperature 0, no token cap of its own (a
    # generous one here: the prompt asks for a brief reason before the class), read once
    check_judge = dataclasses.replace(judge, temperature=0.0, max_tokens=1024, parse_retries=0)
    answers = orbench_answers(
        prompts,
        cands,
        judge,
        lambda ns: ResponseCache(args.cache, ns),
        check=check,
        check_judge=check_judge,
        families=families,
    )
    answers.write_parquet(args.out)
    if check is None:
        print(
            "or-bench: OR-Bench's own 3-class judge not run (give --orbench-dir or set "
            "ARENA_ORBENCH_DIR to your OR-Bench checkout); the project's judge and the "
            "keyword rule only",
            file=sys.stderr,
        )
    else:
        print(f"or-bench: OR-Bench's check prompt from {check.source} ({check.version})")
    with pl.Config(tbl_rows=80, tbl_cols=20, tbl_width_chars=240):
        print(orbench_rates(answers).with_columns(pl.col(pl.Float64).round(3)))
    return 0
