"""`arena-assets judge-summary FILE`, `arena-assets bench-metrics BENCH HUMAN` and
`arena-assets judge-prompts`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "judge-summary",
        help="each model's score from a judgment file (Arena-Hard v0.1/v2, MT-Bench, grades)",
        description="Single-answer grades (MT-Bench, or any question_id/model/score file): mean "
        "over valid ratings, turns pooled (FastChat). Pairwise judgments: Arena-Hard-Auto's "
        "score against the baseline and its bootstrap interval, by the protocol version "
        "(v0.1: 95 %%, rows pooled; v2: 90 %%, per model, per question category).",
    )
    p.add_argument("file", type=Path, help="judgment JSONL (or folder, or our Parquet)")
    p.add_argument("--format", choices=("json", "csv"), default="json", dest="fmt")
    p.add_argument(
        "--protocol",
        choices=("arena-hard-v0.1", "arena-hard-v2"),
        default=None,
        help="pairwise: the anchor version (default: the file's own; ours: v0.1)",
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="pairwise: keep only the games against this baseline (v2 and MT-Bench "
        "pairwise records name theirs; v0.1 files do not: there it names it, "
        "gpt-4-0314 unless given)",
    )
    p.add_argument("--weight", type=int, default=3, help="weight of a strong verdict (default 3)")
    p.add_argument("--rounds", type=int, default=100, help="bootstrap rounds (default 100)")
    p.add_argument("--seed", type=int, default=42, help="bootstrap seed (default 42, the anchor's)")
    p.add_argument(
        "--bias",
        action="store_true",
        help="pairwise only: print the judge-bias report (JSON) instead",
    )
    p.set_defaults(func=run_judge_summary)

    e = subparsers.add_parser(
        "bench-export",
        help="a month's bench as Arena-Hard-Auto's files (question.jsonl, model_answer/, model_judgment/)",
        description="Writes the month's bench_prompts, model_answers and judgments from the lake "
        "in Arena-Hard-Auto's layout, with the fields of the protocol version (its show_result.py "
        "reads the folder as it is); judge-summary reads such a folder back.",
    )
    e.add_argument("--lake", required=True, help="the lake root (ARENA_LAKE_ROOT)")
    e.add_argument("--month", required=True, help="YYYY-MM")
    e.add_argument("--out", required=True, help="folder (or s3:// URL) to write")
    e.add_argument(
        "--protocol",
        choices=("arena-hard-v0.1", "arena-hard-v2"),
        default=None,
        help="layout version (default: the judgments' own)",
    )
    e.set_defaults(func=run_bench_export)

    j = subparsers.add_parser(
        "judge-prompts",
        help="the texts a bench judge receives under a protocol: their source and hash",
        description="Reads the judge's texts as the judgments asset would: the project's own "
        "wording (arena-assets-pairwise, -v2), or Arena-Hard-Auto's own (arena-hard-v0.1, "
        "arena-hard-v2) from an arena-hard-auto checkout, never imported or run. Prints the "
        "protocol, the files read, the SHA-256 recorded in each judgment row, and one "
        "request rendered per question category; exits 1 in one line when the texts cannot "
        "be read.",
    )
    j.add_argument(
        "--protocol",
        default=None,
        help="a judging protocol (default: ARENA_BENCH_PROTOCOL, else arena-assets-pairwise)",
    )
    j.add_argument(
        "--arena-hard-dir",
        default=None,
        help="your arena-hard-auto checkout (default: ARENA_ARENA_HARD_DIR)",
    )
    j.add_argument("--json", action="store_true", help="print the whole prompt set as JSON")
    j.set_defaults(func=run_judge_prompts)

    m = subparsers.add_parser(
        "bench-metrics",
        help="separability, agreement, Spearman, Kendall, Brier of a bench vs a human board",
        description="BENCH and HUMAN are score tables: bootstrap JSONL (model, score, lower, "
        "upper, results), leaderboard CSV (rating, rating_q025, rating_q975, variance) or "
        "Parquet leaderboard tables.",
    )
    m.add_argument("bench", type=Path)
    m.add_argument("human", type=Path)
    m.add_argument(
        "--map", type=Path, default=None, dest="name_map", help="JSON {human name: bench name}"
    )
    m.add_argument("--json", action="store_true", help="print one JSON object")
    m.set_defaults(func=run_bench_metrics)


def run_judge_summary(args: argparse.Namespace) -> int:
    from arena_assets.judging.readers import read_judgments
    from arena_assets.judging.summary import bias_report, pairwise_summary, single_summary

    answers = None
    try:
        if (args.file / "model_judgment").is_dir():  # a bench folder: answers give style control
            from arena_assets.judging.layout import read_layout

            _, answers, frame = read_layout(args.file, args.baseline, args.protocol)
            kind = "pairwise"
            if frame is None:
                raise ValueError(f"{args.file}: no judgment file under model_judgment/")
        else:
            kind, frame = read_judgments(args.file, baseline=args.baseline, protocol=args.protocol)
            if kind == "pairwise" and args.baseline and frame.height == 0:
                # the readers kept only the games against it: say which baselines there are
                _, every = read_judgments(args.file, protocol=args.protocol)
                raise ValueError(
                    f"no games against {args.baseline}: the file's baselines are "
                    f"{', '.join(sorted(set(every['baseline'].drop_nulls())))}"
                )
    except (ValueError, OSError, KeyError) as exc:
        print(f"judge-summary: {exc}", file=sys.stderr)
        return 1
    protocol, meta = None, {}
    if kind == "single":
        if args.bias:
            print("judge-summary: --bias needs pairwise judgments", file=sys.stderr)
            return 1
        table = single_summary(frame)
    else:
        if frame.height == 0:
            print("judge-summary: no games in the file", file=sys.stderr)
            return 1
        if args.bias:
            print(json.dumps(bias_report(frame), indent=2))
            return 0
        protocol = args.protocol or (
            "arena-hard-v2"
            if set(frame["category"].drop_nulls()) & {"hard_prompt", "creative_writing"}
            else "arena-hard-v0.1"
        )
        if answers is not None:
            from arena_assets.judging.metrics import bench_leaderboard

            table = bench_leaderboard(
                frame,
                answers,
                protocol=protocol,
                weight=args.weight,
                rounds=args.rounds,
                seed=args.seed,
                meta=meta,
            )
        else:
            table = pairwise_summary(
                frame, protocol=protocol, weight=args.weight, rounds=args.rounds, seed=args.seed
            )
    if args.fmt == "csv":
        sys.stdout.write(table.write_csv())
    else:
        # meta (a bench folder): models without a score, style control per category
        out = {"kind": kind, "protocol": protocol, "models": table.to_dicts()}
        print(json.dumps(out | ({"meta": meta} if meta else {}), indent=2))
    return 0


def run_bench_export(args: argparse.Namespace) -> int:
    from arena_assets.judging.layout import write_layout
    from arena_assets.release.write import bench_release_from_lake
    from arena_assets.storage import Lake

    release = bench_release_from_lake(Lake(args.lake, setting="--lake"), args.month)
    if release is None:
        print(f"bench-export: no bench_prompts for {args.month} in {args.lake}", file=sys.stderr)
        return 1
    paths = write_layout(
        args.out,
        release.prompts,
        release.answers,
        release.judgments,
        protocol=args.protocol or release.protocol,
        month=args.month,
        judge_prompts=release.judge_prompts,
    )
    print(f"{len(paths)} files ({args.protocol or release.protocol}) written under {args.out}")
    return 0


def run_judge_prompts(args: argparse.Namespace) -> int:
    from arena_assets.envfile import setting
    from arena_assets.judging.judge_prompts import judge_prompts

    protocol = args.protocol or setting("ARENA_BENCH_PROTOCOL", "") or "arena-assets-pairwise"
    folder = args.arena_hard_dir
    if folder is None:
        folder = setting("ARENA_ARENA_HARD_DIR", "")
    try:
        prompts = judge_prompts(protocol, folder)
    except ValueError as exc:
        print(f"judge-prompts: {exc}", file=sys.stderr)
        return 1
    if args.json:
        sys.stdout.write(prompts.to_json().decode() + "\n")
        return 0
    for key, value in prompts.describe().items():
        print(f"{key}: {value}")
    if prompts.baselines:
        print("baselines: " + ", ".join(f"{c}={m}" for c, m in prompts.baselines.items()))
    sample = ("<the question>", "<answer of side A>", "<answer of side B>")
    for category in prompts.systems:
        print(f"\n--- request, question category {category} ---")
        for message in prompts.messages(*sample, category):
            print(f"[{message['role']}]\n{message['content']}")
    if prompts.follow_up:
        print(f"\n--- after a reply without a label ---\n[user]\n{prompts.follow_up}")
    return 0


def run_bench_metrics(args: argparse.Namespace) -> int:
    from arena_assets.judging.metrics import bench_vs_human, read_name_map, read_score_table

    try:
        bench = read_score_table(args.bench)
        human = read_score_table(args.human)
        mapping = read_name_map(args.name_map) if args.name_map else None
        result = bench_vs_human(bench, human, mapping)
    except (ValueError, OSError) as exc:
        print(f"bench-metrics: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"models ({result['n_models']}): {', '.join(result['models'])}")
    for key in ("separability_bench", "separability_human", "agreement_with_confidence", "brier"):
        v = result[key]
        extra = ", ".join(f"{k}={x}" for k, x in v.items() if k != "value")
        print(f"{key}: {v['value']:.4f} ({extra})")
    print(f"spearman: {result['spearman']:.4f}")
    print(f"kendall: {result['kendall']:.4f}")
    return 0
