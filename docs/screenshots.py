"""Screenshots of the Dagster UI and the leaderboard site for the documentation.

Run from the project folder after `make demo` (data under ``./data``, the instance under
``./.dagster_home``):

    .venv/bin/python docs/screenshots.py [--out docs/images] [--month 2024-03]

It starts the Dagster UI as `make ui` does (`arena-assets ui` on a free loopback port) and
the site server (`arena-assets site --month M --serve`, which rebuilds that month of the
site first), drives Debian's headless Chromium through Playwright (``/usr/bin/chromium``,
never a downloaded browser), and writes these PNGs at a 1400x900 viewport:

    ui-asset-graph.png     the global asset lineage (one node per stage group)
    ui-asset-group.png     the leaderboards group: its assets with status, checks, partitions
    ui-asset-metadata.png  arena_leaderboard's materialization of the month: the top-10 table
    ui-partitions.png      battles' monthly partitions, the month's metadata beside them
    site-board.png         the site's overall board of the month
    site-category.png      one category board of the month

Every shot waits for the elements it shows (no sleeps); a page that does not come up ends
the script with one line and exit status 1, and both servers are stopped either way. With
Pillow the PNGs are reduced to 256 colours (and downscaled if one still exceeds
``--max-kb``). The selectors follow Dagster 1.13's UI; they are the first thing to check
when a Dagster upgrade breaks the script.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 900}
# the UI's first-visit "Join the Dagster community" dialog is shown on localhost unless the
# browser remembers a dismissal (Dagster's own localStorage key): set it before any page
# script runs, so the dialog never opens and the instance is not told it was seen
NO_COMMUNITY_DIALOG = (
    "try { localStorage.setItem('communityNux', JSON.stringify('1')) } catch (e) {}"
)
# true once the element's position has not moved between two polls: the asset graph
# lays itself out and then animates its zoom-to-fit after its nodes appear
SETTLED = """(el) => {
  const r = el.getBoundingClientRect();
  const now = [r.x, r.y, r.width, r.height].map(Math.round).join(",");
  const same = el.dataset.shotLastBox === now;
  el.dataset.shotLastBox = now;
  return same;
}"""


class NotUp(Exception):
    """A server or a page did not come up; the message is the one line the script prints."""


def _free_port() -> int:
    # dagster-webserver treats port 0 as "use 3000": the port is picked here and passed on
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _log_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _last_line(path: Path) -> str:
    lines = [line.strip() for line in _log_text(path).splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


@contextlib.contextmanager
def _server(cmd: list[str], log: Path, env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """``cmd`` in its own session, output to ``log``; the whole session is stopped on exit
    (Ctrl-C first, as a user would, then SIGKILL for what is left: `dg dev`'s webserver,
    daemon and code server do not always exit on the signal when the machine is busy)."""
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd, cwd=PROJECT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen, log: Path):
    """Poll ``predicate`` until it returns something truthy (returned), the process exits or
    ``timeout`` seconds pass (both: NotUp naming ``what`` and the log)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            raise NotUp(
                f"{what}: the command exited with status {proc.returncode}: "
                f"{_last_line(log)} (log: {log})"
            )
        if time.monotonic() > deadline:
            raise NotUp(f"{what} did not come up within {timeout:.0f}s (log: {log})")
        time.sleep(0.5)


def _ui_ready(base: str, log: Path):
    def ready() -> bool:
        # the line `arena-assets ui` prints when it starts, then the webserver itself
        if f"Dagster UI on {base}" not in _log_text(log):
            return False
        try:
            with urllib.request.urlopen(f"{base}/server_info", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    return ready


def _site_url(log: Path):
    def found() -> str | None:
        match = re.search(r"Serving .* on (http://127\.0\.0\.1:\d+)/", _log_text(log))
        return match.group(1) if match else None

    return found


# --- the shots -------------------------------------------------------------------------


def _settle(locator, timeout_ms: float) -> None:
    """Wait until ``locator``'s box stops moving (polled every 300 ms)."""
    locator.page.wait_for_function(
        f"(el) => ({SETTLED})(el)", arg=locator.element_handle(), polling=300, timeout=timeout_ms
    )


def _no_spinners(page) -> None:
    from playwright.sync_api import expect

    # Dagster's loading states (the graph's status fetch, spinners) and error banners
    expect(page.get_by_text("fetching statuses")).to_have_count(0)
    expect(page.get_by_role("progressbar")).to_have_count(0)
    expect(page.get_by_text(re.compile(r"^(Something went wrong|Error)\b"))).to_have_count(0)


def shot_asset_graph(page, base: str, path: Path, timeout_ms: float) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/asset-groups")
    expect(page.get_by_text("Global asset lineage").first).to_be_visible()
    # one node per stage group, drawn and placed
    # (the asset list beside the graph names the groups too: the graph's are the last)
    graph_nodes = [page.get_by_text(g, exact=True).last for g in ("ingest", "leaderboards", "site")]
    for node in graph_nodes:
        expect(node).to_be_visible()
    _no_spinners(page)
    _settle(graph_nodes[1], timeout_ms)
    page.screenshot(path=path)


def shot_asset_group(page, base: str, path: Path, timeout_ms: float) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/locations/arena_assets/asset-groups/leaderboards")
    node = page.get_by_text("arena_leaderboard", exact=True).first
    expect(node).to_be_visible()
    # each node's live rows have loaded: partition health and check results
    expect(page.get_by_text(re.compile(r"^\d+% filled$")).first).to_be_visible()
    expect(page.get_by_text(re.compile(r"^\d+ / \d+ Passed$")).first).to_be_visible()
    _no_spinners(page)
    _settle(node, timeout_ms)
    page.screenshot(path=path)


def shot_asset_metadata(page, base: str, month: str, path: Path) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/assets/arena_leaderboard?view=events")
    # the latest materialization of the month in the event list (its first entry for it)
    expect(page.get_by_text("Metadata", exact=True).first).to_be_visible()
    page.get_by_text(month, exact=True).first.click()
    expect(page.get_by_text(re.compile(rf"^Partition {month} materialized")).first).to_be_visible()
    top = page.get_by_text("top: overall", exact=True).first
    expect(top).to_be_visible()
    # the top-10 table has its rows (rank 1 to 10 in the first column)
    table = (
        page.locator("table:not(:has(table))")
        .filter(has=page.get_by_text("rank_ub", exact=True))
        .first
    )
    expect(table.locator("tr").nth(10)).to_be_visible()
    _no_spinners(page)
    page.screenshot(path=path)


def shot_partitions(page, base: str, month: str, path: Path) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/assets/battles?view=partitions&partition={month}")
    expect(page.get_by_text(re.compile(r"^Materialized \(\d+\)$")).first).to_be_visible()
    expect(page.get_by_text("Materialized", exact=True).first).to_be_visible()  # month's badge
    expect(page.get_by_text("battles_kept", exact=True).first).to_be_visible()
    expect(page.get_by_text(f"/battles/{month}.parquet", exact=False).first).to_be_visible()
    _no_spinners(page)
    page.screenshot(path=path)


def shot_site_board(page, site: str, month: str, path: Path) -> None:
    from playwright.sync_api import expect

    page.goto(f"{site}/index.html")
    page.get_by_role("link", name=month, exact=True).first.click()  # the months index
    expect(page.locator("h1")).to_contain_text("Overall")
    expect(page.locator("#board-plain table.board tr.ranked").first).to_be_visible()
    page.screenshot(path=path)


def shot_site_category(page, site: str, month: str, path: Path) -> None:
    from playwright.sync_api import expect

    page.goto(f"{site}/{month}/index.html")
    options = page.locator("#category-select option").evaluate_all(
        "os => os.map(o => [o.value, o.textContent.trim()])"
    )
    # a topic category the way LMArena lists them (coding, math... when the month has
    # them), else any board that is not the overall one or a language
    preferred = ("hard_6.html", "coding.html", "math.html", "creative_writing.html", "if.html")
    others = [o for o in options if o[0] != "index.html"]
    pick = next((o for p in preferred for o in others if o[0] == p), None) or next(
        (o for o in others if not o[0].startswith("language-")), others[0] if others else None
    )
    if pick is None:
        raise NotUp(f"the site's {month} has no category board besides the overall one")
    page.locator("#category-select").select_option(pick[0])  # as a reader switches boards
    expect(page.locator("h1")).to_contain_text(pick[1])
    expect(page.locator("table.board tr.ranked").first).to_be_visible()
    page.screenshot(path=path)


# --- output ----------------------------------------------------------------------------


def shrink(path: Path, max_bytes: int) -> int:
    """256 colours (sharp text, a third of the size), then halving steps of the scale while
    the file is over ``max_bytes``. Without Pillow the PNG stays as Chromium wrote it."""
    try:
        from PIL import Image
    except ImportError:
        return path.stat().st_size
    with Image.open(path) as opened:
        image = opened.convert("RGB")
    scale = 1.0
    while True:
        sized = (
            image
            if scale == 1.0
            else image.resize(
                (round(image.width * scale), round(image.height * scale)), Image.Resampling.LANCZOS
            )
        )
        sized.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
            path, optimize=True
        )
        size = path.stat().st_size
        if size <= max_bytes or scale < 0.3:
            return size
        scale *= 0.75


def _preflight(args) -> dict[str, str]:
    """The environment of both servers; NotUp for what is missing, with what to run."""
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", args.month):
        raise NotUp(f"--month {args.month!r} is not YYYY-MM")
    if not CHROMIUM.exists():
        raise NotUp(f"{CHROMIUM} is missing: apt-get install chromium (never `playwright install`)")
    cli = Path(sys.executable).with_name("arena-assets")
    if not cli.exists():
        raise NotUp(
            f"{cli} is missing: run with the project's .venv/bin/python after `make install`"
        )
    env = dict(os.environ)
    # as the Makefile exports it
    env.setdefault("DAGSTER_HOME", str(PROJECT / ".dagster_home"))
    if not (Path(env["DAGSTER_HOME"]) / "dagster.yaml").exists():
        raise NotUp(f"no Dagster instance at {env['DAGSTER_HOME']}: run `make demo` first")
    os.chdir(PROJECT)  # the project's .env, as `make` reads it
    from arena_assets.envfile import setting

    lake = setting("ARENA_LAKE_ROOT", "./data/lake")
    if (
        "://" not in lake
        and not (Path(lake) / "arena_leaderboard" / f"{args.month}.parquet").exists()
    ):
        raise NotUp(f"no arena_leaderboard for {args.month} under {lake}: run `make demo` first")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _take(page, shots, out: Path, logs: Path, max_bytes: int) -> None:
    """Each shot into ``out``, reduced; NotUp naming the first page that did not come up,
    with what the browser showed then (saved beside the servers' logs)."""
    for name, take in shots:
        t0 = time.monotonic()
        try:
            take(out / name)
        except NotUp:
            raise
        except Exception as exc:  # Playwright's timeouts and failed expectations
            text = str(exc).strip()
            first = text.splitlines()[0] if text else type(exc).__name__
            seen = logs / f"{Path(name).stem}.failed.png"
            with contextlib.suppress(Exception):
                page.screenshot(path=seen)
            raise NotUp(
                f"{name}: the page did not come up ({page.url}): {first} "
                f"(what the browser showed: {seen}; server logs: {logs})"
            ) from exc
        size = shrink(out / name, max_bytes)
        print(f"{out / name}: {size / 1000:.0f} KB ({time.monotonic() - t0:.1f}s)", flush=True)


def run(args) -> None:
    from playwright.sync_api import expect, sync_playwright

    env = _preflight(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix="arena-screenshots-"))
    ui_log, site_log = logs / "ui.log", logs / "site.log"
    cli = str(Path(sys.executable).with_name("arena-assets"))
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    ui_cmd = [cli, "ui", "--host", "127.0.0.1", "--port", str(port)]
    site_cmd = [cli, "site", "--month", args.month, "--serve", "--host", "127.0.0.1", "--port", "0"]
    page_ms = args.page_timeout * 1000
    month = args.month
    started = time.monotonic()
    # both start at once (the site server builds the month first); both stop on the way out
    with (
        _server(ui_cmd, ui_log, env) as ui,
        _server(site_cmd, site_log, env) as site_proc,
    ):
        _wait_for(_ui_ready(base, ui_log), args.timeout, "the Dagster UI", ui, ui_log)
        site = _wait_for(_site_url(site_log), args.timeout, "the site server", site_proc, site_log)
        print(f"UI on {base}, site on {site} ({time.monotonic() - started:.0f}s)", flush=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            try:
                context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
                context.add_init_script(NO_COMMUNITY_DIALOG)
                page = context.new_page()
                page.set_default_timeout(page_ms)
                expect.set_options(timeout=page_ms)
                shots = [
                    ("ui-asset-graph.png", lambda p: shot_asset_graph(page, base, p, page_ms)),
                    ("ui-asset-group.png", lambda p: shot_asset_group(page, base, p, page_ms)),
                    ("ui-asset-metadata.png", lambda p: shot_asset_metadata(page, base, month, p)),
                    ("ui-partitions.png", lambda p: shot_partitions(page, base, month, p)),
                    ("site-board.png", lambda p: shot_site_board(page, site, month, p)),
                    ("site-category.png", lambda p: shot_site_category(page, site, month, p)),
                ]
                _take(page, shots, out, logs, args.max_kb * 1000)
            finally:
                browser.close()
    shutil.rmtree(logs, ignore_errors=True)
    print(f"done in {time.monotonic() - started:.0f}s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", default="docs/images", help="folder for the PNGs (default docs/images)"
    )
    parser.add_argument(
        "--month", default="2024-03", help="the month shown, YYYY-MM (default 2024-03)"
    )
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds each server may take to start (300)"
    )
    parser.add_argument(
        "--page-timeout", type=float, default=90, help="seconds each page may take to show (90)"
    )
    parser.add_argument(
        "--max-kb", type=int, default=400, help="size bound of each PNG (default 400)"
    )
    args = parser.parse_args(argv)
    args.out = str(Path(args.out).resolve())
    try:
        run(args)
    except NotUp as exc:
        print(f"screenshots: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
