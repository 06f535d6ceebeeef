"""The completions stage's month steps: ``completion_battles`` (Copilot Arena's records of
the month, cleaned, with their rejects), ``copilot_leaderboard`` (cumulative board) and
``copilot_user_boards`` (cumulative, each user's own board)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import polars as pl

from arena_assets.completions.adapters import clean_battles, merge_pairs, parse_files, reject_frame
from arena_assets.completions.board import (
    CopilotBoardOptions,
    board_data,
    copilot_leaderboard,
    copilot_user_boards,
)
from arena_assets.completions.schema import COMPLETION_BATTLES_SCHEMA, COPILOT_USER_BOARD_SCHEMA
from arena_assets.contracts import FORGOTTEN_USER
from arena_assets.ingest.forgotten import load_forgotten
from arena_assets.ingest.sources import MonthListing
from arena_assets.storage import Lake

COMPLETION_BATTLES = "completion_battles"
COMPLETION_REJECTS = "completion_rejects"
COPILOT_LEADERBOARD = "copilot_leaderboard"
COPILOT_USER_BOARDS = "copilot_user_boards"
_BOARD_COLUMNS = (
    "model_a",
    "model_b",
    "winner",
    "accepted",
    "latency_a",
    "latency_b",
    "file_type",
    "source_format",
)


@dataclass
class CompletionBattlesMonth:
    month: str
    battles: pl.DataFrame
    rejects: pl.DataFrame
    records_read: int
    listing: MonthListing
    urls: tuple[str, str] = ("", "")

    @property
    def conserved(self) -> bool:
        """Every record is in a battle (``records`` counts them) or is a reject."""
        return self.records_read == int(self.battles["records"].sum() or 0) + self.rejects.height

    @property
    def forgotten_records(self) -> int:
        """Records of users on the forget list (rejected, no text kept)."""
        return self.rejects.filter(pl.col("reason") == FORGOTTEN_USER).height


def completion_battles_month(
    lake: Lake,
    root: str,
    month: str,
    *,
    salt: str,
    known_models: set[str] | None = None,
    storage_options: dict | None = None,
) -> CompletionBattlesMonth:
    """The month's records -> ``completion_battles`` and ``completion_rejects``; users on
    the lake's forget list stay out (another salt than theirs: ``ForgetListSaltError``,
    before anything is written)."""
    forgotten = load_forgotten(lake, salt)
    parsed, listing = parse_files(
        root,
        month,
        salt=salt,
        known_models=known_models,
        storage_options=storage_options,
        forgotten=forgotten,
    )
    battles = merge_pairs(parsed, month)
    battles = (
        clean_battles(battles) if battles.height else pl.DataFrame(schema=COMPLETION_BATTLES_SCHEMA)
    )
    rejects = reject_frame(parsed.rejects)
    urls = (
        lake.write(COMPLETION_BATTLES, month, battles),
        lake.write(COMPLETION_REJECTS, month, rejects),
    )
    return CompletionBattlesMonth(month, battles, rejects, parsed.records_read, listing, urls)


@dataclass
class CopilotBoardMonth:
    month: str
    board: pl.DataFrame
    latency: dict
    figures: dict
    left_out: dict = field(default_factory=dict)
    urls: tuple[str, str] = ("", "")


def copilot_leaderboard_month(
    lake: Lake, month: str, options: CopilotBoardOptions = CopilotBoardOptions()
) -> CopilotBoardMonth:
    """The board of every completion battle up to ``month`` (cumulative, like the arena's),
    and its data as JSON for a site page (``copilot_leaderboard/<month>.json``)."""
    months = lake.months(COMPLETION_BATTLES, upto=month)
    battles = (
        lake.read_months(COMPLETION_BATTLES, months, columns=list(_BOARD_COLUMNS))
        if months
        else pl.DataFrame(schema={k: COMPLETION_BATTLES_SCHEMA[k] for k in _BOARD_COLUMNS})
    )
    result = copilot_leaderboard(battles, month, options)
    figures = result.figures | {
        "months": months,
        "ci_level": options.level,
        "include_unaccepted": options.include_unaccepted,
    }
    data = board_data(result.board, result.latency, figures, month)
    urls = (
        lake.write(COPILOT_LEADERBOARD, month, result.board),
        lake.write_blob(COPILOT_LEADERBOARD, f"{month}.json", json.dumps(data, indent=1).encode()),
    )
    return CopilotBoardMonth(month, result.board, result.latency, figures, result.left_out, urls)


@dataclass
class CopilotUserBoardsMonth:
    month: str
    boards: pl.DataFrame  # COPILOT_USER_BOARD_SCHEMA
    users: int  # users with a board
    users_seen: int  # users with an accepted pair
    url: str = ""

    def lambdas(self) -> dict[str, int]:
        """Users per chosen λ (the weight of everyone's pairs)."""
        per_user = self.boards.unique("user_hash").group_by("lam").len().sort("lam")
        return {f"{lam:g}": int(n) for lam, n in per_user.iter_rows()}


def copilot_user_boards_month(
    lake: Lake, month: str, options: CopilotBoardOptions = CopilotBoardOptions()
) -> CopilotUserBoardsMonth:
    """Every user's board over every completion battle up to ``month`` (cumulative, like
    the board): Copilot Arena's per-user scores (``completions.anchor_fit``)."""
    cols = ["model_a", "model_b", "winner", "accepted", "user_hash", "tstamp", "pair_id"]
    months = lake.months(COMPLETION_BATTLES, upto=month)
    battles = (
        lake.read_months(COMPLETION_BATTLES, months, columns=cols)
        if months
        else pl.DataFrame(schema={k: COMPLETION_BATTLES_SCHEMA[k] for k in cols})
    )
    boards = copilot_user_boards(battles, options).with_columns(month=pl.lit(month))
    boards = boards.select([pl.col(c).cast(t) for c, t in COPILOT_USER_BOARD_SCHEMA.items()])
    seen = battles.filter(pl.col("accepted"))["user_hash"].n_unique()
    url = lake.write(COPILOT_USER_BOARDS, month, boards, empty_ok=True)
    return CopilotUserBoardsMonth(month, boards, boards["user_hash"].n_unique(), seen, url)


def read_board_data(lake: Lake, month: str) -> dict | None:
    """The month's board data (what ``copilot_leaderboard_month`` writes beside the table),
    or None when the board was not built for that month."""
    path = f"{lake.root.rstrip('/')}/{COPILOT_LEADERBOARD}/_files/{month}.json"
    if not lake.fs.exists(path):
        return None
    with lake.fs.open(path, "rb") as fh:
        return json.loads(fh.read())
