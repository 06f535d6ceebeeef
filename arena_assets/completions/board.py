"""Copilot Arena's leaderboard: its own fit of the accepted completions (or Bradley-Terry),
with intervals, the same board with latency controlled, and every user's own board.

The fit (``fit``): ``copilot-arena`` (the default) is Copilot Arena's own, the
L2-penalised logistic regression of its ``server/src/scores.py``
(``completions.anchor_fit``), so the ratings are the numbers its code gives for the same
pairs; ``bt`` is the unpenalised Bradley-Terry fit of the arena boards (``ranking``), which
spreads ratings further (the anchor's penalty pulls them towards 1000). Either way the
interval is ours: a percentile bootstrap (Copilot Arena's scores have none). Per-user
boards (``copilot_user_boards``) are always the anchor's: every user with 20 or more
accepted pairs, their battles mixed with everyone's by the anchor's weight λ.

Battles: the pairs where the user accepted one completion (the accepted side wins);
pairs shown and left unaccepted are counted (``acceptance_rate``) but, as in Copilot
Arena's own board, not fitted unless ``include_unaccepted`` (then as ties). Acceptance
rates (per model and overall) count the server's records only (``source_format``
``copilot_log``): the public release holds accepted pairs alone, and mixing its rows in
would push every rate towards 1.

Latency, as Copilot Arena handles it (blog of 2024-11 and the paper, Chi et al. 2025,
arXiv 2502.09328): both completions are shown together, once the slower has arrived, so a
user never sees one side faster than the other; what latency does is make the user wait
(the pair's maximum), which lowers the chance that anything is accepted. Copilot Arena
therefore samples pairs to keep that wait short and reports each model's median latency
beside its score; it does not adjust scores for latency. We report the same
(``median_latency``, and ``median_pair_latency``: what users waited when the model was
shown) and the acceptance rate by the pair's wait (``figures.acceptance_by_wait``).

The ``latency_controlled`` board is **exploratory**: a Bradley-Terry fit with one
covariate, the normalised latency difference ``(latency_a − latency_b) / (latency_a +
latency_b)``, fitted as style control fits answer length (``ranking.style``). It asks
whether the side that took longer still loses acceptances (it should not, since both are
shown at once: its coefficient should be near 0 with an interval around 0); it is not a
published Copilot Arena figure. Battles without both latencies (the release) enter the
plain board only.

Position: the top completion is accepted with Tab and the bottom with Shift-Tab; the
order is random, so position does not bias ratings, and the top's share of acceptances is
reported as ``top_share`` (the position effect).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from arena_assets.completions.schema import COPILOT_BOARD_SCHEMA, COPILOT_USER_BOARD_SCHEMA
from arena_assets.ranking import FitOptions, RankingInputError, fit_bt, fit_style_controlled
from arena_assets.ranking.newton import NoMaximumLikelihood

LATENCY = "latency"


@dataclass(frozen=True)
class CopilotBoardOptions:
    bootstrap_rounds: int = 200
    level: float = 0.95
    seed: int = 0
    min_battles: int = 20  # per model on a board
    min_file_type_battles: int = 300  # a language board needs this many accepted pairs
    include_unaccepted: bool = False
    fit: str = "copilot-arena"  # or "bt" (see the module docstring)

    def __post_init__(self) -> None:
        if self.fit not in FITS:
            raise ValueError(
                f"ARENA_COPILOT_FIT must be one of {', '.join(FITS)}, got {self.fit!r}"
            )


COPILOT_FIT, BT_FIT = "copilot-arena", "bt"
FITS = (COPILOT_FIT, BT_FIT)


@dataclass
class CopilotBoard:
    board: pl.DataFrame  # COPILOT_BOARD_SCHEMA rows
    latency: dict = field(default_factory=dict)  # coefficient and its interval
    figures: dict = field(default_factory=dict)  # acceptance, top share, pairs per board
    left_out: dict = field(default_factory=dict)


def _fit_options(options: CopilotBoardOptions) -> FitOptions:
    return FitOptions(
        ci="bootstrap",
        bootstrap_rounds=options.bootstrap_rounds,
        level=options.level,
        seed=options.seed,
        min_battles=options.min_battles,
    )


LOG = "copilot_log"  # source_format of rows built from the server's records
WAIT_BINS = (0.5, 1.0, 2.0, 4.0)  # seconds: edges of the acceptance-by-wait table


def _logged(battles: pl.DataFrame) -> pl.DataFrame:
    """The rows an acceptance rate may count (see the module docstring)."""
    return (
        battles.filter(pl.col("source_format") == LOG)
        if "source_format" in battles.columns
        else battles
    )


def _model_facts(battles: pl.DataFrame) -> pl.DataFrame:
    logged = pl.col("source_format") == LOG if "source_format" in battles.columns else pl.lit(True)
    frame = battles.with_columns(wait=pl.max_horizontal("latency_a", "latency_b"), logged=logged)
    sides = pl.concat(
        [
            frame.select(
                "wait",
                "logged",
                model=f"model_{s}",
                latency=f"latency_{s}",
                accepted=pl.col("winner") == f"model_{s}",
            )
            for s in "ab"
        ]
    )
    return sides.group_by("model").agg(
        acceptance_rate=pl.col("accepted").filter(pl.col("logged")).mean(),
        median_latency=pl.col("latency").median(),
        median_pair_latency=pl.col("wait").median(),
    )


def acceptance_by_wait(battles: pl.DataFrame) -> list[dict]:
    """Share of pairs accepted by the pair's wait (its slower completion), server rows with
    both latencies: what latency costs in Copilot Arena's interface."""
    timed = (
        _logged(battles)
        .drop_nulls(["latency_a", "latency_b"])
        .with_columns(wait=pl.max_horizontal("latency_a", "latency_b"))
    )
    edges = [0.0, *WAIT_BINS, float("inf")]
    out = []
    for lo, hi in itertools.pairwise(edges):
        part = timed.filter((pl.col("wait") >= lo) & (pl.col("wait") < hi))
        if part.height:
            out.append(
                {
                    "wait_from_s": lo,
                    "wait_to_s": None if hi == float("inf") else hi,
                    "pairs": part.height,
                    "acceptance_rate": float(part["accepted"].mean()),
                }
            )
    return out


def _table(board: pl.DataFrame, name: str, facts: pl.DataFrame) -> pl.DataFrame:
    return board.join(facts, on="model", how="left").with_columns(board=pl.lit(name))


def _board(battles: pl.DataFrame, options: CopilotBoardOptions) -> tuple[pl.DataFrame, dict]:
    """(table, models left out) of one board by the configured fit."""
    if options.fit == COPILOT_FIT:
        from arena_assets.completions.anchor_fit import fit_board
        from arena_assets.ranking.newton import single_threaded_blas

        with single_threaded_blas():
            return fit_board(
                battles, options.min_battles, options.bootstrap_rounds, options.level, options.seed
            )
    board = fit_bt(battles, _fit_options(options))
    return board.table, board.left_out


_NO_BOARD = (RankingInputError, NoMaximumLikelihood, ValueError)


def copilot_leaderboard(
    battles: pl.DataFrame, month: str, options: CopilotBoardOptions = CopilotBoardOptions()
) -> CopilotBoard:
    """The boards of ``battles`` (all completion battles up to ``month``)."""
    facts = _model_facts(battles)
    fitted = battles if options.include_unaccepted else battles.filter(pl.col("accepted"))
    accepted = battles.filter(pl.col("accepted"))
    logged = _logged(battles)
    figures = {
        "pairs": battles.height,
        "accepted_pairs": accepted.height,
        "logged_pairs": logged.height,  # server records: the base of acceptance rates
        "acceptance_rate": float(logged["accepted"].mean()) if logged.height else None,
        "acceptance_by_wait": acceptance_by_wait(battles),
        "top_share": float((accepted["winner"] == "model_a").mean()) if accepted.height else None,
    }
    figures["fit"] = options.fit
    opts = _fit_options(options)
    tables, left_out, latency = [], {}, {}
    try:
        overall, left_out["overall"] = _board(fitted, options)
    except _NO_BOARD as exc:
        figures["board_error"] = str(exc)[:200]
        return CopilotBoard(pl.DataFrame(schema=COPILOT_BOARD_SCHEMA), {}, figures, {})
    tables.append(_table(overall, "overall", facts))
    timed = fitted.filter(pl.col("latency_a").is_not_null() & pl.col("latency_b").is_not_null())
    try:
        # exploratory, Bradley-Terry beside the unadjusted Bradley-Terry rating, whatever the fit
        plain = fit_bt(fitted, opts)
        styled = fit_style_controlled(timed, opts, style_features=(LATENCY,), style_norm="ratio")
        tables.append(
            _table(
                styled.table.join(
                    plain.table.select("model", rating_unadjusted="rating"), on="model", how="left"
                ),
                "latency_controlled",
                facts,
            )
        )
        coef = styled.coefficients.row(0, named=True) if styled.coefficients.height else {}
        latency = {
            k: float(coef[k]) for k in ("coef", "lower", "upper", "coef_rating") if k in coef
        }
        latency["pairs"] = timed.height
        latency["status"] = "exploratory"  # not a Copilot Arena figure: see the module docstring
        left_out["latency_controlled"] = styled.left_out or {}
    except (*_NO_BOARD, np.linalg.LinAlgError) as exc:
        latency = {"error": str(exc)[:200], "pairs": timed.height}
    for (ftype,), part in sorted(
        fitted.drop_nulls("file_type").group_by("file_type"), key=lambda kv: kv[0][0]
    ):
        if part.height < options.min_file_type_battles:
            continue
        try:
            lang, lang_left_out = _board(part, options)
        except _NO_BOARD:
            continue
        tables.append(_table(lang, f"file_type:{ftype}", facts))
        left_out[f"file_type:{ftype}"] = lang_left_out
    frame = pl.concat(
        [
            t.with_columns(month=pl.lit(month)).select(
                [
                    pl.col(c).cast(ty)
                    if c in t.columns or c == "month"
                    else pl.lit(None, ty).alias(c)
                    for c, ty in COPILOT_BOARD_SCHEMA.items()
                ]
            )
            for t in tables
        ]
    )
    figures["boards"] = dict(frame.group_by("board").len().sort("board").iter_rows())
    return CopilotBoard(frame, latency, figures, left_out)


def copilot_user_boards(battles: pl.DataFrame, options: CopilotBoardOptions) -> pl.DataFrame:
    """Every user's board as Copilot Arena's ``get_scores`` computes it: the accepted pairs
    (``model_a, model_b, winner, accepted, user_hash, tstamp, pair_id``) of the models the
    overall board rates (``min_battles``), each user with 20 or more of them and both
    sides accepted at least once. One row per (user, model): ``user_hash, model, rating,
    rank, votes, lam, user_battles``."""
    from arena_assets.completions.anchor_fit import board_models, user_boards
    from arena_assets.ranking.newton import single_threaded_blas

    accepted = battles.filter(pl.col("accepted"))
    models, _ = board_models(accepted, options.min_battles)
    kept = accepted.filter(pl.col("model_a").is_in(models) & pl.col("model_b").is_in(models))
    with single_threaded_blas():
        boards = user_boards(kept, kept, models) if len(models) > 1 else None
    if boards is None or boards.height == 0:
        return pl.DataFrame(schema=COPILOT_USER_BOARD_SCHEMA)
    return boards.with_columns(
        rank=pl.col("rating").rank("min", descending=True).over("user_hash").cast(pl.Int64)
    ).sort("user_hash", "rank", "model")


def board_data(board: pl.DataFrame, latency: dict, figures: dict, month: str) -> dict:
    """The board as plain JSON for a site page (``leaderboard_site`` or any static page):
    one list of rows per board, each row the model's rating, interval, rank, battles,
    acceptance rate and median latency, plus the latency coefficient and the figures."""

    def rows(name: str) -> list[dict]:
        part = board.filter(pl.col("board") == name).sort("rank", "model")
        # 8 decimals: a page rounds again (a rate shown to 0.1 %) and must not round twice
        return [
            {
                k: (round(v, 8) if isinstance(v, float) else v)
                for k, v in r.items()
                if k not in ("month", "board")
            }
            for r in part.iter_rows(named=True)
        ]

    return {
        "month": month,
        "title": "Copilot Arena: code completions",
        "boards": {name: rows(name) for name in sorted(set(board["board"]))},
        "latency_control": latency,
        "figures": figures,
        "notes": {
            "acceptance_rate": "server records only (the release holds accepted pairs alone)",
            "latency_controlled": "exploratory: both completions are shown together, so "
            "Copilot Arena reports median latency and does not "
            "adjust scores for it",
        },
    }
