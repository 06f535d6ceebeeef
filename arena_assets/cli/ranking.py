"""`arena-assets leaderboard BATTLES --out FILE …`: a Bradley-Terry board from battles.

Only argparse is imported at module level: `arena-assets --help` builds every command's
parser, and numpy / polars / scipy are loaded when a board is actually fitted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# literal copies of arena_assets.ranking.options' tuples (a test keeps them equal), so that
# building the parser imports nothing heavy
CI_METHODS = ("sandwich", "bootstrap")
TIE_MODES = ("half", "drop_bothbad", "drop")
STYLE_NORMS = ("ratio", "ratio_plus_one")


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
        "clean_battle JSON with model_a, model_b, winner) and write the board as Parquet. "
        "Only models the battles can rate are ranked (the 'beat or tied' graph must be "
        "strongly connected); the others are listed with the reason.",
    )
    p.add_argument("battles", type=Path, help="battle file or folder of battle files")
    p.add_argument("--out", type=Path, required=True, help="output Parquet")
    p.add_argument(
        "--bootstrap", type=int, default=0, metavar="N", help="bootstrap rounds (default 0)"
    )
    p.add_argument(
        "--ci",
        choices=CI_METHODS,
        default=None,
        help="interval method (default: bootstrap when --bootstrap N > 0, else sandwich)",
    )
    p.add_argument("--level", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--style-control", action="store_true", help="control for length and markdown")
    p.add_argument(
        "--style-norm",
        choices=STYLE_NORMS,
        default="ratio",
        help="style feature (a-b)/(a+b), or FastChat's (a-b)/(a+b+1)",
    )
    p.add_argument("--category", default=None, help="keep battles of this category only")
    p.add_argument("--anchor", type=_anchor, default=None, metavar="MODEL=RATING")
    p.add_argument("--tie-mode", choices=TIE_MODES, default="half")
    p.add_argument("--min-battles", type=int, default=0, help="drop models with fewer battles")
    p.add_argument(
        "--winrates", type=Path, default=None, help="also write win-rate matrix (Parquet)"
    )
    p.add_argument("--coefficients", type=Path, default=None, help="style coefficients (Parquet)")
    p.add_argument("--top", type=int, default=20, help="rows printed (default 20)")
    p.set_defaults(func=run_leaderboard)


def run_leaderboard(args: argparse.Namespace) -> int:
    """Exit 0 with a board; 2 with one line on stderr when the input cannot give one."""
    from arena_assets.ranking.options import RankingInputError

    try:
        return _run(args)
    except (RankingInputError, FileNotFoundError) as exc:
        print(f"arena-assets leaderboard: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    import polars as pl

    from arena_assets.ranking.identify import LEFT_OUT_REASONS
    from arena_assets.ranking.io import read_battles
    from arena_assets.ranking.options import FitOptions, RankingInputError

    if args.bootstrap < 0:
        raise RankingInputError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    ci = args.ci or ("bootstrap" if args.bootstrap > 0 else "sandwich")
    options = FitOptions(
        anchor=args.anchor,
        tie_mode=args.tie_mode,
        min_battles=args.min_battles,
        ci=ci,
        level=args.level,
        bootstrap_rounds=args.bootstrap,
        seed=args.seed,
        style_norm=args.style_norm,
    )
    battles = read_battles(args.battles, category=args.category)
    if battles.height == 0:
        where = f" in category {args.category!r}" if args.category else ""
        raise RankingInputError(f"no battles in {args.battles}{where}")
    winrates = None
    if args.style_control:
        from arena_assets.ranking.style import fit_style_controlled

        board = fit_style_controlled(battles, options)
        table = board.table
        print(board.coefficients)
        if args.coefficients:
            board.coefficients.write_parquet(args.coefficients)
    else:
        from arena_assets.ranking.leaderboard import fit_bt

        board = fit_bt(battles, options)
        table, winrates = board.table, board.winrates
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
    if board.left_out:
        print(f"{len(board.left_out)} model(s) left out (no finite rating from these battles):")
        for model, reason in sorted(board.left_out.items(), key=lambda kv: (kv[1], kv[0])):
            print(f"  {model}: {reason} ({LEFT_OUT_REASONS[reason]})")
    missing = (board.meta or {}).get("bootstrap_missing_rounds") or {}
    if missing:
        print(
            "bootstrap rounds in which a model could not be rated (its interval uses the "
            "others): " + ", ".join(f"{m} {n}" for m, n in sorted(missing.items()))
        )
    return 0
