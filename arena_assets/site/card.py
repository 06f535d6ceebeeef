"""The month's data card: every vote cast up to the month, and in it, either on the
overall board or counted with the reason it is not (ingest rejects, each battle filter,
kept votes without a winner, kept votes with a model the board leaves out). Each term is
counted on its own, so the sum is a check, not a definition."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from arena_assets.site.tables import Board


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
