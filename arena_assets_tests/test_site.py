"""The leaderboard site of a simulated arena against FastChat's formulas, on the same
battles: two simulated months through the every-asset job on a clean instance (the site
and the release included), then the pages, figures' numbers, downloads and data card read
back and compared with ``fastchat_reference``; the release waits for the bench; reruns
write the same bytes. Other inputs (published boards, real battles): ``test_site_inputs``;
publishing, S3, the command line: ``test_site_publish``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from arena_assets.storage import Lake
from arena_assets_tests.conftest import arena_env_values, with_simulated_arena
from arena_assets_tests.fastchat_reference import fastchat_rank_ub, kept_battles
from arena_assets_tests.site_pages import (
    BoardPage,
    assert_catalog_layout,
    assert_pairs_match,
    assert_ranks_match,
    assert_votes_reconcile,
)

MONTHS = ("2024-01", "2024-02")
DEPRECATED = "kestrel-70b-v2"  # marked deprecated in the registry (the world's first model)


# -- fixtures ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Two simulated months through the every-asset job (the site and the release too)."""
    from arena_assets.simulator import simulate_months

    root = tmp_path_factory.mktemp("site")
    env = with_simulated_arena(arena_env_values(root))
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


# -- the simulated arena --------------------------------------------------------------------
def test_site_figures_and_ranks_equal_fastchat_on_a_simulated_month(simulated):
    env, _ = simulated
    month = Path(env["ARENA_SITE_ROOT"]) / MONTHS[-1]
    cells = assert_pairs_match(
        month / "downloads/pairs/index.json", kept_battles(env["ARENA_LAKE_ROOT"], MONTHS)
    )
    assert cells >= 100
    assert_ranks_match(month, "index.html", "overall")
    languages = list((month / "downloads/pairs").glob("language-*.json"))
    assert languages, "no language board in the simulated month"
    for path in languages:
        code = path.stem.split("-", 1)[1]
        assert_pairs_match(path, kept_battles(env["ARENA_LAKE_ROOT"], MONTHS, language=code))
        assert_ranks_match(month, path.with_suffix(".html").name, f"language:{code}")


def test_every_board_counts_its_votes_alike_in_pages_downloads_and_catalog(simulated):
    """The votes of every board of each month (and of every model on it) are the same on
    the page, in boards.csv, summary.json, the pair files and the DuckDB catalog the runs
    published (``site_pages.assert_votes_reconcile``)."""
    import duckdb

    env, _ = simulated
    with duckdb.connect(env["ARENA_CATALOG"], read_only=True) as catalog:
        for month in MONTHS:
            site = Path(env["ARENA_SITE_ROOT"]) / month
            assert assert_votes_reconcile(site, catalog, env["ARENA_LAKE_ROOT"]) >= 3


def test_style_rank_and_deltas_follow_fastchat(simulated):
    """Rank (StyleCtrl) on overall and Delta elsewhere, recomputed over the shared models."""
    env, _ = simulated
    month = Path(env["ARENA_SITE_ROOT"]) / MONTHS[-1]
    rows = pl.read_csv(month / "downloads/boards.csv").filter(
        (pl.col("status") == "ranked") & ~pl.col("deprecated")
    )
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
    category = next(
        b
        for b in rows["board"].unique().sort().to_list()
        if b not in ("overall",) and not b.startswith("language:")
    )
    cat_rows = rows.filter((pl.col("board") == category) & ~pl.col("style_control")).to_dicts()
    common = {r["model"] for r in cat_rows} & shown
    here = fastchat_rank_ub([r for r in cat_rows if r["model"] in common])
    there = fastchat_rank_ub([r for r in overall if r["model"] in common])
    page = BoardPage((month / f"{category}.html").read_text())
    deltas = {
        r["model"]: r["cells"]["second"]["v"]
        for r in page.rows["plain"]
        if "ranked" in r["classes"] and "deprecated" not in r["classes"]
    }
    assert deltas and all(int(deltas[m]) == there[m] - here[m] for m in common)


# FastChat's vote events (fastchat/serve/gradio_block_arena_anony.py): what a "vote" is
VOTE_EVENTS = {"leftvote", "rightvote", "tievote", "bothbad_vote"}


def _raw_votes(raw_root: str, month: str) -> set[str]:
    """The event ids of the vote lines in the month's raw files, read as a user would."""
    import gzip

    ids = set()
    for path in sorted((Path(raw_root) / month).glob("*.jsonl*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and event.get("type") in VOTE_EVENTS:
                    ids.add(event["event_id"])
    return ids


def test_data_card_counts_equal_the_raw_files_and_the_battles(simulated):
    """Every term of the data card counted on its own, from the raw files, the battles'
    Parquet files and the overall board's CSV (never the card's code): the vote lines in
    the raw files must each be in exactly one term, so a vote lost or invented between
    the raw files and the board fails here."""
    env, _ = simulated
    month = Path(env["ARENA_SITE_ROOT"]) / MONTHS[-1]
    card = json.loads((month / "downloads/data_card.json").read_text())
    board = pl.read_csv(month / "downloads/boards.csv").filter(
        (pl.col("board") == "overall") & ~pl.col("style_control")
    )
    ranked = set(board.filter(pl.col("status") == "ranked")["model"])
    for part, months in (("up_to_month", MONTHS), ("month", MONTHS[-1:])):
        raw = set().union(*(_raw_votes(env["ARENA_RAW_ROOT"], m) for m in months))
        battles = pl.concat(
            [
                pl.read_parquet(
                    Path(env["ARENA_LAKE_ROOT"]) / "battles" / f"{m}.parquet",
                    columns=["battle_id", "keep", "removed_reason", "winner", "model_a", "model_b"],
                )
                for m in months
            ]
        )
        assert battles["battle_id"].is_unique().all()
        ids = set(battles["battle_id"])
        assert ids <= raw, "battles the raw files do not have"
        kept = battles.filter(pl.col("keep"))
        usable = kept.filter(pl.col("winner").is_not_null())
        on_board = usable.filter(
            pl.col("model_a").is_in(sorted(ranked)) & pl.col("model_b").is_in(sorted(ranked))
        )
        expected = {
            "votes_in": len(raw),
            "ingest_rejects": len(raw - ids),
            "shown": on_board.height,
            "filtered": dict(Counter(battles.filter(~pl.col("keep"))["removed_reason"])),
            "kept_without_winner": kept.height - usable.height,
            "kept_off_board": usable.height - on_board.height,
        }
        got = card[part]
        assert {k: got[k] for k in expected} == expected, part
        assert got["conserved"] is True
    upto = card["up_to_month"]
    assert upto["filtered"] and upto["shown"] > 0  # (kept off board: test_site_inputs.py)
    html = (month / "index.html").read_text()
    assert f"{upto['votes_in']:,}" in html and "holds" in html


def test_data_card_says_when_a_vote_is_lost(simulated, tmp_path):
    """The card's sum is a check: a filtered battle dropped from the boards' cells (a vote
    lost between ingest and the site) makes it fail, on the page and in the step's result."""
    import shutil

    from arena_assets.pipeline.site import leaderboard_site_month
    from arena_assets.site.publish import SiteRoot

    env, _ = simulated
    shutil.copytree(env["ARENA_LAKE_ROOT"], tmp_path / "lake")
    lake = Lake(str(tmp_path / "lake"))
    cells = lake.read("battle_cells", MONTHS[-1])
    lost = cells.filter(~pl.col("keep")).row(0, named=True)
    lake.write(
        "battle_cells",
        MONTHS[-1],
        cells.filter(
            ~pl.all_horizontal(
                [
                    pl.col(k) == v if v is not None else pl.col(k).is_null()
                    for k, v in lost.items()
                    if k != "n"
                ]
            )
        ),
    )
    step = leaderboard_site_month(
        lake, MONTHS[-1], SiteRoot(str(tmp_path / "site")), registry={}, min_votes=15
    )
    assert step.conserved is False
    upto = step.data_card["up_to_month"]
    assert upto["votes_in"] - upto["accounted"] == lost["n"] > 0
    html = (tmp_path / "site" / MONTHS[-1] / "index.html").read_text()
    assert "do NOT add up" in html and "holds" not in html


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
        site_checks = [
            c
            for c in result.get_asset_check_evaluations()
            if c.asset_key.to_user_string() == "leaderboard_site"
        ]
        assert len(site_checks) == 2 and all(c.passed for c in site_checks)


def test_release_waits_for_the_bench_in_the_every_asset_job(simulated):
    """month_release reads the bench: on a clean instance the job runs it after the bench
    assets, and the month's release holds arena-bench (run first, it would say "not released")."""
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
    _env, events = simulated
    month = MONTHS[-1]
    result = events[month]
    meta = {
        e.asset_key.to_user_string(): e.metadata
        for e in result.get_asset_materialization_events()
        for e in [e.materialization]
    }
    keys = list(meta["arena_leaderboard"])
    assert keys.index("top: overall") < keys.index("preview")
    pages = _page_links(meta["arena_leaderboard"]["site_pages"].value)
    assert pages and all(Path(p[7:].split("#")[0]).exists() for p in pages), pages
    assert sum(p.endswith("/index.html#style") for p in pages) == 1  # style control's view
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
    for path in [
        *published.glob("leaderboard-*.json"),
        *(month / "downloads").glob("leaderboard-*.json"),
    ]:
        assert_catalog_layout(json.loads(path.read_text()), path)
    ours = read_catalog(month / "downloads")
    csv = pl.read_csv(month / "downloads/boards.csv").filter(
        (pl.col("status") == "ranked") & ~pl.col("deprecated")
    )
    assert ours.height == csv.height
    joined = ours.join(
        csv, left_on=["board", "style", "model"], right_on=["board", "style_control", "model"]
    )
    assert joined.height == csv.height
    assert (joined["rating"] - joined["rating_right"]).abs().max() < 1e-9
    parquet = pl.read_parquet(month / "downloads/boards.parquet")
    assert parquet.height == pl.read_csv(month / "downloads/boards.csv").height


def test_rebuilds_are_byte_identical_and_leave_other_months_alone(simulated, tmp_path):
    from arena_assets.ingest.sources import load_model_records
    from arena_assets.pipeline.site import leaderboard_site_month, registry_info
    from arena_assets.site.build import SiteOptions
    from arena_assets.site.publish import SiteRoot

    env, _ = simulated
    lake = Lake(env["ARENA_LAKE_ROOT"])
    registry = registry_info(load_model_records(env["ARENA_RAW_ROOT"]))
    root = SiteRoot(str(tmp_path / "site"))

    def build(month: str) -> None:
        leaderboard_site_month(
            lake, month, root, registry=registry, min_votes=15, options=SiteOptions(workers=2)
        )

    def digest(sub: str = "") -> dict[str, str]:
        base = tmp_path / "site" / sub
        return {
            str(p.relative_to(base)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(base.rglob("*"))
            if p.is_file()
        }

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
        for p in sorted(dagster_built.rglob("*"))
        if p.is_file()
    }


def test_unranked_models_say_why_and_never_get_a_rank(simulated):
    """The invariant on every page of the simulated month (which may rank everyone); a
    month that surely has an unranked model: ``test_site_inputs.py::
    test_a_model_the_data_cannot_rank_is_unranked_with_its_reason``."""
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
