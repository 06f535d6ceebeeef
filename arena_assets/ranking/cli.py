"""`arena-assets leaderboard BATTLES --out FILE …`: a Bradley-Terry board from battles."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from arena_assets.ranking.aggregate import TIE_MODES
from arena_assets.ranking.io import read_battles
from arena_assets.ranking.leaderboard import CI_METHODS, fit_bt
from arena_assets.ranking.style import fit_style_controlled


def _anchor(text: str) -> tuple[str, float]:
    model, sep, rating = text.rpartition("=")
    if not sep or not model:
        raise argparse.ArgumentTypeError("expected MODEL=RATING")
    try:
        return model, float(rating)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"rating {rating!r} is not a number") from exc


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "leaderboard",
        help="Bradley-Terry leaderboard (ratings, intervals, rank bounds) from battles",
        description="Fit Bradley-Terry ratings to battles (Parquet, JSONL or FastChat "
        "clean_battle JSON with model_a, model_b, winner) and write the board as Parquet.",
    )
    p.add_argument("battles", type=Path, help="battle file or folder of battle files")
    p.add_argument("--out", type=Path, required=True, help="output Parquet")
    p.add_argument("--bootstrap", type=int, default=0, metavar="N", help="bootstrap rounds (default 0)")
    p.add_argument(
        "--ci",
        choices=CI_METHODS,
        default=None,
        help="interval method (default: bootstrap when --bootstrap N > 0, else sandwich)",
    )
    p.add_argument("--level", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--style-control", action="store_true", help="control for length and markdown")
    p.add_argument("--category", default=None, help="keep battles of this category only")
    p.add_argument("--anchor", type=_anchor, default=None, metavar="MODEL=RATING")
    p.add_argument("--tie-mode", choices=sorted(TIE_MODES), default="half")
    p.add_argument("--min-battles", type=int, default=0, help="drop models with fewer battles")
    p.add_argument("--winrates", type=Path, default=None, help="also write win-rate matrix (Parquet)")
    p.add_argument("--coefficients", type=Path, default=None, help="style coefficients (Parquet)")
    p.add_argument("--top", type=int, default=20, help="rows printed (default 20)")
    p.set_defaults(func=run_leaderboard)


def run_leaderboard(args: argparse.Namespace) -> int:
    battles = read_battles(args.battles, category=args.category)
    if battles.height == 0:
        print("no battles (after the category filter)", file=sys.stderr)
        return 1
    ci = args.ci or ("bootstrap" if args.bootstrap > 0 else "sandwich")
    common = dict(
        anchor=args.anchor,
        tie_mode=args.tie_mode,
        min_battles=args.min_battles,
        ci=ci,
        level=args.level,
        bootstrap_rounds=args.bootstrap,
        seed=args.seed,
    )
    winrates = None
    if args.style_control:
        board = fit_style_controlled(battles, **common)
        table = board.table
        print(board.coefficients)
        if args.coefficients:
            board.coefficients.write_parquet(args.coefficients)
    else:
        plain = fit_bt(battles, **common)
        table, winrates = plain.table, plain.winrates
    if args.category:
        table = table.with_columns(category=pl.lit(args.category))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.write_parquet(args.out)
    if args.winrates:
        if winrates is None:
            print("--winrates is written for the plain board only", file=sys.stderr)
        else:
            winrates.write_parquet(args.winrates)
    shown = ["model", "rating", "lower", "upper", "rank", "rank_ub", "battles"]
    if args.style_control:
        shown.append("rank_change")
    with pl.Config(tbl_rows=args.top, tbl_cols=len(shown), float_precision=1):
        print(table.select(shown).head(args.top))
    print(f"{table.height} models, CI {ci} at {args.level:g}; written to {args.out}")
    return 0
