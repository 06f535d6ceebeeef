"""The leaderboard site against FastChat's formulas, on the same battles.

Two sources of battles: a simulated arena (two months through every asset in Dagster,
then `leaderboard_site`) and the real published battle files of ``../shared/real``
(through the pipeline's month steps). The reference below is written from FastChat's
``elo_analysis.py`` / ``monitor.py`` (never calling ours): the win fraction is A's wins over
the non-tied battles of the pair, the battle count the non-tied battles, the average win
rate the mean of a row of the win fraction over the opponents met, Rank (UB) = 1 + the
number of shown models whose 2.5 % quantile is above this model's 97.5 % quantile.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import polars as pl
import pytest

from arena_assets.storage import Lake
from arena_assets_tests.conftest import arena_env_values
from arena_assets_tests.site_pages import BoardPage

MONTHS = ("2024-01", "2024-02")
DEPRECATED = "kestrel-70b-v2"  # marked deprecated in the registry (the world's first model)


# -- the reference: FastChat's formulas on (model_a, model_b, winner) --------------------
def fastchat_pairs(battles: list[tuple[str, str, str]]):
    """(win fraction {(a, b): share}, non-tied counts {(a, b): n}, average win rate)."""
    no_ties = [(a, b, w) for a, b, w in battles if "tie" not in w]
    a_won, b_won, n = Counter(), Counter(), Counter()
    for a, b, w in no_ties:
        n[a, b] += 1
        (a_won if w == "model_a" else b_won)[a, b] += 1
    models = sorted({m for a, b, _ in no_ties for m in (a, b)})
    frac, count = {}, {}
    for i in models:
        for j in models:
            total = n[i, j] + n[j, i]
            count[i, j] = total
            if i != j and total:
                frac[i, j] = (a_won[i, j] + b_won[j, i]) / total
    avg = {}
    for i in models:
        row = [frac[i, j] for j in models if (i, j) in frac]
        avg[i] = sum(row) / len(row) if row else None
    return frac, count, avg


def fastchat_rank_ub(rows: list[dict]) -> dict[str, int]:
    return {r["model"]: 1 + sum(o["lower"] > r["upper"] for o in rows if o is not r) for r in rows}


# -- fixtures ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Two simulated months through the every-asset job (the site and the release too)."""
    from arena_assets.simulator import simulate_months

    root = tmp_path_factory.mktemp("site")
    env = arena_env_values(root)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.setenv("ARENA_MIN_BATTLES", "15")
        simulate_months(env["ARENA_RAW_ROOT"], list(MONTHS), 600, seed=7)
        registry_path = Path(env["ARENA_RAW_ROOT"]) / "models.json"
        registry = json.loads(registry_path.read_text())
        for entry in registry:
            entry["deprecated"] = entry["name"] == DEPRECATED
            if entry["name"] == DEPRECATED:
                entry["link"] = "javascript:alert(1)"  # never a link on a page
        registry_path.write_text(json.dumps(registry))
        import dagster as dg

        from arena_assets.definitions import defs

        # the every-asset job (what `make demo` and the monthly schedule launch), on a clean
        # instance: the release and the site come after what they read
        job = defs().resolve_job_def("monthly_refresh")
        events = {}
        with dg.DagsterInstance.ephemeral() as instance:
            for month in MONTHS:
                result = job.execute_in_process(partition_key=month, instance=instance)
                assert result.success
                events[month] = result
            yield {**env, "ARENA_MIN_BATTLES": "15"}, events


def kept_battles(lake: Lake, months, language: str | None = None):
    frame = lake.read_months("battles", months, columns=["model_a", "model_b", "winner",
                                                          "keep", "language"])
    frame = frame.filter(pl.col("keep") & pl.col("winner").is_not_null())
    if language:
        frame = frame.filter(pl.col("language") == language)
    return list(frame.select("model_a", "model_b", "winner").iter_rows())


def assert_pairs_match(pairs_file: Path, battles) -> int:
    """The site's numbers behind its pair figures equal the reference; returns the
    number of matrix cells compared."""
    site = json.loads(pairs_file.read_text())
    frac, count, avg = fastchat_pairs(battles)
    models = site["models"]
    cells = 0
    for i, a in enumerate(models):
        for j, b in enumerate(models):
            expected = frac.get((a, b))
            got = site["win_fraction"][i][j]
            assert (got is None) == (expected is None), (a, b, got, expected)
            if expected is not None:
                assert got == pytest.approx(expected, abs=1e-12), (a, b)
            assert site["battle_counts"][i][j] == (count.get((a, b), 0) if a != b else 0)
            cells += 1
    for model, expected in avg.items():
        got = site["average_win_rate"][model]
        assert (got is None) == (expected is None) and (
            expected is None or got == pytest.approx(expected, abs=1e-12)), model
    return cells


def assert_ranks_match(site_month: Path, board_page: str, board: str) -> None:
    """The page's Rank (UB), both views, against the reference on the CSV's intervals."""
    rows = pl.read_csv(site_month / "downloads" / "boards.csv").filter(
        (pl.col("board") == board) & ~pl.col("style_control") & (pl.col("status") == "ranked"))
    everyone = rows.to_dicts()
    shown = [r for r in everyone if not r["deprecated"]]
    expected, expected_all = fastchat_rank_ub(shown), fastchat_rank_ub(everyone)
    page = BoardPage((site_month / board_page).read_text())
    ranked = [r for r in page.rows["plain"] if "ranked" in r["classes"]]
    assert {r["model"] for r in ranked} == {r["model"] for r in everyone}
    for r in ranked:
        rank = r["cells"]["rank"]
        assert int(rank["v_all"]) == expected_all[r["model"]]
        if "deprecated" in r["classes"]:
            assert rank["v"] == ""  # hidden in the default view, no rank there
        else:
            assert int(rank["v"]) == int(rank["text"]) == expected[r["model"]]


# -- the simulated arena --------------------------------------------------------------------
def test_site_figures_and_ranks_equal_fastchat_on_a_simulated_month(simulated):
    env, _ = simulated
    lake = Lake(env["ARENA_LAKE_ROOT"])
    month = Path(env["ARENA_SITE_ROOT"]) / MONTHS[-1]
    cells = assert_pairs_match(month / "downloads/pairs/index.json", kept_battles(lake, MONTHS))
    assert cells >= 100
    assert_ranks_match(month, "index.html", "overall")
    languages = [p for p in (month / "downloads/pairs").glob("language-*.json")]
    assert languages, "no language board in the simulated month"
    for path in languages:
        code = path.stem.split("-", 1)[1]
        assert_pairs_match(path, kept_battles(lake, MONTHS, language=code))
        assert_ranks_match(month, path.with_suffix(".html").name, f"language:{code}")


def test_style_rank_and_deltas_follow_fastchat(simulated):
    """Rank (StyleCtrl) on overall and Delta elsewhere, recomputed over the shared models."""
    env, _ = simulated
    month = Path(env["ARENA_SITE_ROOT"]) / MONTHS[-1]
    rows = pl.read_csv(month / "downloads/boards.csv").filter(
        (pl.col("status") == "ranked") & ~pl.col("deprecated"))
    overall = rows.filter((pl.col("board") == "overall") & ~pl.col("style_control")).to_dicts()
    styled = rows.filter((pl.col("board") == "overall") & pl.col("style_control")).to_dicts()
    shown = {r["model"] for r in overall}
    sc = fastchat_rank_ub([r for r in styled if r["model"] in shown])
    page = BoardPage((month / "index.html").read_text())
    checked = 0
    for r in page.rows["plain"]:
        if "ranked" in r["classes"] and "deprecated" not in r["classes"]:
            assert r["cells"]["second"]["v"] == str(sc.get(r["model"], ""))
            checked += 1
    assert checked == len(overall)
    category = next(b for b in rows["board"].unique().sort().to_list()
                    if b not in ("overall",) and not b.startswith("language:"))
    cat_rows = rows.filter((pl.col("board") == category) & ~pl.col("style_control")).to_dicts()
    common = {r["model"] for r in cat_rows} & shown
    here = fastchat_rank_ub([r for r in cat_rows if r["model"] in common])
    there = fastchat_rank_ub([r for r in overall if r["model"] in common])
    page = BoardPage((month / f"{category}.html").read_text())
    deltas = {r["model"]: r["cells"]["second"]["v"] for r in page.rows["plain"]
              if "ranked" in r["classes"] and "deprecated" not in r["classes"]}
    assert deltas and all(int(deltas[m]) == there[m] - here[m] for m in common)


def test_data_card_adds_up_to_the_battles(simulated):
    env, _ = simulated
    lake = Lake(env["ARENA_LAKE_ROOT"])
    month = Path(env["ARENA_SITE_ROOT"]) / MONTHS[-1]
    card = json.loads((month / "downloads/data_card.json").read_text())
    battles = lake.read_months("battles", MONTHS, columns=["keep", "removed_reason", "winner"])
    upto = card["up_to_month"]
    assert upto["votes_in"] == battles.height
    removed = Counter(battles.filter(~pl.col("keep"))["removed_reason"].to_list())
    assert upto["filtered"] == dict(removed)
    assert upto["votes_in"] == (upto["shown"] + sum(upto["filtered"].values())
                                + upto["kept_without_winner"] + upto["kept_off_board"])
    assert card["month"]["votes_in"] == lake.read("battles", MONTHS[-1]).height
    html = (month / "index.html").read_text()
    assert f"{upto['votes_in']:,}" in html and "holds" in html


def test_deprecated_models_views_and_downloads(simulated):
    env, events = simulated
    month = Path(env["ARENA_SITE_ROOT"]) / MONTHS[-1]
    page = BoardPage((month / "index.html").read_text())
    rows = {r["model"]: r for r in page.rows["plain"]}
    assert "deprecated" in rows[DEPRECATED]["classes"]
    catalog = json.loads((month / "downloads/leaderboard-text.json").read_text())
    assert DEPRECATED not in catalog["full"] and len(catalog["full"]) >= 5
    html = (month / f"models/{DEPRECATED}.html").read_text()
    assert "javascript:" not in html and "deprecated" in html
    # each month's materialization links its own page, which exists
    for m, result in events.items():
        (event,) = result.asset_materializations_for_node("leaderboard_site")
        page_url = event.metadata["page"].value
        assert page_url.endswith(f"/{m}/index.html") and Path(page_url[7:]).exists()
        site_checks = [c for c in result.get_asset_check_evaluations()
                       if c.asset_key.to_user_string() == "leaderboard_site"]
        assert len(site_checks) == 2 and all(c.passed for c in site_checks)


def test_release_waits_for_the_bench_in_the_every_asset_job(simulated):
    """month_release reads the bench: on a clean instance the job runs it after the bench
    assets, and the month's release holds arena-bench (issue: it ran first, "not released")."""
    env, events = simulated
    for month, result in events.items():
        started = [e.step_key for e in result.all_events if e.event_type_value == "STEP_START"]
        for bench_step in ("bench_prompts", "model_answers", "judgments"):
            assert started.index(bench_step) < started.index("month_release"), (month, started)
        (event,) = result.asset_materializations_for_node("month_release")
        assert event.metadata["bench"].value == "released from bench_prompts"
        assert "bench" in event.metadata["rows"].value
        assert (Path(env["ARENA_RELEASE_ROOT"]) / f"arena-bench-{month}").is_dir()


def test_board_metadata_leads_with_the_rounded_board_and_links_the_site(simulated):
    """The UI walk: rounded tops before the file's preview, each board's page linked, the
    history preview on the month's own rows, no loopback address of the in-process arena."""
    env, events = simulated
    month = MONTHS[-1]
    result = events[month]
    meta = {e.asset_key.to_user_string(): e.metadata
            for e in result.get_asset_materialization_events() for e in [e.materialization]}
    keys = list(meta["arena_leaderboard"])
    assert keys.index("top: overall") < keys.index("preview")
    pages = _page_links(meta["arena_leaderboard"]["site_pages"].value)
    assert pages and all(Path(p[7:]).exists() for p in pages), pages
    assert meta["bench_leaderboard"]["site_page"].value.endswith(f"/{month}/index.html#bench")
    preview = meta["leaderboard_history"]["preview"].value
    assert month in preview and MONTHS[0] not in preview
    for event in result.get_asset_materialization_events():
        assert "127.0.0.1" not in str(event.materialization.metadata), event.asset_key


def _page_links(markdown: str) -> list[str]:
    import re

    return re.findall(r"\]\((file://[^)]+)\)", markdown)


def test_downloads_read_back_as_arena_catalog_files(simulated, real_data):
    """Our catalog JSON has the published files' layout and reads with the same code."""
    from arena_assets.site.catalog import read_catalog

    env, _ = simulated
    month = Path(env["ARENA_SITE_ROOT"]) / MONTHS[-1]
    published = real_data / "published" / "arena_catalog"
    for path in [*published.glob("leaderboard-*.json"), *(month / "downloads").glob("leaderboard-*.json")]:
        assert_catalog_layout(json.loads(path.read_text()), path)
    ours = read_catalog(month / "downloads")
    csv = pl.read_csv(month / "downloads/boards.csv").filter(
        (pl.col("status") == "ranked") & ~pl.col("deprecated"))
    assert ours.height == csv.height
    joined = ours.join(csv, left_on=["board", "style", "model"],
                       right_on=["board", "style_control", "model"])
    assert joined.height == csv.height
    assert (joined["rating"] - joined["rating_right"]).abs().max() < 1e-9
    parquet = pl.read_parquet(month / "downloads/boards.parquet")
    assert parquet.height == pl.read_csv(month / "downloads/boards.csv").height


def assert_catalog_layout(data: dict, path) -> None:
    assert list(data) == sorted(data), path
    for category, models in data.items():
        ratings = [e["rating"] for e in models.values()]
        assert ratings == sorted(ratings, reverse=True), (path, category)
        for model, entry in models.items():
            assert list(entry) == ["rating", "rating_q975", "rating_q025"], (path, model)
            assert all(isinstance(v, float) and math.isfinite(v) for v in entry.values())


def test_rebuilds_are_byte_identical_and_leave_other_months_alone(simulated, tmp_path):
    from arena_assets.pipeline.site import leaderboard_site_month, registry_info
    from arena_assets.ingest.sources import load_model_records
    from arena_assets.site.build import SiteOptions
    from arena_assets.site.publish import SiteRoot

    env, _ = simulated
    lake = Lake(env["ARENA_LAKE_ROOT"])
    registry = registry_info(load_model_records(env["ARENA_RAW_ROOT"]))
    root = SiteRoot(str(tmp_path / "site"))

    def build(month: str) -> None:
        leaderboard_site_month(lake, month, root, registry=registry, min_votes=15,
                               options=SiteOptions(workers=2))

    def digest(sub: str = "") -> dict[str, str]:
        base = tmp_path / "site" / sub
        return {str(p.relative_to(base)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(base.rglob("*")) if p.is_file()}

    build(MONTHS[0])
    first, index_before = digest(MONTHS[0]), (tmp_path / "site/index.html").read_text()
    build(MONTHS[1])
    assert digest(MONTHS[0]) == first  # month 1's folder untouched by month 2
    index_after = (tmp_path / "site/index.html").read_text()
    assert MONTHS[1] not in index_before and MONTHS[1] in index_after
    everything = digest()
    build(MONTHS[1])
    build(MONTHS[0])
    assert digest() == everything  # reruns write the same bytes
    # the Dagster run (other process settings, one worker) wrote the same month folders
    dagster_built = Path(env["ARENA_SITE_ROOT"]) / MONTHS[1]
    assert digest(MONTHS[1]) == {
        str(p.relative_to(dagster_built)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(dagster_built.rglob("*")) if p.is_file()}


def test_unranked_models_say_why_and_never_get_a_rank(simulated):
    env, _ = simulated
    month = Path(env["ARENA_SITE_ROOT"]) / MONTHS[0]
    csv = pl.read_csv(month / "downloads/boards.csv")
    unranked = csv.filter(pl.col("status") == "unranked")
    assert unranked["rank_ub"].null_count() == unranked.height
    assert unranked["rating"].null_count() == unranked.height
    for path in month.glob("*.html"):
        page = BoardPage(path.read_text())
        for rows in page.rows.values():
            for r in rows:
                unranked = "unranked" in r["classes"]
                assert unranked == (r["reason"] is not None)
                if unranked:
                    assert r["cells"]["rank"]["text"] == "unranked"
                    assert r["cells"]["score"]["text"] == "—"
                else:
                    assert r["cells"]["rank"]["v"] == "" or r["cells"]["rank"]["v"].isdigit()


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
