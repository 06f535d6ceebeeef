"""The site's links in Dagster metadata open from the UI: `arena-assets ui` (and the demo)
serve the local site root on loopback and hand its address to the runs; a run's metadata
then links each month's page and every board's page there, the style-controlled board by
its anchor, and each link answers with the page. The top tables keep one precision.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

import polars as pl
import pytest

from arena_assets.envfile import setting

PROJECT = Path(__file__).resolve().parents[1]
MONTH = "2024-05"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, resp.read().decode()


def test_the_ui_serves_the_site_and_hands_its_address_to_its_processes(
    tmp_path, monkeypatch
) -> None:
    """`arena-assets ui` with `dg dev` replaced by a small program that does what the UI's
    processes do with the address: read it from their environment and open a page there."""
    from arena_assets.cli import ui

    site = tmp_path / "site"
    (site / MONTH).mkdir(parents=True)
    (site / MONTH / "index.html").write_text("<h1>the month's board</h1>")
    port = _free_port()
    for name, value in {
        "DAGSTER_HOME": str(tmp_path),
        "ARENA_SITE_ROOT": str(site),
        "ARENA_SITE_SERVE_PORT": str(port),
        "ARENA_SITE_PUBLIC_URL": "",
        "ARENA_SIM_BASE_URL": "http://127.0.0.1:9/v1",  # no simulated arena started here
    }.items():
        monkeypatch.setenv(name, value)
    seen = tmp_path / "seen.json"
    program = (
        "import json, os, sys, urllib.request\n"
        "url = os.environ['ARENA_SITE_PUBLIC_URL']\n"
        f"page = urllib.request.urlopen(url + '/{MONTH}/index.html', timeout=10).read().decode()\n"
        "dotenv = open('.env').read()\n"
        f"json.dump({{'url': url, 'page': page, 'dotenv': dotenv}}, open({str(seen)!r}, 'w'))\n"
    )
    monkeypatch.setattr(ui, "dev_command", lambda *_: [sys.executable, "-c", program])
    args = argparse.Namespace(host="127.0.0.1", port=3999, project=str(PROJECT))
    assert ui.run_ui(args) == 0
    got = json.loads(seen.read_text())
    assert got["url"] == f"http://127.0.0.1:{port}"
    assert got["page"] == "<h1>the month's board</h1>"
    # what `dg dev` reads from its working directory says the same
    assert f"ARENA_SITE_PUBLIC_URL='http://127.0.0.1:{port}'" in got["dotenv"]
    # the address was the UI's: gone with it, and this process's environment as it was
    import os

    assert os.environ["ARENA_SITE_PUBLIC_URL"] == ""
    with pytest.raises(urllib.error.URLError):
        _get(f"http://127.0.0.1:{port}/{MONTH}/index.html")


def test_a_public_url_or_port_zero_leaves_the_links_alone(tmp_path, monkeypatch) -> None:
    from arena_assets.cli.site_server import site_for_runs

    monkeypatch.setenv("ARENA_SITE_ROOT", str(tmp_path / "site"))
    monkeypatch.setenv("ARENA_SITE_SERVE_PORT", "0")
    monkeypatch.setenv("ARENA_SITE_PUBLIC_URL", "")
    with site_for_runs(setting) as url:
        assert url is None
    monkeypatch.setenv("ARENA_SITE_SERVE_PORT", str(_free_port()))
    monkeypatch.setenv("ARENA_SITE_PUBLIC_URL", "https://leaderboard.example.org")
    with site_for_runs(setting) as url:
        assert url is None
    monkeypatch.setenv("ARENA_SITE_PUBLIC_URL", "")
    monkeypatch.setenv("ARENA_SITE_ROOT", "s3://bucket/site")
    with site_for_runs(setting) as url:
        assert url is None
    monkeypatch.setenv("ARENA_SITE_SERVE_PORT", "http")
    with (
        pytest.raises(SystemExit, match="ARENA_SITE_SERVE_PORT='http' is not a port"),
        site_for_runs(setting),
    ):
        pass


def _lake_month(lake_root: str) -> None:
    from arena_assets.pipeline.leaderboards import battle_cells_month
    from arena_assets.ranking.synthetic import synthetic_month
    from arena_assets.storage import Lake

    lake = Lake(lake_root)
    battles, labels = synthetic_month(3000, 8, seed=5)
    lake.write("battles", MONTH, battles)
    lake.write("topic_labels", MONTH, labels)
    battle_cells_month(lake, MONTH)


def test_runs_link_every_board_page_where_the_site_is_served(arena_env, monkeypatch) -> None:
    """The boards, their history and the site through Dagster while the site is served as
    the UI serves it: every link in the metadata is an http link that opens its page."""
    import dagster as dg

    from arena_assets.cli.site_server import site_for_runs
    from arena_assets.definitions import defs

    _lake_month(arena_env["ARENA_LAKE_ROOT"])
    monkeypatch.setenv("ARENA_MIN_CATEGORY_BATTLES", "200")
    monkeypatch.setenv("ARENA_SITE_SERVE_PORT", str(_free_port()))
    definitions = defs()
    with site_for_runs(setting) as base, dg.DagsterInstance.ephemeral() as instance:
        assert base and base.startswith("http://127.0.0.1:")
        result = dg.materialize(
            assets=list(definitions.assets or []),
            resources=definitions.resources,
            instance=instance,
            selection=dg.AssetSelection.assets(
                "arena_leaderboard", "leaderboard_history", "leaderboard_site"
            ),
            partition_key=MONTH,
        )
        assert result.success
        meta = {
            e.asset_key.to_user_string(): e.materialization.metadata
            for e in result.get_asset_materialization_events()
        }
        page = meta["leaderboard_site"]["page"]
        assert isinstance(page, dg.UrlMetadataValue)
        assert page.value == f"{base}/{MONTH}/index.html"
        boards = meta["arena_leaderboard"]
        assert boards["site_page"].value == page.value
        links = {  # board (markdown-escaped in the table) -> its link
            board.replace("\\", ""): url
            for board, url in re.findall(
                r"^\| (\S+) \| \[[^\]]+\]\(([^)]+)\) \|$", boards["site_pages"].value, re.M
            )
        }
        assert len(links) >= 8 and links["overall"] == page.value
        assert links["style_control"] == f"{page.value}#style"  # the overall page's other view
        assert links["if"] == f"{base}/{MONTH}/if.html"
        for url in links.values():
            status, html = _get(url)
            assert status == 200 and '<table class="board"' in html, url
        history = meta["leaderboard_history"]["site_page"].value
        assert history == f"{page.value}#history" and _get(history)[0] == 200
        # the top tables: one precision, whole points, as the site shows them
        for key, value in boards.items():
            if key.startswith("top: "):
                types = {c.name: c.type for c in value.value.schema.columns}
                assert types["rating"] == types["lower"] == types["upper"] == "int", key
                for record in value.value.records:
                    assert all(isinstance(record.data[c], int) for c in ("rating", "lower")), key
        top = pl.DataFrame([r.data for r in boards["top: overall"].value.records])
        lake_board = pl.read_parquet(
            Path(arena_env["ARENA_LAKE_ROOT"]) / "arena_leaderboard" / f"{MONTH}.parquet"
        ).filter(board="overall")
        expected = lake_board.sort("rank", "model").head(top.height)
        assert top["rating"].to_list() == [round(v) for v in expected["rating"]]
