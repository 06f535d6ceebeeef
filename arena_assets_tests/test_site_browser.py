"""The leaderboard site in a real browser (Debian's headless Chromium through Playwright, no
browser download): two months shaped like real traffic (30 boards) through the boards'
month steps, the site built by `arena-assets site` and served by `arena-assets site
--serve` on loopback, with a Copilot Arena board and a bench; then, as a reader: switch
categories, both toggles, column sorts, the four figures, a model page, no console error,
the tables with JavaScript off, and the same page from file://; and what a reader compares
on screen: the months' range, the votes, one precision per column, the bench's baseline,
heatmap numbers readable unzoomed, the Copilot board in rank order, the history's intervals.

Screenshots go to ``artifacts/site/`` (or ``$ARENA_SITE_ARTIFACTS``). Needs /usr/bin/chromium
(`.ci/run` installs it; skipped with the reason where it is absent).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from arena_assets_tests.site_months import copilot_and_bench
from arena_assets_tests.test_ui import CHROMIUM, CHROMIUM_FLAGS, PROJECT

MONTHS = ("2024-05", "2024-06")
DEPRECATED = "model-03"
BASELINE = "model-00"  # the bench's baseline

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="Debian's chromium is not installed (apt-get install chromium; .ci/run does)",
    ),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two synthetic months through the boards, the site of both by the CLI."""
    from arena_assets.pipeline.leaderboards import (
        arena_leaderboard_month,
        battle_cells_month,
        leaderboard_history_month,
    )
    from arena_assets.ranking.boards import board_options
    from arena_assets.ranking.synthetic import synthetic_month
    from arena_assets.storage import Lake

    root = tmp_path_factory.mktemp("site-browser")
    lake = Lake(str(root / "lake"))
    for i, month in enumerate(MONTHS):
        battles, labels = synthetic_month(40_000, 24, seed=11 + i)
        lake.write("battles", month, battles)
        lake.write("topic_labels", month, labels)
        battle_cells_month(lake, month)
        arena_leaderboard_month(
            lake,
            month,
            board_options(bootstrap_rounds=40, min_battles=100),
            min_category_battles=500,
        )
        leaderboard_history_month(lake, month)
    (root / "raw").mkdir()
    copilot_and_bench(lake, root / "raw", MONTHS[1], BASELINE)
    (root / "raw" / "models.json").write_text(
        json.dumps(
            [
                {
                    "name": f"model-{i:02d}",
                    "organization": f"Lab {'<&>' if i == 1 else i % 5}",
                    "license": "Apache 2.0" if i % 2 else "Proprietary",
                    "knowledge_cutoff": "2024-01",
                    "deprecated": f"model-{i:02d}" == DEPRECATED,
                }
                for i in range(24)
            ]
        )
    )
    env = {
        **os.environ,
        "ARENA_LAKE_ROOT": str(root / "lake"),
        "ARENA_RAW_ROOT": str(root / "raw"),
        "ARENA_SITE_ROOT": str(root / "site"),
        "ARENA_MIN_BATTLES": "100",
        "ARENA_SITE_NAME": "Arena leaderboard",
    }
    cli = [str(Path(sys.executable).with_name("arena-assets")), "site"]
    done = subprocess.run(
        [*cli, "--month", MONTHS[0]], env=env, cwd=root, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    server = subprocess.Popen(
        [*cli, "--month", MONTHS[1], "--serve", "--port", "0"],
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        url = None
        for line in server.stdout:  # the build's report, then the address it serves
            found = re.search(r"on (http://127\.0\.0\.1:\d+)/", line)
            if found:
                url = found.group(1)
                break
        assert url, "`arena-assets site --serve` did not report its address"
        yield root / "site", url
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_site_in_a_real_browser(built):
    from playwright.sync_api import expect, sync_playwright

    site, base = built
    artifacts = Path(os.environ.get("ARENA_SITE_ARTIFACTS", PROJECT / "artifacts" / "site"))
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    print(f"site screenshots: {artifacts}")
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.set_default_timeout(60_000)
        expect.set_options(timeout=60_000)
        page.on(
            "console",
            lambda m: (
                problems.append(f"console {m.type}: {m.text}")
                if m.type in ("error", "warning")
                else None
            ),
        )
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on(
            "response",
            lambda r: problems.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None,
        )

        page.goto(f"{base}/index.html")
        expect(page.get_by_role("link", name=MONTHS[1])).to_be_visible()
        page.get_by_role("link", name=MONTHS[1]).click()
        expect(page.locator("h1")).to_contain_text("Overall")
        page.screenshot(path=artifacts / "01_overall.png")

        # the four figures of the board show (loaded, non-empty)
        for src in (
            "index-intervals.svg",
            "index-winrate.svg",
            "index-winfraction.svg",
            "index-counts.svg",
        ):
            image = page.locator(f"img[src='plots/{src}']")
            expect(image).to_be_visible()
            assert image.evaluate("img => img.complete && img.naturalWidth > 0"), src
        page.locator("img[src='plots/index-winfraction.svg']").scroll_into_view_if_needed()
        page.screenshot(path=artifacts / "02_figures.png")
        page.goto(f"{base}/{MONTHS[1]}/index.html")

        # show deprecated: the row appears and the ranks below it are recomputed
        row = page.locator(f"section.variant-plain tr[data-model='{DEPRECATED}']")
        expect(row).to_be_hidden()
        before = page.locator(
            "section.variant-plain tr.ranked:not(.deprecated) td.rank"
        ).evaluate_all("cells => cells.map(c => c.innerText)")
        page.locator("#show-deprecated").check()
        expect(row).to_be_visible()
        expect(row.locator(".badge")).to_have_text("deprecated")
        after = page.locator(
            "section.variant-plain tr.ranked:not(.deprecated) td.rank"
        ).evaluate_all("cells => cells.map(c => c.innerText)")
        assert after != before and all(int(a) >= int(b) for a, b in zip(after, before))
        page.screenshot(path=artifacts / "03_show_deprecated.png")
        page.locator("#show-deprecated").uncheck()
        expect(row).to_be_hidden()

        # style control: the style-controlled board replaces the plain one
        expect(page.locator("#board-style")).to_be_hidden()
        page.locator("#style-control").check()
        expect(page.locator("#board-style")).to_be_visible()
        expect(page.locator("#board-plain")).to_be_hidden()
        assert "#style" in page.url
        page.screenshot(path=artifacts / "04_style_control.png")
        page.locator("#style-control").uncheck()

        # column sorts: a number's first click puts the highest first, a name's the first
        # in the alphabet, a second click turns it round; unranked rows stay below
        table = page.locator("#board-plain table.board")
        page.locator("#board-plain th", has_text="Score").click()
        scores = _column(table, "td.score")
        assert scores == sorted(scores, reverse=True) and len(scores) >= 10
        page.locator("#board-plain th", has_text="Score").click()
        assert _column(table, "td.score") == sorted(scores)
        page.locator("#board-plain th", has_text="Model").click()
        names = table.locator("tr.ranked:not(.deprecated) td.model a").all_inner_texts()
        assert names == sorted(names)
        page.locator("#board-plain th", has_text="Votes").click()
        votes = _column(table, "td.votes")
        assert votes == sorted(votes, reverse=True) and votes[0] > votes[-1]
        expect(page.locator("#board-plain th", has_text="Votes")).to_have_attribute(
            "aria-sort", "descending"
        )
        page.screenshot(path=artifacts / "05_sorted_by_votes.png")
        page.locator("#board-plain th", has_text="Votes").click()
        assert _column(table, "td.votes") == sorted(votes)
        page.locator("#board-plain th", has_text="Rank (UB)").click()
        ranks = _column(table, "td.rank")
        assert ranks == sorted(ranks) and ranks[0] == 1

        # the category selector: every board, its own page, the style state carried along
        options = page.locator("#category-select option").evaluate_all(
            "os => os.map(o => [o.value, o.textContent])"
        )
        assert len(options) >= 10, options
        page.locator("#style-control").check()
        switched = 0
        for value, title in options[1:]:
            page.locator("#category-select").select_option(value)
            page.wait_for_url(re.compile(re.escape(value)))
            expect(page.locator("h1")).to_contain_text(title)
            expect(page.locator("#board-plain tr.ranked").first).to_be_visible()
            has_style = page.locator("#style-control").is_enabled()
            assert not has_style  # only overall has a style-controlled board here
            expect(page.locator("#board-plain th", has_text="Delta")).to_be_visible()
            switched += 1
            if switched in (1, 8):
                page.screenshot(path=artifacts / f"06_category_{switched}.png")
        assert switched >= 10
        page.locator("#category-select").select_option("index.html")
        expect(page.locator("#board-style")).to_be_visible()  # carried back in the URL

        # a model page: head-to-heads and category ranks
        page.locator("#board-style td.model a").first.click()
        expect(page.get_by_role("heading", name="Head-to-heads (overall)")).to_be_visible()
        expect(page.locator("table.plain").first).to_be_visible()
        page.screenshot(path=artifacts / "07_model.png", full_page=True)
        browser.close()

        # JavaScript off: the tables are there to read; and the site works from file://
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        plain = browser.new_page(
            java_script_enabled=False, viewport={"width": 1500, "height": 1000}
        )
        plain.goto(f"{base}/{MONTHS[1]}/coding.html")
        expect(plain.locator("#board-plain tr.ranked").first).to_be_visible()
        assert plain.locator("#board-plain tr.ranked").count() >= 10
        expect(plain.locator("#category-select")).to_be_hidden()  # the links do the switching
        plain.screenshot(path=artifacts / "08_no_javascript.png")
        local = browser.new_page(viewport={"width": 1500, "height": 1000})
        local.on("pageerror", lambda e: problems.append(f"file:// page error: {e}"))
        local.on(
            "console",
            lambda m: (
                problems.append(f"file:// console {m.type}: {m.text}")
                if m.type in ("error", "warning")
                else None
            ),
        )
        local.goto((site / MONTHS[0] / "index.html").as_uri())
        expect(local.locator("#board-plain tr.ranked").first).to_be_visible()
        local.locator("#category-select").select_option("coding.html")
        expect(local.locator("h1")).to_contain_text("Coding")
        local.screenshot(path=artifacts / "09_file_url.png")
        browser.close()
    assert problems == []


def _column(table, cell: str) -> list[float]:
    return [
        float(v)
        for v in table.locator(f"tr.ranked:not(.deprecated) {cell}").evaluate_all(
            "cells => cells.map(c => c.getAttribute('data-v'))"
        )
    ]


def test_site_numbers_read_alike_in_a_real_browser(built):
    """What a reader compares on screen: the subtitle names the range of months, the Copilot
    board runs down by Rank (UB), a column keeps one precision, the bench's baseline says
    so, the heatmaps' numbers are large enough to read unzoomed, and the history gives
    each score its interval."""
    from playwright.sync_api import expect, sync_playwright

    _, base = built
    artifacts = Path(os.environ.get("ARENA_SITE_ARTIFACTS", PROJECT / "artifacts" / "site"))
    artifacts.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.set_default_timeout(60_000)
        expect.set_options(timeout=60_000)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on(
            "console",
            lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
        )
        page.goto(f"{base}/{MONTHS[1]}/index.html")

        # the subtitle: the range of months the scores cover, not two months of it
        intro = page.locator("main > p.note").first
        expect(intro).to_contain_text(f"({MONTHS[0]} to {MONTHS[1]})")

        # the votes on the board, said above the table and summed by its Votes column
        note = page.locator("#board-plain p.votes-note")
        expect(note).to_contain_text("votes on this board")
        total = int(note.get_attribute("data-votes"))
        page.locator("#show-deprecated").check()
        cells = page.locator("#board-plain td.votes").evaluate_all(
            "cells => cells.map(c => Number(c.getAttribute('data-v')))"
        )
        assert sum(cells) == 2 * total > 0
        page.locator("#show-deprecated").uncheck()

        # style coefficients: one precision for the coefficients and their intervals
        style = page.locator("h2#style + p + table.plain tbody tr")
        expect(style.first).to_be_visible()
        for row in style.evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.innerText))"):
            assert re.fullmatch(r"-?\d+\.\d{3}", row[1]), row
            assert re.fullmatch(r"-?\d+\.\d{3} to -?\d+\.\d{3}", row[2]), row
            assert re.fullmatch(r"-?[\d,]+\.\d", row[3]), row

        # the bench: the baseline's row says it is the baseline, and only that row
        bench = page.locator("h2#bench ~ table.plain").first
        baseline = bench.locator("tr", has=page.locator(".badge", has_text="baseline"))
        expect(baseline).to_have_count(1)
        expect(baseline).to_contain_text(BASELINE)
        expect(baseline).to_contain_text("baseline: 50 by definition")
        baseline.scroll_into_view_if_needed()
        page.screenshot(path=artifacts / "10_bench_baseline.png")

        # the heatmaps: every cell's number at least 9 CSS pixels tall at this width
        for name in ("index-winfraction.svg", "index-counts.svg"):
            image = page.locator(f"img[src='plots/{name}']")
            image.scroll_into_view_if_needed()
            expect(image).to_be_visible()
            shown = image.evaluate(
                "img => img.complete && img.naturalWidth > 0 && img.getBoundingClientRect().width"
            )
            svg = page.request.get(f"{base}/{MONTHS[1]}/plots/{name}").text()
            view_width = float(re.search(r'viewBox="0 0 ([\d.]+) ', svg).group(1))
            labels = svg.split('<g class="labels"', 1)[1]
            sizes = {float(v) for v in re.findall(r'font-size="([\d.]+)"', labels)}
            assert sizes and shown, name
            assert min(sizes) * shown / view_width >= 9, (name, sizes, shown, view_width)
        page.screenshot(path=artifacts / "11_heatmap.png")

        # the Copilot board: Rank (UB) never goes back up the table, ties by score; each
        # latency to the millisecond
        page.get_by_role("link", name="Copilot Arena").click()
        expect(page.locator("h1")).to_contain_text("Copilot Arena")
        rows = page.locator("#copilot-overall tbody tr").evaluate_all(
            "rows => rows.map(r => [...r.cells].map(c => c.innerText))"
        )
        assert len(rows) >= 3
        keys = [(int(r[0]), -float(r[2].replace(",", ""))) for r in rows]
        assert keys == sorted(keys), rows
        for r in rows:
            assert all(re.fullmatch(r"\d+\.\d{3}", v) for v in r[6:8]), r
        page.screenshot(path=artifacts / "12_copilot.png", full_page=True)

        # the history across months: each score with its interval and rank
        page.goto(f"{base}/history.html")
        history = page.locator("table.plain tbody tr").evaluate_all(
            "rows => rows.map(r => [...r.cells].slice(1).map(c => c.innerText))"
        )
        scores = [c for row in history for c in row if c != "—"]
        assert len(scores) >= 20
        assert all(re.fullmatch(r"\d+ \+\d+/-\d+ \(#\d+\)", c) for c in scores), scores[:5]
        page.screenshot(path=artifacts / "13_history.png")
        browser.close()
    assert problems == []
