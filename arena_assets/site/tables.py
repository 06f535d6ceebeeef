"""The tables of a month's site, as LMArena's leaderboard shows them (FastChat
``monitor.py``: ``get_arena_table`` and ``recompute_final_ranking``), from the boards.

Rank (UB) = 1 + the number of shown models whose lower bound is above this model's upper
bound, recomputed over the models a view shows: hiding the deprecated models changes the
ranks of the others, so every rank-like cell is computed twice (deprecated hidden, the
default; and shown). Beside it, on the overall board, the model's Rank (UB) on the
style-controlled board; on every other board the difference to its overall rank (both
recomputed over the models the two boards share, so the difference is about the category,
not about who is missing). Models under the vote minimum are hidden and listed; every
other model the data cannot rank is a row saying why, never a number.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from arena_assets.ranking.leaderboard import rank_upper_bounds
from arena_assets.site.matrices import PairCounts

HIDDEN_REASONS = ("under_min_battles", "no_battles")


@dataclass(frozen=True)
class ModelInfo:
    """What the model registry says about a model (every field optional)."""

    organization: str | None = None
    license: str | None = None
    knowledge_cutoff: str | None = None
    deprecated: bool = False
    link: str | None = None


@dataclass
class Board:
    """One board of a month: the ranked models (``model, rating, lower, upper`` and
    ``battles``, null where unknown), the models left out with their reason, and the
    board's battles counted per pair (None for a published board without battles)."""

    key: str  # the category: overall, coding, language:en ... (style boards share it)
    ranked: pl.DataFrame
    left_out: dict[str, str] = field(default_factory=dict)
    pairs: PairCounts | None = None
    style: bool = False

    def ratings(self) -> dict[str, float]:
        return dict(zip(self.ranked["model"].to_list(), self.ranked["rating"].to_list()))

    def votes(self, model: str) -> int | None:
        if self.pairs is not None and model in self.pairs.models:
            return int(self.pairs.battles()[self.pairs.models.index(model)])
        row = self.ranked.filter(pl.col("model") == model)
        return None if row.is_empty() or row["battles"][0] is None else int(row["battles"][0])


def ranks_over(board: pl.DataFrame, models: set[str]) -> dict[str, int]:
    """Rank (UB) of each of ``models`` among themselves on ``board``."""
    sub = board.filter(pl.col("model").is_in(sorted(models)))
    if sub.is_empty():
        return {}
    ranks = rank_upper_bounds(sub["lower"].to_numpy(), sub["upper"].to_numpy())
    return dict(zip(sub["model"].to_list(), ranks.tolist()))


def _deltas(board: Board, baseline: Board, shown: set[str]) -> dict[str, int]:
    """Overall rank minus this board's rank, both over the shown models the two share
    (positive = the model does better in this category)."""
    common = shown & set(baseline.ranked["model"].to_list())
    here = ranks_over(board.ranked, common)
    there = ranks_over(baseline.ranked, common)
    return {m: there[m] - here[m] for m in here}


TABLE_SCHEMA = {
    "model": pl.String,
    "status": pl.String,
    "reason": pl.String,
    "deprecated": pl.Boolean,
    "rating": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
    "votes": pl.Int64,
    "rank": pl.Int64,
    "rank_all": pl.Int64,
    "second": pl.Int64,
    "second_all": pl.Int64,
    "organization": pl.String,
    "license": pl.String,
    "knowledge_cutoff": pl.String,
}


@dataclass
class BoardTable:
    """A board as a page shows it; ``second`` is "style" (overall: Rank (StyleCtrl)),
    "delta" (against the overall board) or None."""

    board: Board
    rows: pl.DataFrame  # TABLE_SCHEMA, ranked rows first in rank order, then unranked
    hidden: list[tuple[str, int | None]]  # under the vote minimum: (model, votes)
    second: str | None


def board_table(
    board: Board,
    *,
    deprecated: set[str],
    registry: dict[str, ModelInfo],
    style_twin: Board | None = None,
    baseline: Board | None = None,
) -> BoardTable:
    """The rows of ``board`` for both views (deprecated hidden / shown).

    ``style_twin``: the style-controlled board of the same category, for the overall
    board's Rank (StyleCtrl) column; ``baseline``: the board the delta is taken against
    (the overall board of the same variant). At most one of the two is used."""
    ranked = board.ranked.sort(["rating", "model"], descending=[True, False])
    models = ranked["model"].to_list()
    all_shown = set(models)
    default_shown = all_shown - deprecated
    rank_default = ranks_over(ranked, default_shown)
    rank_all = ranks_over(ranked, all_shown)
    second, second_kind = ({}, {}), None
    if style_twin is not None:
        second_kind = "style"
        second = tuple(
            ranks_over(style_twin.ranked, shown & set(style_twin.ranked["model"]))
            for shown in (default_shown, all_shown)
        )
    elif baseline is not None:
        second_kind = "delta"
        second = (_deltas(board, baseline, default_shown), _deltas(board, baseline, all_shown))
    rows = []
    for r in ranked.iter_rows(named=True):
        m = r["model"]
        rows.append(
            _row(
                m,
                "ranked",
                None,
                m in deprecated,
                r,
                board,
                registry,
                rank_default.get(m),
                rank_all[m],
                second[0].get(m),
                second[1].get(m),
            )
        )
    hidden = []
    unranked = []
    for m, reason in board.left_out.items():
        if reason in HIDDEN_REASONS:
            hidden.append((m, board.votes(m)))
        else:
            unranked.append(
                _row(
                    m,
                    "unranked",
                    reason,
                    m in deprecated,
                    None,
                    board,
                    registry,
                    None,
                    None,
                    None,
                    None,
                )
            )
    rows.sort(key=lambda r: (r["rank_all"], -r["rating"], r["model"]))
    unranked.sort(key=lambda r: (-(r["votes"] or 0), r["model"]))
    hidden.sort(key=lambda h: (-(h[1] or 0), h[0]))
    return BoardTable(
        board, pl.DataFrame(rows + unranked, schema=TABLE_SCHEMA), hidden, second_kind
    )


def _row(
    model, status, reason, is_deprecated, r, board, registry, rank, rank_all, second, second_all
) -> dict:
    info = registry.get(model, ModelInfo())
    votes = board.votes(model)
    return {
        "model": model,
        "status": status,
        "reason": reason,
        "deprecated": is_deprecated,
        "rating": r["rating"] if r else None,
        "lower": r["lower"] if r else None,
        "upper": r["upper"] if r else None,
        "votes": votes,
        "rank": None if is_deprecated else rank,
        "rank_all": rank_all,
        "second": None if is_deprecated else second,
        "second_all": second_all,
        "organization": info.organization,
        "license": info.license,
        "knowledge_cutoff": info.knowledge_cutoff,
    }


def top_models(table: BoardTable, n: int) -> list[str]:
    """The first ``n`` ranked models of the default view, best first (what the plots show)."""
    shown = table.rows.filter((pl.col("status") == "ranked") & ~pl.col("deprecated"))
    return (
        shown.sort(["rank", "rating", "model"], descending=[False, True, False])["model"]
        .head(n)
        .to_list()
    )


@dataclass
class Movers:
    up: list[tuple[str, int, int]]  # (model, previous rank, rank)
    down: list[tuple[str, int, int]]
    new: list[str]  # on this month's board, not on the previous one
    retired: list[str]  # votes last month, none this month


def movers(
    current: pl.DataFrame,
    previous: pl.DataFrame | None,
    *,
    month_votes: dict[str, int],
    previous_votes: dict[str, int],
    top: int = 5,
) -> Movers:
    """Rank (UB) among every ranked model (deprecated included) this month against the
    previous month's overall board (``model, lower, upper``)."""
    now = ranks_over(current, set(current["model"].to_list()))
    if previous is None or previous.is_empty():
        return Movers([], [], sorted(now), [])
    before = ranks_over(previous, set(previous["model"].to_list()))
    moves = [(m, before[m], now[m]) for m in sorted(now) if m in before and before[m] != now[m]]
    up = sorted((x for x in moves if x[2] < x[1]), key=lambda x: (x[2] - x[1], x[0]))[:top]
    down = sorted((x for x in moves if x[2] > x[1]), key=lambda x: (x[1] - x[2], x[0]))[:top]
    new = sorted(m for m in now if m not in before)
    retired = sorted(m for m, n in previous_votes.items() if n > 0 and not month_votes.get(m))
    return Movers(up, down, new, retired)


def category_ranks(tables: dict[str, BoardTable]) -> dict[str, list[dict]]:
    """Every model's row on every plain board it appears on (ranked or not), in one pass:
    ``rank`` of the default view, or among every model for a deprecated one."""
    out: dict[str, list[dict]] = {}
    for key, table in tables.items():
        if table.board.style:
            continue
        for r in table.rows.iter_rows(named=True):
            use_all = r["deprecated"]
            out.setdefault(r["model"], []).append(
                {
                    "board": key,
                    "status": r["status"],
                    "reason": r["reason"],
                    "rank": r["rank_all"] if use_all else r["rank"],
                    "rating": r["rating"],
                    "lower": r["lower"],
                    "upper": r["upper"],
                    "votes": r["votes"],
                    "delta": (r["second_all"] if use_all else r["second"])
                    if table.second == "delta"
                    else None,
                }
            )
    return out


@dataclass
class VoteLines:
    """Vote lines of the raw files as ingest saw them: ``read`` vote events it accepted
    (from ``raw_logs``, or the battles' own count where that partition is gone, e.g. past
    its retention: ``source`` says which; None: unknown, the battles' count is used) and
    ``rejected`` lines it turned away that were votes (``raw_rejects``)."""

    read: int | None = None
    rejected: int = 0
    source: str = "raw_logs"


def data_card(
    cells_upto: pl.DataFrame,
    cells_month: pl.DataFrame,
    overall: Board,
    *,
    used: int | None = None,
    lines_upto: VoteLines | None = None,
    lines_month: VoteLines | None = None,
) -> dict:
    """Votes in = ingest rejects + votes on the overall board + votes filtered (per filter)
    + kept votes the board cannot use, up to the month and in the month, every term counted
    on its own, so the sum is a check, not a definition:

    - votes in: the vote lines ingest read (accepted + rejected); the battles' own count
      where ``raw_logs`` is gone;
    - shown: kept votes with a winner whose two models the board ranks; up to the month it
      must also equal ``used``, the votes the leaderboard says it fitted;
    - kept off board: kept votes with a winner and a model the board left out (with its
      reason); a vote with a model the board neither ranks nor lists (a board older than
      its battles) is in no term, and the card does not add up.

    ``cells_*``: ``battle_cells`` rows (keep, removed_reason, model_a, model_b, winner, n).
    ``conserved`` is True, False, or None where nothing could be compared."""
    ranked = sorted(set(overall.ranked["model"].to_list()))
    left_out = sorted(overall.left_out)

    def split(cells: pl.DataFrame, lines: VoteLines | None, used: int | None) -> dict:
        battles = int(cells["n"].sum()) if cells.height else 0
        lines = lines or VoteLines()
        removed = (
            cells.filter(~pl.col("keep"))
            .group_by("removed_reason")
            .agg(pl.col("n").sum())
            .sort(["n", "removed_reason"], descending=[True, False])
        )
        kept = cells.filter(pl.col("keep"))
        usable = kept.filter(pl.col("winner").is_not_null())
        both_ranked = pl.col("model_a").is_in(ranked) & pl.col("model_b").is_in(ranked)
        one_left_out = pl.col("model_a").is_in(left_out) | pl.col("model_b").is_in(left_out)
        part = {
            "votes_in": (battles if lines.read is None else lines.read) + lines.rejected,
            "votes_in_from": "battles" if lines.read is None else lines.source,
            "ingest_rejects": lines.rejected,
            "shown": int(usable.filter(both_ranked)["n"].sum()),
            "filtered": {str(r): int(n) for r, n in removed.iter_rows()},
            "kept_without_winner": int(kept.filter(pl.col("winner").is_null())["n"].sum()),
            "kept_off_board": int(usable.filter(one_left_out)["n"].sum()),
            "board_used": used,
        }
        total = (
            part["ingest_rejects"]
            + part["shown"]
            + sum(part["filtered"].values())
            + part["kept_without_winner"]
            + part["kept_off_board"]
        )
        part["accounted"] = total
        part["conserved"] = part["votes_in"] == total and (used is None or used == part["shown"])
        return part

    upto = split(cells_upto, lines_upto, used)
    month = split(cells_month, lines_month, None)
    return {"up_to_month": upto, "month": month, "models_left_out": dict(overall.left_out)}


def card_conserved(card: dict | None) -> bool | None:
    """Whether the data card adds up: None (not checked) without a card."""
    if card is None:
        return None
    return all(card[p]["conserved"] for p in ("month", "up_to_month"))


def rounded(value: float | None, digits: int = 0) -> str:
    """A rating as the page shows it ("—" for none)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"
