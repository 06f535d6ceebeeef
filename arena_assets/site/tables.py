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

A vote on a board (``VOTES_DEFINITION``) is a kept vote with a winner (a tie or both-bad
vote counted once) in the board's category between two models the board ranks: exactly
the votes its Bradley-Terry fit used. The page's count, every Votes cell, ``boards.csv``,
``summary.json``, the pair files and the lake's ``arena_leaderboard.battles`` all count
that; a model's kept votes in the category against (or as) a model the board leaves out
are counted apart, as ``votes_off_board``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

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


VOTES_DEFINITION = (
    "a kept vote with a winner (a tie counted once) in the board's category between two "
    "models the board ranks: the votes its scores are fitted on"
)


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

    @cached_property
    def _on_board(self) -> dict[str, int] | None:
        """Model -> its votes on the board (``VOTES_DEFINITION``), ranked models only:
        from the pair counts among the ranked models, else the board's own ``battles``."""
        ranked = self.ranked["model"].to_list()
        if self.pairs is not None:
            among = [m for m in ranked if m in self.pairs.models]
            idx = self.pairs.index(among)
            sub = (self.pairs.decisive + self.pairs.ties)[np.ix_(idx, idx)]
            counts = dict(zip(among, sub.sum(axis=1).astype(int).tolist()))
            return {m: counts.get(m, 0) for m in ranked}
        if "battles" not in self.ranked.columns or self.ranked["battles"].null_count():
            return None
        return dict(zip(ranked, self.ranked["battles"].cast(pl.Int64).to_list()))

    def votes(self, model: str) -> int | None:
        """The model's votes on the board (0 for a model the board leaves out; None when
        the board carries no counts, like a published one)."""
        counts = self._on_board
        return None if counts is None else counts.get(model, 0)

    def votes_off_board(self, model: str) -> int | None:
        """The model's kept votes in the board's category that the board does not count:
        those against (or, for a model left out, as) a model the board leaves out."""
        if self.pairs is None:
            return None
        if model not in self.pairs.models:
            return 0
        every = int(self.pairs.per_model[self.pairs.models.index(model)])
        return every - (self.votes(model) or 0)

    def total_votes(self) -> int | None:
        """The votes on the board: each counted once (half the sum of the models' votes)."""
        counts = self._on_board
        return None if counts is None else sum(counts.values()) // 2

    def total_votes_off_board(self) -> int | None:
        """Kept votes in the board's category with a model the board leaves out, each
        counted once (None without pair counts)."""
        if self.pairs is None:
            return None
        return int(self.pairs.per_model.sum()) // 2 - (self.total_votes() or 0)


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
    "votes_off_board": pl.Int64,
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
    hidden_rows: pl.DataFrame  # TABLE_SCHEMA: unranked, under the vote minimum (not shown)
    second: str | None

    @property
    def hidden(self) -> list[tuple[str, int | None]]:
        """(model, kept votes in the category) of the models under the vote minimum."""
        return list(zip(self.hidden_rows["model"], self.hidden_rows["votes_off_board"]))

    def every_row(self) -> pl.DataFrame:
        """Every model of the board, ranked, unranked and hidden, with ``shown``: whether
        its row is in the page's table (the hidden ones are listed under it)."""
        return pl.concat(
            [
                self.rows.with_columns(shown=pl.lit(True)),
                self.hidden_rows.with_columns(shown=pl.lit(False)),
            ]
        )


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
    hidden, unranked = [], []
    for m, reason in board.left_out.items():
        row = _row(m, "unranked", reason, m in deprecated, None, board, registry, *[None] * 4)
        (hidden if reason in HIDDEN_REASONS else unranked).append(row)
    rows.sort(key=lambda r: (r["rank_all"], -r["rating"], r["model"]))
    for group in (unranked, hidden):
        group.sort(key=lambda r: (-(r["votes_off_board"] or 0), r["model"]))
    return BoardTable(
        board,
        pl.DataFrame(rows + unranked, schema=TABLE_SCHEMA),
        pl.DataFrame(hidden, schema=TABLE_SCHEMA),
        second_kind,
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
        "votes_off_board": board.votes_off_board(model),
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
    """Every model's row on every plain board it appears on (ranked, unranked or hidden
    under the vote minimum), in one pass:
    ``rank`` of the default view, or among every model for a deprecated one."""
    out: dict[str, list[dict]] = {}
    for key, table in tables.items():
        if table.board.style:
            continue
        for r in table.every_row().iter_rows(named=True):
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
                    "votes_off_board": r["votes_off_board"],
                    "delta": (r["second_all"] if use_all else r["second"])
                    if table.second == "delta"
                    else None,
                }
            )
    return out
