"""The leaderboard site from other inputs than a simulated month: hand-made boards (every
text escaped), LMArena's published arena-catalog files (every pair on its page), the
benchmark's synthetic month (a model unranked, one hidden), the real published battle
files (through the pipeline's month steps, against FastChat's formulas, and where
FastChat's own pandas code departs from them). Publishing, S3 and the command line:
``test_site_publish.py``."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict

import polars as pl
import pytest

from arena_assets.storage import Lake
from arena_assets_tests.fastchat_reference import kept_battles
from arena_assets_tests.site_pages import BoardPage, assert_pairs_match, assert_ranks_match


# -- hand-made and published boards ---------------------------------------------------------
def test_every_text_is_escaped_and_only_web_links_are_kept(tmp_path):
    from arena_assets.site.build import MonthSite, build_month
    from arena_assets.site.tables import Board, ModelInfo

    evil = "<script>alert(1)</script>"
    ranked = pl.DataFrame(
        {
            "model": [evil, "b&b"],
            "rating": [1010.0, 990.0],
            "lower": [1000.0, 980.0],
            "upper": [1020.0, 1000.0],
            "battles": [400, 400],
        }
    )
    site = MonthSite(
        month="2024-05",
        boards=[Board("overall", ranked, {"<USER>": "won_all"})],
        registry={
            evil: ModelInfo(organization="<b>Org</b>", link="javascript:x"),
            "b&b": ModelInfo(link="https://example.org/b?x=1&y=2"),
        },
    )
    files = build_month(site).files
    html = b"".join(v for k, v in files.items() if k.endswith(".html")).decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;Org&lt;/b&gt;" in html and "&lt;USER&gt;" in html
    assert "javascript:" not in html and 'href="https://example.org/b?x=1&amp;y=2"' in html


def test_published_arena_catalog_boards_render_every_pair(real_data):
    from arena_assets.site.build import build_month
    from arena_assets.site.names import board_slug
    from arena_assets.site.published import catalog_site

    folder = real_data / "published" / "arena_catalog"
    site = catalog_site(folder, "2025-12")
    files = build_month(site).files
    expected = defaultdict(set)
    for path in folder.glob("leaderboard-*.json"):
        kind = "vision" if "vision" in path.name else "text"
        style = "style-control" in path.name
        for category, models in json.loads(path.read_text()).items():
            from arena_assets.site.names import from_catalog_key

            key = from_catalog_key(kind, category)
            expected[(key, style)] |= set(models)
    assert sum(len(v) for v in expected.values()) == 7461 + 7462 + 451 + 451
    for (key, style), models in expected.items():
        page = BoardPage(files[f"{board_slug(key)}.html"].decode())
        shown = {r["model"] for r in page.rows["style" if style else "plain"]}
        assert shown == models, (key, style)
        for r in page.rows["style" if style else "plain"]:
            assert r["cells"]["rank"]["v"].isdigit()  # published boards rank everyone
    assert "plots/index-intervals.svg" in files


# -- the synthetic month of the benchmark and the browser test ------------------------------
def test_synthetic_month_runs_through_the_boards_and_the_site(tmp_path):
    """``synthetic_month`` (bench_site.py, test_site_browser.py) writes what the month steps
    read today: two months through battle_cells, arena_leaderboard (every category board,
    the rating alarm's voters and battle ids) and the site. A step that starts reading a
    new column breaks here, in the fast suite, not only in the slow ones."""
    from arena_assets.pipeline.leaderboards import (
        arena_leaderboard_month,
        battle_cells_month,
        leaderboard_history_month,
    )
    from arena_assets.pipeline.site import leaderboard_site_month
    from arena_assets.ranking.boards import board_options
    from arena_assets.ranking.synthetic import synthetic_month
    from arena_assets.site.build import SiteOptions
    from arena_assets.site.publish import SiteRoot

    lake = Lake(str(tmp_path / "lake"))
    months = ("2024-05", "2024-06")
    for i, month in enumerate(months):
        battles, labels = synthetic_month(4000, 10, seed=3 + i)
        lake.write("battles", month, battles)
        lake.write("topic_labels", month, labels)
        battle_cells_month(lake, month)
        step = arena_leaderboard_month(
            lake,
            month,
            board_options(bootstrap_rounds=10, min_battles=50),
            min_category_battles=200,
        )
        leaderboard_history_month(lake, month)
    boards = set(step.boards["board"].unique().to_list())
    assert {
        "overall",
        "style_control",
        "hard_6",
        "coding",
        "math",
        "creative_writing",
        "if",
        "long_user",
        "multiturn",
        "no_refusal",
        "vision",
        "language:en",
    } <= boards, boards
    # the two months' planted ratings differ: the alarm fires and names voters and battles
    alarm = step.info["rating_alarms"][0]
    assert alarm["top_voters"] and alarm["top_voters"][0]["battle_ids"][0].startswith("s4-")
    site = leaderboard_site_month(
        lake,
        months[1],
        SiteRoot(str(tmp_path / "site")),
        registry={},
        min_votes=50,
        options=SiteOptions(workers=1),
    )
    assert site.conserved is True and not site.mismatched_boards
    assert set(site.boards) == boards - {"style_control"}
    assert (tmp_path / "site" / months[1] / "hard_6.html").exists()


def test_a_model_the_data_cannot_rank_is_unranked_with_its_reason(tmp_path):
    """A month where one model lost every one of its 240 votes (its score has no lower
    limit) and another has 6 votes (under the board's minimum of 50): the first is shown
    "unranked, because it never won or tied" with no rank and no score, in the page, its
    model page and the CSV; the second is hidden, as LMArena hides them; both models' votes
    are in the data card's "kept, with a model the board leaves out", none on the board."""
    from arena_assets.pipeline.leaderboards import arena_leaderboard_month, battle_cells_month
    from arena_assets.pipeline.site import leaderboard_site_month
    from arena_assets.ranking.boards import board_options
    from arena_assets.ranking.synthetic import synthetic_month
    from arena_assets.site.publish import SiteRoot

    month = "2024-05"
    battles, labels = synthetic_month(3000, 8, seed=5)
    usable = battles.filter(pl.col("keep") & pl.col("winner").is_in(["model_a", "model_b"]))
    extra = []
    for name, rows, winner in (
        ("always-loses", usable.head(240), "model_b"),
        ("rare-model", usable.slice(240, 6), "model_a"),
    ):
        tag = f"-{name}"
        extra.append(
            rows.with_columns(
                model_a=pl.lit(name),
                winner=pl.lit(winner),
                battle_id=pl.col("battle_id") + tag,
                conv_id_a=pl.col("conv_id_a") + tag,
                conv_id_b=pl.col("conv_id_b") + tag,
            )
        )
        for side in ("conv_id_a", "conv_id_b"):
            labels = pl.concat(
                [
                    labels,
                    labels.join(rows.select(conv_id=side), on="conv_id").with_columns(
                        conv_id=pl.col("conv_id") + tag
                    ),
                ]
            )
    lake = Lake(str(tmp_path / "lake"))
    lake.write("battles", month, pl.concat([battles, *extra]))
    lake.write("topic_labels", month, labels)
    battle_cells_month(lake, month)
    arena_leaderboard_month(
        lake, month, board_options(bootstrap_rounds=10, min_battles=50), min_category_battles=200
    )
    step = leaderboard_site_month(
        lake, month, SiteRoot(str(tmp_path / "site")), registry={}, min_votes=50
    )
    site = tmp_path / "site" / month
    overall = pl.read_csv(site / "downloads/boards.csv").filter(
        (pl.col("board") == "overall") & ~pl.col("style_control")
    )
    unranked = overall.filter(pl.col("status") == "unranked").sort("model")
    assert unranked.select("model", "reason", "shown", "votes", "votes_off_board").rows() == [
        ("always-loses", "lost_all", True, 0, 240),
        ("rare-model", "under_min_battles", False, 0, 6),
    ]
    assert unranked["rank_ub"].null_count() == unranked["rating"].null_count() == 2
    rows = {r["model"]: r for r in BoardPage((site / "index.html").read_text()).rows["plain"]}
    loser = rows["always-loses"]
    assert "unranked" in loser["classes"] and loser["cells"]["rank"]["text"] == "unranked"
    assert loser["reason"].startswith("unranked, because it never won or tied a vote here")
    assert "(240 kept votes here, none on the board)" in loser["reason"], loser["reason"]
    assert loser["cells"]["score"]["text"] == "—" and loser["cells"]["votes"]["text"] == "0"
    assert "rare-model" not in rows and len(rows) == 9
    assert all(r["cells"]["rank"]["v"].isdigit() for m, r in rows.items() if m != "always-loses")
    from arena_assets.site.names import slug

    model_page = (site / "models" / f"{slug('always-loses')}.html").read_text()
    assert "unranked, because it never won or tied a vote here" in model_page
    assert step.conserved is True
    assert step.data_card["month"]["kept_off_board"] == 240 + 6


def test_language_boards_are_named_from_iso_639():
    from arena_assets.site.names import board_group, board_title, from_catalog_key

    # LMArena's names, ISO 639's for the rest, a qualifier kept only where it tells apart
    assert [board_title(f"language:{c}") for c in ("en", "zh", "sw", "swh", "fil", "bh", "xx")] == [
        "English",
        "Chinese",
        "Swahili",
        "Swahili (individual language)",
        "Filipino",
        "Bihari",
        "xx",
    ]
    # arena-catalog names its language boards in lower case: read back to the code
    assert from_catalog_key("text", "swahili") == "language:sw"
    assert from_catalog_key("text", "english") == "language:en"
    assert from_catalog_key("text", "math") == "math" and board_group("math") == "Text"
    assert (
        board_title("vision_german") == "German (Vision)" and board_group("swahili") == "Languages"
    )


# -- the real battles ---------------------------------------------------------------------
# (file, minimum votes per model): the 2024 file has 100 votes among 49 models
REAL_FILES = (
    ("votes_2023_hard_english_with_prompts.jsonl", 5),
    ("clean_battles_2024_full_conversations.jsonl", 1),
)


@pytest.mark.parametrize(("name", "min_votes"), REAL_FILES)
def test_site_equals_fastchat_on_the_real_battles(real_data, name, min_votes, tmp_path):
    """The real files, split into their months, through ingest, clean, battles, the boards
    and the site (the pipeline's month steps); the last month's site covers every vote."""
    from arena_assets.pipeline.battles import battles_month
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.pipeline.ingest import ingest_month
    from arena_assets.pipeline.leaderboards import (
        arena_leaderboard_month,
        battle_cells_month,
        leaderboard_history_month,
        read_info,
    )
    from arena_assets.pipeline.site import leaderboard_site_month
    from arena_assets.ranking.boards import board_options
    from arena_assets.site.publish import SiteRoot

    lines = (real_data / "battles" / name).read_bytes().splitlines()
    by_month = defaultdict(list)
    for line in lines:
        when = dt.datetime.fromtimestamp(json.loads(line)["tstamp"], dt.UTC)
        by_month[when.strftime("%Y-%m")].append(line)
    raw, lake = tmp_path / "raw", Lake(str(tmp_path / "lake"))
    for month, part in by_month.items():
        (raw / month).mkdir(parents=True)
        (raw / month / "battles.jsonl").write_bytes(b"\n".join(part) + b"\n")
    months = sorted(by_month)
    options = board_options(bootstrap_rounds=50, min_battles=min_votes)
    for month in months:
        ingest_month(lake, str(raw), month, salt="s", known_models=None)
        clean_month(lake, month)
        battles_month(lake, month)
        battle_cells_month(lake, month)
        arena_leaderboard_month(lake, month, options, min_category_battles=50)
        leaderboard_history_month(lake, month)
    root = SiteRoot(str(tmp_path / "site"))
    step = leaderboard_site_month(lake, months[-1], root, registry={}, min_votes=min_votes)
    assert step.conserved and not step.mismatched_boards
    site = tmp_path / "site" / months[-1]
    battles = kept_battles(tmp_path / "lake", months)
    assert len(battles) >= 0.9 * len(lines)  # the published files are cleaned already
    assert_pairs_match(site / "downloads/pairs/index.json", battles)
    assert_ranks_match(site, "index.html", "overall")
    csv = pl.read_csv(site / "downloads/boards.csv").filter(
        (pl.col("board") == "overall") & ~pl.col("style_control")
    )
    page = BoardPage((site / "index.html").read_text())
    listed = {r["model"] for r in page.rows["plain"]}
    left_out = read_info(lake, months[-1])["left_out"]["overall"]
    hidden = {m for m, why in left_out.items() if why in ("under_min_battles", "no_battles")}
    models = {m for a, b, _ in battles for m in (a, b)}
    # every model with a kept vote is ranked, unranked with a reason, or hidden (not shown)
    assert listed == set(csv.filter("shown")["model"]) and listed | hidden == models
    assert not listed & hidden and set(csv.filter(~pl.col("shown"))["model"]) == hidden
    assert set(csv.filter(pl.col("status") == "unranked")["model"]) == set(left_out)
    assert (
        sum(r["reason"] is not None for r in page.rows["plain"])
        == csv.filter((pl.col("status") == "unranked") & pl.col("shown")).height
    )


def _fastchat_pandas_win_fraction(battles):
    """FastChat's win-fraction matrix as its monitor computes it (the pandas expression of
    ``fastchat/serve/monitor/elo_analysis.py``, ``compute_pairwise_win_fraction``): A's wins
    as model A plus B's wins as model B, transposed, over both positions' battle counts;
    pandas aligns the added tables on the union of their labels. Returns the two win tables
    and the matrix."""
    import pandas as pd

    def table(frame):
        return pd.pivot_table(
            frame, index="model_a", columns="model_b", aggfunc="size", fill_value=0
        )

    a_wins = table(battles[battles["winner"] == "model_a"])
    b_wins = table(battles[battles["winner"] == "model_b"])
    counts = table(battles)
    return a_wins, b_wins, (a_wins + b_wins.T) / (counts + counts.T)


def test_fastchat_pandas_leaves_a_cell_blank_where_a_model_never_won_in_one_position():
    """Hand-made: b lost both its votes (as model A and as model B), c beat a once as model
    B. FastChat's monitor shows b's whole row and the (c, a) cell blank (NaN: b never won as
    model A, c never won as model A); the site shows 0 % and 100 %, the figure's meaning. The
    (a, b) cell, where every side won and lost where it played, is the same in both."""
    import numpy as np
    import pandas as pd

    from arena_assets.ranking.cells import encode_battles
    from arena_assets.site.matrices import PairCounts, win_fraction

    battles = pd.DataFrame(
        [
            ("a", "b", "model_a"),
            ("b", "a", "model_b"),
            ("a", "c", "model_b"),
            ("c", "b", "model_a"),
        ],
        columns=["model_a", "model_b", "winner"],
    )
    _, _, theirs = _fastchat_pandas_win_fraction(battles)
    pairs = PairCounts.of(encode_battles(pl.from_pandas(battles), "half").aggregate())
    ours = win_fraction(pairs, ["a", "b", "c"])
    assert ours[0, 1] == theirs.loc["a", "b"] == 1.0
    assert ours[1, 0] == 0.0 and ours[1, 2] == 0.0 and ours[2, 0] == 1.0
    assert "b" not in theirs.index or theirs.loc["b"].isna().all()
    assert np.isnan(theirs.loc["c", "a"])


@pytest.mark.parametrize("name", [name for name, _ in REAL_FILES])
def test_fastchat_pandas_win_fraction_differs_only_where_a_side_never_won(real_data, name):
    """FastChat's own code for the win-fraction heatmap (``compute_pairwise_win_fraction``)
    adds two pivot tables that pandas aligns on the union of their labels: a cell is NaN
    wherever its row model never won as model A (or never as model B), or its column model
    never lost as B (or as A), although the pair had non-tied battles. Ours follows what the
    figure says it shows (A's wins over the pair's non-tied battles, both positions). On the
    same battles the two are equal among the models that won and lost in both positions;
    elsewhere they differ exactly at those alignment NaNs, and never by another number."""
    import numpy as np
    import pandas as pd

    from arena_assets.ranking.cells import encode_battles
    from arena_assets.site.matrices import PairCounts, win_fraction

    rows = [
        json.loads(line)
        for line in (real_data / "battles" / name).read_text().splitlines()
        if line.strip()
    ]
    battles = pd.DataFrame({k: [r[k] for r in rows] for k in ("model_a", "model_b", "winner")})
    battles = battles[~battles["winner"].str.contains("tie")]
    a_win_ptbl, b_win_ptbl, row_beats_col_freq = _fastchat_pandas_win_fraction(battles)

    pairs = PairCounts.of(encode_battles(pl.from_pandas(battles), "half").aggregate())
    models = pairs.models
    ours = win_fraction(pairs, models)
    theirs = row_beats_col_freq.loc[models, models].to_numpy(dtype=float)
    won_a, lost_b = set(a_win_ptbl.index), set(a_win_ptbl.columns)
    won_b, lost_a = set(b_win_ptbl.columns), set(b_win_ptbl.index)
    both_sides = [m for m in models if m in won_a & won_b & lost_a & lost_b]
    idx = pairs.index(both_sides)
    # (the 2024 file's 100 votes among 49 models leave one such model)
    np.testing.assert_allclose(ours[np.ix_(idx, idx)], theirs[np.ix_(idx, idx)], rtol=0, atol=1e-12)
    # everywhere: equal, or FastChat's cell is an alignment NaN where ours has a number
    aligned = np.array(
        [
            [i in won_a and i in won_b and j in lost_b and j in lost_a for j in models]
            for i in models
        ]
    )
    differ = ~np.isclose(ours, theirs, rtol=0, atol=1e-12, equal_nan=True)
    assert differ.any() and (aligned & ~np.isnan(ours)).sum() >= 10  # both kinds of cell
    assert np.array_equal(differ, ~aligned & ~np.isnan(ours))
    assert np.isnan(theirs[differ]).all()
    print(
        f"{name}: {len(models)} models, {len(both_sides)} with wins and losses in both "
        f"positions; {int((aligned & ~np.isnan(ours)).sum())} cells equal, "
        f"{int(differ.sum())} NaN in FastChat's, in the rows of "
        f"{int(differ.any(axis=1).sum())} models"
    )
