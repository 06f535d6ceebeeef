"""The leaderboard site from other inputs than a simulated month: hand-made boards (every
text escaped), LMArena's published arena-catalog files (every pair on its page), the real
published battle files (through the pipeline's month steps, against FastChat's formulas),
an S3 site root, the command line's one-line errors, the library without Dagster and the
figures drawn in worker processes."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from arena_assets.storage import Lake
from arena_assets_tests.fastchat_reference import (assert_pairs_match, assert_ranks_match,
                                                   kept_battles)
from arena_assets_tests.site_pages import BoardPage


# -- hand-made and published boards ---------------------------------------------------------
def test_every_text_is_escaped_and_only_web_links_are_kept(tmp_path):
    from arena_assets.site.build import MonthSite, build_month
    from arena_assets.site.tables import Board, ModelInfo

    evil = "<script>alert(1)</script>"
    ranked = pl.DataFrame({"model": [evil, "b&b"], "rating": [1010.0, 990.0],
                           "lower": [1000.0, 980.0], "upper": [1020.0, 1000.0],
                           "battles": [400, 400]})
    site = MonthSite(month="2024-05", boards=[Board("overall", ranked, {"<USER>": "won_all"})],
                     registry={evil: ModelInfo(organization="<b>Org</b>", link="javascript:x"),
                               "b&b": ModelInfo(link="https://example.org/b?x=1&y=2")})
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
    from arena_assets.pipeline.leaderboards import (arena_leaderboard_month, battle_cells_month,
                                                    leaderboard_history_month)
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
        step = arena_leaderboard_month(lake, month, board_options(bootstrap_rounds=10, min_battles=50),
                                       min_category_battles=200)
        leaderboard_history_month(lake, month)
    boards = set(step.boards["board"].unique().to_list())
    assert {"overall", "style_control", "hard_6", "coding", "math", "creative_writing", "if",
            "long_user", "multiturn", "no_refusal", "vision", "language:en"} <= boards, boards
    # the two months' planted ratings differ: the alarm fires and names voters and battles
    alarm = step.info["rating_alarms"][0]
    assert alarm["top_voters"] and alarm["top_voters"][0]["battle_ids"][0].startswith("s4-")
    site = leaderboard_site_month(lake, months[1], SiteRoot(str(tmp_path / "site")), registry={},
                                  min_votes=50, options=SiteOptions(workers=1))
    assert site.conserved is True and not site.mismatched_boards
    assert set(site.boards) == boards - {"style_control"}
    assert (tmp_path / "site" / months[1] / "hard_6.html").exists()


# -- the real battles ---------------------------------------------------------------------
# (file, minimum votes per model): the 2024 file has 100 votes among 49 models
REAL_FILES = (("votes_2023_hard_english_with_prompts.jsonl", 5),
              ("clean_battles_2024_full_conversations.jsonl", 1))


@pytest.mark.parametrize(("name", "min_votes"), REAL_FILES)
def test_site_equals_fastchat_on_the_real_battles(real_data, name, min_votes, tmp_path):
    """The real files, split into their months, through ingest, clean, battles, the boards
    and the site (the pipeline's month steps); the last month's site covers every vote."""
    from arena_assets.pipeline.battles import battles_month
    from arena_assets.pipeline.clean import clean_month
    from arena_assets.pipeline.ingest import ingest_month
    from arena_assets.pipeline.leaderboards import (arena_leaderboard_month,
                                                    battle_cells_month, leaderboard_history_month)
    from arena_assets.pipeline.leaderboards import read_info
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
    battles = kept_battles(lake, months)
    assert len(battles) >= 0.9 * len(lines)  # the published files are cleaned already
    assert_pairs_match(site / "downloads/pairs/index.json", battles)
    assert_ranks_match(site, "index.html", "overall")
    csv = pl.read_csv(site / "downloads/boards.csv").filter(
        (pl.col("board") == "overall") & ~pl.col("style_control"))
    page = BoardPage((site / "index.html").read_text())
    listed = {r["model"] for r in page.rows["plain"]}
    left_out = read_info(lake, months[-1])["left_out"]["overall"]
    hidden = {m for m, why in left_out.items() if why in ("under_min_battles", "no_battles")}
    models = {m for a, b, _ in battles for m in (a, b)}
    # every model with a kept vote is ranked, unranked with a reason, or hidden as too rare
    assert listed == set(csv["model"]) and listed | hidden == models and not listed & hidden
    assert set(csv.filter(pl.col("status") == "unranked")["model"]) == set(left_out) - hidden
    assert sum(r["reason"] is not None for r in page.rows["plain"]) == \
        csv.filter(pl.col("status") == "unranked").height


# -- where the site lives, and the command line ----------------------------------------------
def _catalog_folder(folder: Path, models: int) -> Path:
    folder.mkdir()
    board = {f"m{i}": {"rating": 1100.0 - 10 * i, "rating_q975": 1105.0 - 10 * i,
                       "rating_q025": 1095.0 - 10 * i} for i in range(models)}
    (folder / "leaderboard-text.json").write_text(json.dumps({"full": board, "coding": board}))
    return folder


def _site_cli(*args: str, env: dict | None = None):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "arena_assets.cli", "site", *args],
                          capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def test_site_on_s3_is_the_same_bytes_as_on_disk(arena_env, s3_endpoint, tmp_path):
    import boto3
    import fsspec

    client = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
    client.create_bucket(Bucket="site")
    s3 = {"ARENA_S3_ENDPOINT_URL": s3_endpoint, "ARENA_S3_ACCESS_KEY_ID": "test",
          "ARENA_S3_SECRET_ACCESS_KEY": "test", "ARENA_S3_REGION": "us-east-1"}
    local = tmp_path / "local"
    folders = {n: _catalog_folder(tmp_path / f"catalog-{n}", n) for n in (12, 9)}
    for models, root in ((12, str(local)), (12, "s3://site/pub"), (9, "s3://site/pub")):
        folder = folders[models]
        done = _site_cli("--month", "2025-12", "--catalog", str(folder), "--root", root, env=s3)
        assert done.returncode == 0, done.stderr[-2000:]
        if root == str(local):
            expected = {str(p.relative_to(local)): p.read_bytes() for p in local.rglob("*") if p.is_file()}
        elif models == 12:
            fs = fsspec.filesystem("s3", key="test", secret="test",
                                   client_kwargs={"endpoint_url": s3_endpoint, "region_name": "us-east-1"})
            got = {p[len("site/pub/"):]: fs.cat(p) for p in fs.find("site/pub")}
            assert got == expected and "2025-12/models/m11.html" in got
    fs.invalidate_cache()
    after = {p[len("site/pub/"):] for p in fs.find("site/pub")}
    assert "2025-12/models/m11.html" not in after and "2025-12/models/m8.html" in after
    assert not [p for p in after if p.endswith(".tmp")]  # a rebuild leaves exactly the build
    refused = _site_cli("--month", "2025-12", "--root", "s3://site/pub", "--serve", env=s3)
    assert refused.returncode != 0 and refused.stderr.strip().startswith(
        "arena-assets site: --serve needs a local site root")


@pytest.mark.parametrize(("month", "says"), [("2024-13", "there is no month 13"),
                                             ("2024-1", "is not a month"),
                                             ("2031-01", "no arena_leaderboard for 2031-01")])
def test_site_command_refuses_in_one_line(arena_env, month, says):
    done = _site_cli("--month", month)
    line = done.stderr.strip()
    assert done.returncode != 0 and "\n" not in line and says in line, line


def test_site_library_is_pure():
    """The pages, tables and figures are a library: usable without Dagster."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", "import sys; import arena_assets.site.build, "
         "arena_assets.site.publish, arena_assets.site.published, arena_assets.pipeline.site; "
         "print('dagster' in sys.modules)"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr[-2000:]


def test_figures_are_the_same_bytes_from_worker_processes():
    from arena_assets.site.draw import POOL_MIN_JOBS, draw_all

    jobs = [(f"plots/{i}.svg", "bars", dict(models=[f"m{j}" for j in range(i % 7 + 2)],
                                            values=[0.1 * j for j in range(i % 7 + 2)],
                                            title=f"<figure {i}>", ylabel="rate"))
            for i in range(POOL_MIN_JOBS)]
    here, pooled = draw_all(jobs, workers=1), draw_all(jobs, workers=2)
    assert here == pooled and len(here) == POOL_MIN_JOBS
    assert b"&lt;figure 3&gt;" in here["plots/3.svg"]  # SVG text escaped
