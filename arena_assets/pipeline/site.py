"""The site step: a month's boards and what surrounds them, read from the lake, built into
pages (``arena_assets.site``) and written under the site root.

Reads ``arena_leaderboard`` (and the info written beside it: left-out models, skipped
boards, style coefficients), ``battle_cells`` of every month up to this one (the boards'
battles counted per pair, the data card), the battle rows' category columns and the
``topic_labels`` for the category boards' pair counts, ``leaderboard_history``, the
previous month's board, ``bench_leaderboard`` and the model registry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import polars as pl

from arena_assets.contracts import VOTE_TYPES
from arena_assets.pipeline.completions import read_board_data
from arena_assets.pipeline.leaderboards import cells_of, labels_of, read_info, read_present
from arena_assets.ranking.battle_cells import aggregate_cells, rankable_cells
from arena_assets.ranking.boards import (
    CATEGORY_BOARDS,
    CATEGORY_ROW_COLUMNS,
    category_subset,
    labelled_battles,
)
from arena_assets.ranking.cells import encode_battles
from arena_assets.ranking.identify import rankable
from arena_assets.site.build import MonthSite, SiteOptions, build_month
from arena_assets.site.card import VoteLines, card_conserved, data_card
from arena_assets.site.matrices import PairCounts
from arena_assets.site.publish import SiteRoot, publish_month
from arena_assets.site.render import month_span
from arena_assets.site.tables import Board, ModelInfo
from arena_assets.storage import Lake

TIE_MODE = "half"  # the boards' (ranking.options.FitOptions default)


@dataclass
class SiteMonth:
    """What the site step wrote and the figures its metadata and checks need."""

    month: str
    page_url: str
    files: int
    bytes_written: int
    boards: list[str]
    models: int
    data_card: dict | None  # None without an overall board (nothing to check)
    mismatched_boards: dict[str, tuple[int, int]]  # board -> (site votes, leaderboard votes)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def conserved(self) -> bool | None:
        """The data card adds up (True / False); None: not checked (no overall board)."""
        return card_conserved(self.data_card)


def previous_month(month: str) -> str:
    year, mon = (int(p) for p in month.split("-"))
    return f"{year - (mon == 1):04d}-{(mon - 2) % 12 + 1:02d}"


def registry_info(records: list[dict] | None) -> dict[str, ModelInfo]:
    """``models.json`` entries -> ModelInfo (common spellings of each field accepted)."""

    def pick(r: dict, *names):
        for n in names:
            if r.get(n) not in (None, "", "-"):
                return str(r[n])
        return None

    return {
        r["name"]: ModelInfo(
            organization=pick(r, "organization", "organisation", "org", "Organization"),
            license=pick(r, "license", "licence", "License"),
            knowledge_cutoff=pick(r, "knowledge_cutoff", "Knowledge cutoff date", "cutoff"),
            deprecated=bool(r.get("deprecated", False)),
            link=pick(r, "link", "url", "Link"),
        )
        for r in records or []
    }


# a rejected line that was a vote: it names a vote type, or a winner (an adapter's battle
# record); the text is cut to REJECT_RAW_CHARS, so a line cut before its type is not counted
VOTE_LINE = r'"type"\s*:\s*"(?:' + "|".join(VOTE_TYPES) + r')"|"winner"\s*:'


def vote_lines(lake: Lake, month: str) -> VoteLines:
    """The month's vote lines as ingest saw them (the data card's "votes in")."""
    read = None
    if lake.exists("raw_logs", month):
        types = lake.read("raw_logs", month, columns=["type"])
        read = int(types["type"].is_in(list(VOTE_TYPES)).sum())
    rejected = 0
    if lake.exists("raw_rejects", month):
        raw = lake.read("raw_rejects", month, columns=["raw"])["raw"]
        rejected = int(raw.str.contains(VOTE_LINE).fill_null(False).sum())
    return VoteLines(read, rejected)


def _votes_by_model(cells: pl.DataFrame) -> dict[str, int]:
    usable = rankable_cells(cells)
    both = pl.concat([usable.select(model="model_a", n="n"), usable.select(model="model_b", n="n")])
    return dict(both.group_by("model").agg(pl.col("n").sum()).sort("model").iter_rows())


def _pairs(lake: Lake, months: list[str], cells: pl.DataFrame, keys: set[str]) -> dict:
    """Board key -> the board's battles counted per pair (PairCounts)."""
    kept = rankable_cells(cells)
    out = {}
    overall = PairCounts.of(aggregate_cells(kept, TIE_MODE))
    out["overall"] = out["style_control"] = overall
    for key in sorted(k for k in keys if k.startswith("language:")):
        out[key] = PairCounts.of(
            aggregate_cells(kept.filter(pl.col("language") == key.split(":", 1)[1]), TIE_MODE)
        )
    wanted = [k for k in CATEGORY_BOARDS if k in keys]
    if wanted:
        rows = pl.concat(
            [read_present(lake, "battles", m, CATEGORY_ROW_COLUMNS) for m in months],
            how="diagonal_relaxed",
        )
        labelled = [m for m in months if lake.exists("topic_labels", m)]
        labels = (
            pl.concat([labels_of(lake, m) for m in labelled], how="diagonal_relaxed")
            if labelled
            else None
        )
        battles = labelled_battles(rows, labels)
        for key in wanted:
            out[key] = PairCounts.of(
                encode_battles(category_subset(battles, key), TIE_MODE).aggregate()
            )
    return out


def read_month_site(
    lake: Lake,
    month: str,
    *,
    registry: dict[str, ModelInfo],
    min_votes: int,
    deprecate_after_months: int = 2,
) -> tuple[MonthSite, dict]:
    """The month's ``MonthSite`` from the lake, and {board: (site votes, board votes)} for
    boards whose counted votes differ from what the leaderboard used (a stale board)."""
    if not lake.exists("arena_leaderboard", month):
        raise FileNotFoundError(
            f"no arena_leaderboard for {month} in {lake.root}: materialize the leaderboards first"
        )
    frame = lake.read("arena_leaderboard", month)
    info = read_info(lake, month) or {}
    months = lake.months("battles", upto=month)
    cells = cells_of(lake, months)
    keys = set(frame["board"].unique().to_list())
    pairs = _pairs(lake, months, cells, keys)
    left_out_info = info.get("left_out", {})
    boards, mismatched = [], {}
    for key in sorted(keys):
        ranked = frame.filter(pl.col("board") == key).select(
            "model", "rating", "lower", "upper", "battles"
        )
        p = pairs.get(key)
        left_out = left_out_info.get(key)
        if left_out is None and p is not None:  # a lake from before the info file
            left_out = _left_out(p, min_votes, set(ranked["model"]))
        board = Board(
            "overall" if key == "style_control" else key,
            ranked,
            left_out or {},
            p,
            style=key == "style_control",
        )
        used = info.get("boards", {}).get(key)
        if isinstance(used, int) and p is not None and _stale(board, used):
            mismatched[key] = (board.total_votes(), used)
        boards.append(board)
    prev = previous_month(month)
    has_prev = lake.exists("arena_leaderboard", prev)
    previous = (
        lake.read("arena_leaderboard", prev).filter(pl.col("board") == "overall")
        if has_prev
        else None
    )
    month_cells = cells.filter(pl.col("month") == month)
    recent = months[-deprecate_after_months:] if deprecate_after_months > 0 else []
    active = set(_votes_by_model(cells.filter(pl.col("month").is_in(recent)))) if recent else None
    on_boards = set(frame["model"].to_list())
    deprecated = {m for m, i in registry.items() if i.deprecated and m in on_boards}
    if active is not None:
        deprecated |= on_boards - active
    history = (
        lake.read("leaderboard_history", month)
        if lake.exists("leaderboard_history", month)
        else None
    )
    bench = (
        lake.read("bench_leaderboard", month) if lake.exists("bench_leaderboard", month) else None
    )
    overall = next((b for b in boards if b.key == "overall" and not b.style), None)
    coef = pl.DataFrame(info["style_coefficients"]) if info.get("style_coefficients") else None
    skipped = {
        k: str(v).removeprefix("skipped: ")
        for k, v in info.get("boards", {}).items()
        if isinstance(v, str)
    }
    site = MonthSite(
        month=month,
        boards=boards,
        registry=registry,
        deprecated=deprecated,
        level=float(frame["ci_level"][0]) if frame.height else 0.95,
        min_votes=min_votes,
        source=(
            f"Bradley-Terry scores from every kept vote up to the end of {month} "
            f"({month_span(months or [month])}); "
            f"{frame['ci_method'][0] if frame.height else 'bootstrap'} intervals."
        ),
        history=history,
        previous_month=prev if has_prev else None,
        previous=previous,
        month_votes=_votes_by_model(month_cells),
        previous_votes=_votes_by_model(cells.filter(pl.col("month") == prev)),
        style_coefficients=coef,
        skipped_boards=skipped,
        bench=bench,
        vs_human=_vs_human(bench, frame),
        data_card=_card(lake, months, month, cells, month_cells, overall, info),
    )
    site.copilot = read_board_data(lake, month)  # None: no Copilot board this month
    return site, mismatched


def _card(
    lake: Lake,
    months: list[str],
    month: str,
    cells: pl.DataFrame,
    month_cells: pl.DataFrame,
    overall: Board | None,
    info: dict,
) -> dict | None:
    """The data card; None without an overall board while there are votes (nothing to
    count them against). With no vote at all there is nothing to lose: the card is zeros."""
    lines = {}
    for m in months:  # a month whose raw_logs are gone counts its battles instead
        line = vote_lines(lake, m)
        lines[m] = (
            line
            if line.read is not None
            else VoteLines(
                int(cells.filter(pl.col("month") == m)["n"].sum()), line.rejected, "battles"
            )
        )
    sources = sorted({v.source for v in lines.values()})
    upto = VoteLines(
        sum(v.read for v in lines.values()),
        sum(v.rejected for v in lines.values()),
        "+".join(sources),
    )
    if overall is None:
        if upto.read + upto.rejected or (cells.height and cells["n"].sum()):
            return None
        overall = Board("overall", pl.DataFrame(schema={"model": pl.String}))
    used = info.get("boards", {}).get("overall")
    return data_card(
        cells,
        month_cells,
        overall,
        used=used if isinstance(used, int) else None,
        lines_upto=upto,
        lines_month=lines[month],
    )


def _left_out(pairs: PairCounts, min_votes: int, ranked: set[str]) -> dict[str, str]:
    import numpy as np

    from arena_assets.ranking.cells import Aggregated

    iu, ju = np.triu_indices(len(pairs.models), 1)
    counts = np.stack([pairs.wins[iu, ju], pairs.wins[ju, iu], pairs.ties[iu, ju]], axis=1)
    keep = counts.sum(axis=1) > 0
    _, left = rankable(Aggregated(pairs.models, iu[keep], ju[keep], counts[keep]), min_votes)
    return {m: r for m, r in left.items() if m not in ranked}


def _stale(board: Board, used: int) -> bool:
    """Whether the votes the site counts on ``board`` differ from those its fit used, in
    total (``used``) or for a model (the board's ``battles``): a board older than its
    battles."""
    if board.total_votes() != used:
        return True
    fitted = dict(zip(board.ranked["model"], board.ranked["battles"]))
    return any(n is not None and board.votes(m) != n for m, n in fitted.items())


def _vs_human(bench: pl.DataFrame | None, boards: pl.DataFrame) -> dict | None:
    """The bench against the month's overall board, as ``bench_leaderboard`` computes it."""
    if bench is None or bench.is_empty() or "bt_rating" not in bench.columns:
        return None
    from arena_assets.judging.metrics import bench_vs_human, score_table

    human = boards.filter(pl.col("board") == "overall")
    scores = bench.select(
        "model", rating="bt_rating", lower="bt_lower", upper="bt_upper"
    ).drop_nulls()
    try:
        return bench_vs_human(score_table(scores, "bench"), score_table(human, "arena"))
    except ValueError as exc:  # fewer than two shared models
        return {"error": str(exc)}


def leaderboard_site_month(
    lake: Lake,
    month: str,
    root: SiteRoot,
    *,
    registry: dict[str, ModelInfo],
    min_votes: int,
    deprecate_after_months: int = 2,
    options: SiteOptions | None = None,
) -> SiteMonth:
    """Build the month's pages and write them (and the root's index and history)."""
    options = options or SiteOptions()
    started = time.perf_counter()
    site, mismatched = read_month_site(
        lake,
        month,
        registry=registry,
        min_votes=min_votes,
        deprecate_after_months=deprecate_after_months,
    )
    read_s = time.perf_counter() - started
    built = build_month(site, options)
    build_s = time.perf_counter() - started - read_s
    written = publish_month(root, month, built.files, options.site_name)
    return SiteMonth(
        month=month,
        page_url=root.page_url(month),
        files=len(built.files),
        bytes_written=written,
        boards=sorted({k for k, _ in built.tables}),
        models=sum(1 for f in built.files if f.startswith("models/")),
        data_card=site.data_card,
        mismatched_boards=mismatched,
        seconds={
            "read": round(read_s, 3),
            "build": round(build_s, 3),
            "write": round(time.perf_counter() - started - read_s - build_s, 3),
        },
    )
