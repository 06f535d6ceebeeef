"""Where the leaderboard site lives and how it gets there: the publishing order and what a
reader sees when a build dies mid-way, the instance's pool limit, an S3 site root, the
command line (dry run, one-line errors), the library without Dagster, the independence of
the FastChat reference and the figures drawn in worker processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


# -- where the site lives, and the command line ----------------------------------------------
def _catalog_folder(folder: Path, models: int) -> Path:
    folder.mkdir()
    board = {
        f"m{i}": {
            "rating": 1100.0 - 10 * i,
            "rating_q975": 1105.0 - 10 * i,
            "rating_q025": 1095.0 - 10 * i,
        }
        for i in range(models)
    }
    (folder / "leaderboard-text.json").write_text(json.dumps({"full": board, "coding": board}))
    return folder


class _Crash(Exception):
    pass


def _links(html: str) -> set[str]:
    import re

    return {
        m
        for m in re.findall(r'(?:href|src)="([^"#?]+)', html)
        if "://" not in m and not m.startswith(("mailto:", "data:"))
    }


def _reachable(root: Path, start: Path) -> list[Path]:
    """The pages a reader reaches from ``start`` by following links."""
    seen, todo = set(), [start.resolve()]
    while todo:
        page = todo.pop()
        if page in seen or not page.is_file() or page.suffix != ".html":
            continue
        seen.add(page)
        todo.extend((page.parent / link).resolve() for link in _links(page.read_text()))
    return sorted(seen)


def _dangling(root: Path, page: Path) -> list[str]:
    """Relative links of ``page`` that point to no file under ``root``."""
    return sorted(
        link for link in _links(page.read_text()) if not (page.parent / link).resolve().is_file()
    )


def test_publish_writes_pages_before_what_links_them_and_a_crash_hides_nothing(tmp_path):
    """The order of a month's writes (leaves, board pages, the month's index, its summary,
    then the root's pages, stale files last, once the new history no longer links them), and what a reader sees if the build dies
    after any one write: the root's index lists only complete months, and neither it nor
    the month's index links to a file that is not there, on a first build (no month yet)
    and on a rebuild that adds a board and drops three model pages."""
    import shutil

    from arena_assets.site.build import build_month
    from arena_assets.site.publish import SiteRoot, publish_month
    from arena_assets.site.published import catalog_site

    builds = []
    for models, boards in ((12, ("full", "coding")), (9, ("full", "coding", "math"))):
        folder = tmp_path / f"catalog-{models}"
        _catalog_folder(folder, models)
        data = json.loads((folder / "leaderboard-text.json").read_text())
        (folder / "leaderboard-text.json").write_text(
            json.dumps(dict.fromkeys(boards, data["full"]))
        )
        builds.append(build_month(catalog_site(folder, "2025-12")).files)

    class Recording(SiteRoot):
        def __init__(self, url, crash_after=None):
            super().__init__(url)
            self.log, self.crash_after = [], crash_after

        def write(self, relative, data):
            if self.crash_after is not None and len(self.log) == self.crash_after:
                raise _Crash(relative)
            self.log.append(relative)
            super().write(relative, data)

    # the order, on a rebuild (stale files exist to remove)
    old = tmp_path / "old"
    publish_month(SiteRoot(str(old)), "2025-12", builds[0], "Arena")
    shutil.copytree(old, tmp_path / "order")
    root = Recording(str(tmp_path / "order"))
    removed = []
    original_rm = root.fs.rm
    root.fs.rm = lambda path, *a, **k: (
        removed.append((len(root.log), path)),
        original_rm(path, *a, **k),
    )
    publish_month(root, "2025-12", builds[1], "Arena")
    month = [w.split("/", 1)[1] for w in root.log if w.startswith("2025-12/")]
    before = {
        str(p.relative_to(old / "2025-12")) for p in (old / "2025-12").rglob("*") if p.is_file()
    }
    added = [n for n in month if n not in before]
    assert month[-2:] == ["index.html", "summary.json"] and "math.html" in added
    assert month[: len(added)] == added  # the new files first: nothing published links them
    for part in (month[: len(added)], month[len(added) : -2]):  # leaves before board pages
        board = [n.endswith(".html") and "/" not in n for n in part]
        assert board == sorted(board)
    assert root.log.index("index.html") > root.log.index("2025-12/summary.json")
    assert root.log[-1] == "index.html"  # the root's index, after its history and assets
    assert removed and all(at == len(root.log) for at, _ in removed)  # stale: after all
    writes = len(root.log)
    assert writes > 20

    # a crash after each write, on a first build and on a rebuild
    for before in (None, old):
        for crash_after in range(writes):
            site = tmp_path / f"crash-{crash_after}-{before is not None}"
            if before is not None:
                shutil.copytree(before, site)
            with pytest.raises(_Crash):
                publish_month(Recording(str(site), crash_after), "2025-12", builds[1], "Arena")
            assert not list(site.rglob("*.tmp"))
            summary = site / "2025-12" / "summary.json"
            index = site / "index.html"
            if before is None and not summary.exists():
                assert not index.exists() or "2025-12/index.html" not in index.read_text()
            if index.exists():
                for page in _reachable(site, index):
                    assert _dangling(site, page) == [], (crash_after, page)


def test_make_install_limits_the_site_pool_to_one_build(tmp_path):
    """``leaderboard_site`` runs in pool ``site_root``; the instance's limit of 1 is set as
    ``make install`` sets it (the project's dagster.yaml, then the pools module) and read
    back by a new instance object from the same DAGSTER_HOME."""
    import os
    import shutil
    import subprocess
    import sys

    import dagster as dg

    from arena_assets.definitions import defs

    node = defs().resolve_asset_graph().get(dg.AssetKey("leaderboard_site"))
    assert node.pools == {"site_root"}
    shutil.copy(Path(__file__).parents[1] / "dagster.yaml", tmp_path / "dagster.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "arena_assets.defs.site.pools"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "pool limits on the instance: site_root=1"
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.event_log_storage.get_concurrency_info("site_root").slot_count == 1


def _site_cli(*args: str, env: dict | None = None):
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "arena_assets.cli", "site", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_site_on_s3_is_the_same_bytes_as_on_disk(arena_env, s3_endpoint, tmp_path):
    import boto3
    import fsspec

    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="site")
    s3 = {
        "ARENA_S3_ENDPOINT_URL": s3_endpoint,
        "ARENA_S3_ACCESS_KEY_ID": "test",
        "ARENA_S3_SECRET_ACCESS_KEY": "test",
        "ARENA_S3_REGION": "us-east-1",
    }
    local = tmp_path / "local"
    folders = {n: _catalog_folder(tmp_path / f"catalog-{n}", n) for n in (12, 9)}
    for models, root in ((12, str(local)), (12, "s3://site/pub"), (9, "s3://site/pub")):
        folder = folders[models]
        done = _site_cli("--month", "2025-12", "--catalog", str(folder), "--root", root, env=s3)
        assert done.returncode == 0, done.stderr[-2000:]
        if root == str(local):
            expected = {
                str(p.relative_to(local)): p.read_bytes() for p in local.rglob("*") if p.is_file()
            }
        elif models == 12:
            fs = fsspec.filesystem(
                "s3",
                key="test",
                secret="test",
                client_kwargs={"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
            )
            got = {p[len("site/pub/") :]: fs.cat(p) for p in fs.find("site/pub")}
            assert got == expected and "2025-12/models/m11.html" in got
    fs.invalidate_cache()
    after = {p[len("site/pub/") :] for p in fs.find("site/pub")}
    assert "2025-12/models/m11.html" not in after and "2025-12/models/m8.html" in after
    assert not [p for p in after if p.endswith(".tmp")]  # a rebuild leaves exactly the build
    refused = _site_cli("--month", "2025-12", "--root", "s3://site/pub", "--serve", env=s3)
    assert refused.returncode != 0 and refused.stderr.strip().startswith(
        "arena-assets site: --serve needs a local site root"
    )


def test_site_dry_run_lists_what_it_would_overwrite_and_writes_nothing(arena_env, tmp_path):
    root = tmp_path / "site"
    folders = {n: _catalog_folder(tmp_path / f"catalog-{n}", n) for n in (12, 9)}
    fresh = _site_cli(
        "--month", "2025-12", "--catalog", str(folders[12]), "--root", str(root), "--dry-run"
    )
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert "overwrites 0 existing file(s): 0 replaced, 0 removed;" in fresh.stdout
    assert not root.exists()
    assert (
        _site_cli(
            "--month", "2025-12", "--catalog", str(folders[12]), "--root", str(root)
        ).returncode
        == 0
    )
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    same = _site_cli(
        "--month", "2025-12", "--catalog", str(folders[12]), "--root", str(root), "--dry-run"
    )
    assert "overwrites 0 existing file(s)" in same.stdout and " 0 new, " in same.stdout
    smaller = _site_cli(
        "--month", "2025-12", "--catalog", str(folders[9]), "--root", str(root), "--dry-run"
    )
    assert smaller.returncode == 0, smaller.stderr[-2000:]
    removed = [
        line.split("/2025-12/", 1)[1]
        for line in smaller.stdout.splitlines()
        if line.startswith("  removed ")
    ]
    assert removed == ["models/m10.html", "models/m11.html", "models/m9.html"]
    replaced = [line for line in smaller.stdout.splitlines() if line.startswith("  replaced ")]
    assert any(line.endswith("/2025-12/index.html") for line in replaced)
    assert f"overwrites {len(replaced) + 3} existing file(s)" in smaller.stdout
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    ("month", "says"),
    [
        ("2024-13", "there is no month 13"),
        ("2024-1", "is not a month"),
        ("2031-01", "no arena_leaderboard for 2031-01"),
    ],
)
def test_site_command_refuses_in_one_line(arena_env, month, says):
    done = _site_cli("--month", month)
    line = done.stderr.strip()
    assert done.returncode != 0 and "\n" not in line and says in line, line


def test_site_library_is_pure():
    """The pages, tables and figures are a library: usable without Dagster."""
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; import arena_assets.site.build, "
            "arena_assets.site.publish, arena_assets.site.published, arena_assets.pipeline.site; "
            "print('dagster' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr[-2000:]


def test_the_fastchat_reference_is_independent_of_the_code_it_checks():
    """``fastchat_reference`` loads nothing of arena_assets (it reads the lake's Parquet
    files itself), so a bug shared with the site cannot make both sides agree."""
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, arena_assets_tests.fastchat_reference; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'arena_assets'))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr[-2000:]


def test_figures_are_the_same_bytes_from_worker_processes():
    from arena_assets.site.draw import POOL_MIN_JOBS, draw_all

    jobs = [
        (
            f"plots/{i}.svg",
            "bars",
            dict(
                models=[f"m{j}" for j in range(i % 7 + 2)],
                values=[0.1 * j for j in range(i % 7 + 2)],
                title=f"<figure {i}>",
                ylabel="rate",
            ),
        )
        for i in range(POOL_MIN_JOBS)
    ]
    here, pooled = draw_all(jobs, workers=1), draw_all(jobs, workers=2)
    assert here == pooled and len(here) == POOL_MIN_JOBS
    assert b"&lt;figure 3&gt;" in here["plots/3.svg"]  # SVG text escaped


def test_votes_accounted_warns_without_a_board_and_never_passes_a_bad_card():
    import dagster as dg

    from arena_assets.defs.site.assets import votes_check

    assert votes_check(True, []).passed
    failed = votes_check(False, ["2024-03"])
    assert not failed.passed and failed.severity == dg.AssetCheckSeverity.ERROR
    unchecked = votes_check(True, ["2024-03"])
    assert not unchecked.passed and unchecked.severity == dg.AssetCheckSeverity.WARN
    assert unchecked.metadata["not_checked"].value == ["2024-03"]
