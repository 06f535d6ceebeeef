"""One count of votes on a board, everywhere the site and the lake write it.

A month with every kind of model a board can have: ranked, deprecated, one that lost every
vote (unranked, listed with its reason) and one under the vote minimum (hidden under the
table), on the overall board and on every category and language board. Through the boards'
month steps and the site's, then read back as a user would: the pages, ``boards.csv``,
``summary.json``, the pair files and the lake's boards through a DuckDB catalog, and the
overall and language boards recounted from the battles' Parquet files. The simulated
arena's Dagster run checks the same on its boards (``test_site.py``).
"""

from __future__ import annotations

import json

import duckdb
import polars as pl
import pytest

from arena_assets.storage import Lake, create_view
from arena_assets_tests.site_pages import assert_votes_reconcile

MONTH = "2024-05"
MIN_VOTES = 50
PLANTED = (("always-loses", 240, "model_b"), ("rare-model", 6, "model_a"))


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    from arena_assets.pipeline.leaderboards import arena_leaderboard_month, battle_cells_month
    from arena_assets.pipeline.site import leaderboard_site_month
    from arena_assets.ranking.boards import board_options
    from arena_assets.ranking.synthetic import synthetic_month
    from arena_assets.site.publish import SiteRoot
    from arena_assets.site.tables import ModelInfo

    root = tmp_path_factory.mktemp("site-votes")
    battles, labels = synthetic_month(3000, 8, seed=5)
    usable = battles.filter(pl.col("keep") & pl.col("winner").is_in(["model_a", "model_b"]))
    extra, start = [], 0
    for name, n, winner in PLANTED:
        rows, tag = usable.slice(start, n), f"-{name}"
        start += n
        extra.append(
            rows.with_columns(
                model_a=pl.lit(name),
                winner=pl.lit(winner),
                battle_id=pl.col("battle_id") + tag,
                conv_id_a=pl.col("conv_id_a") + tag,
                conv_id_b=pl.col("conv_id_b") + tag,
            )
        )
        for side in ("conv_id_a", "conv_id_b"):  # the same labels: on the category boards too
            labels = pl.concat(
                [
                    labels,
                    labels.join(rows.select(conv_id=side), on="conv_id").with_columns(
                        conv_id=pl.col("conv_id") + tag
                    ),
                ]
            )
    lake = Lake(str(root / "lake"))
    lake.write("battles", MONTH, pl.concat([battles, *extra]))
    lake.write("topic_labels", MONTH, labels)
    battle_cells_month(lake, MONTH)
    arena_leaderboard_month(
        lake,
        MONTH,
        board_options(bootstrap_rounds=10, min_battles=MIN_VOTES),
        min_category_battles=200,
    )
    step = leaderboard_site_month(
        lake,
        MONTH,
        SiteRoot(str(root / "site")),
        registry={"model-01": ModelInfo(deprecated=True)},
        min_votes=MIN_VOTES,
    )
    catalog = duckdb.connect(str(root / "arena.duckdb"))
    create_view(catalog, lake, "arena_leaderboard")
    yield root, step, catalog
    catalog.close()


def test_every_board_counts_the_same_votes_everywhere(month):
    root, step, catalog = month
    site = root / "site" / MONTH
    assert step.conserved is True and not step.mismatched_boards
    compared = assert_votes_reconcile(site, catalog, root / "lake")
    csv = pl.read_csv(site / "downloads/boards.csv")
    assert compared == len(step.boards) + 1 >= 10  # every board, and overall's style twin
    # the planted models are rows of the category boards too (those with one of their
    # votes), never with a vote on the board
    for name, n, _ in PLANTED:
        rows = csv.filter(pl.col("model") == name)
        assert rows.height > 2 and (rows["votes"] == 0).all(), name
        assert (rows["votes_off_board"] > 0).all() and (rows["status"] == "unranked").all()
        overall = rows.filter((pl.col("board") == "overall") & ~pl.col("style_control"))
        assert overall["votes_off_board"].to_list() == [n]
    assert csv.filter(pl.col("model") == "model-01")["deprecated"].all()


def test_overall_and_language_votes_equal_a_recount_of_the_battles(month):
    """Counted from the battle rows, not by the site's code: kept votes with a winner whose
    two models the board ranks, a tie once; the data card's "on the board" is the same."""
    root, _, _ = month
    site = root / "site" / MONTH
    csv = pl.read_csv(site / "downloads/boards.csv").filter(~pl.col("style_control"))
    summary = json.loads((site / "summary.json").read_text())
    battles = pl.read_parquet(root / "lake" / "battles" / f"{MONTH}.parquet").filter(
        pl.col("keep") & pl.col("winner").is_not_null()
    )
    boards = [b for b in summary["board_votes"] if b == "overall" or b.startswith("language:")]
    assert len(boards) >= 2
    for board in boards:
        rows = csv.filter(pl.col("board") == board)
        ranked = sorted(rows.filter(pl.col("status") == "ranked")["model"])
        mine = battles if board == "overall" else battles.filter(language=board.split(":")[1])
        on = mine.filter(pl.col("model_a").is_in(ranked) & pl.col("model_b").is_in(ranked))
        assert summary["board_votes"][board] == on.height > 0, board
        sides = pl.concat([on["model_a"], on["model_b"]]).value_counts()
        per_model = dict(zip(sides["model_a"], sides["count"]))
        assert dict(zip(rows["model"], rows["votes"])) == {
            m: per_model.get(m, 0) for m in rows["model"]
        }
        every = pl.concat([mine["model_a"], mine["model_b"]]).value_counts()
        total = dict(zip(every["model_a"], every["count"]))
        assert all(
            v + off == total.get(m, 0)
            for m, v, off in rows.select("model", "votes", "votes_off_board").iter_rows()
        ), board
    card = json.loads((site / "downloads/data_card.json").read_text())
    assert card["up_to_month"]["shown"] == summary["board_votes"]["overall"] == summary["votes"]


def test_a_board_older_than_its_counts_is_named(month, tmp_path):
    """The site counts the votes again from the battles; a board whose fit saw other votes
    (the battles rewritten since) is named by the ``pages_match_boards`` figures: a model's
    count that moved alone, and a board's total."""
    import shutil

    from arena_assets.pipeline.site import leaderboard_site_month
    from arena_assets.site.publish import SiteRoot

    root, _, _ = month
    shutil.copytree(root / "lake", tmp_path / "lake")
    lake = Lake(str(tmp_path / "lake"))
    boards = lake.read("arena_leaderboard", MONTH)
    first, second = boards.filter(board="coding").sort("model")["model"].head(2)
    shifted = pl.when(pl.col("model") == first).then(1).otherwise(-1)
    moved = (pl.col("board") == "coding") & pl.col("model").is_in([first, second])
    lake.write(
        "arena_leaderboard",
        MONTH,
        boards.with_columns(
            battles=pl.when(moved).then(pl.col("battles") + shifted).otherwise("battles")
        ),
    )
    step = leaderboard_site_month(
        lake, MONTH, SiteRoot(str(tmp_path / "site")), registry={}, min_votes=MIN_VOTES
    )
    assert list(step.mismatched_boards) == ["coding"]  # same total, two models off by one
    site_votes, fitted = step.mismatched_boards["coding"]
    assert site_votes == fitted
    # a vote between two ranked models counted once more than the fit saw
    cells = lake.read("battle_cells", MONTH)
    ranked = sorted(boards.filter(board="overall")["model"])
    extra = cells.filter(
        pl.col("keep")
        & pl.col("winner").is_not_null()
        & pl.col("model_a").is_in(ranked)
        & pl.col("model_b").is_in(ranked)
    ).head(1)
    lake.write("battle_cells", MONTH, pl.concat([cells, extra]))
    step = leaderboard_site_month(
        lake, MONTH, SiteRoot(str(tmp_path / "site")), registry={}, min_votes=MIN_VOTES
    )
    assert "overall" in step.mismatched_boards
    site_votes, fitted = step.mismatched_boards["overall"]
    assert site_votes == fitted + extra["n"][0]
