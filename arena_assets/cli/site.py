"""`arena-assets site`: build a month of the leaderboard site from the lake (the same step
as the `leaderboard_site` asset, without Dagster), or render published arena-catalog
files; `--serve` then serves the site on loopback."""

from __future__ import annotations

import argparse


def _serve(folder: str, host: str, port: int, month: str) -> int:
    import functools
    import http.server

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=folder)
    with http.server.ThreadingHTTPServer((host, port), handler) as server:
        where = f"http://{host}:{server.server_address[1]}"
        print(f"Serving {folder} on {where}/{month}/index.html (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


def _int_setting(name: str, default: int) -> int:
    from arena_assets.envfile import setting

    value = setting(name, str(default))
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise SystemExit(f"arena-assets site: {name}={value!r} is not a whole number >= 0")
    return number


def site_settings() -> dict:
    """The site's settings from the shell and ``.env``: the same variables the Dagster
    resource (``defs/resources.py``) binds, with its defaults."""
    from arena_assets.envfile import setting

    return {
        "root": setting("ARENA_SITE_ROOT", "./data/site"),
        "site_name": setting("ARENA_SITE_NAME", "") or "Arena leaderboard",
        "public_url": setting("ARENA_SITE_PUBLIC_URL", ""),
        "deprecate_after_months": _int_setting("ARENA_SITE_DEPRECATE_AFTER_MONTHS", 2),
        "plot_top": _int_setting("ARENA_SITE_PLOT_TOP", 30),
        "heatmap_top": _int_setting("ARENA_SITE_HEATMAP_TOP", 20),
    }


def run_site(args: argparse.Namespace) -> int:
    from arena_assets.envfile import setting
    from arena_assets.pipeline.backfill import MonthError, parse_month

    try:
        month = parse_month(args.month, "--month")
    except MonthError as exc:
        raise SystemExit(f"arena-assets site: {exc}") from None
    settings = site_settings()
    root_url = args.root or settings["root"]
    if args.serve and "://" in root_url:
        raise SystemExit(
            f"arena-assets site: --serve needs a local site root, not {root_url} "
            "(any static host serves an s3:// site as it is)"
        )
    from arena_assets.cli.common import storage_options
    from arena_assets.site.build import SiteOptions
    from arena_assets.site.publish import SiteRoot

    options = SiteOptions(
        site_name=settings["site_name"],
        plot_top=settings["plot_top"],
        heatmap_top=settings["heatmap_top"],
        workers=args.workers,
    )
    root = SiteRoot(root_url, storage_options(root_url), public_url=settings["public_url"])
    if args.dry_run:
        return _dry_run(args, month, root, settings, options)
    if args.catalog:
        from arena_assets.site.published import publish_catalog

        written, url = publish_catalog(args.catalog, month, root, options)
        print(f"{month}: published boards of {args.catalog} -> {url} ({written:,} bytes)")
    else:
        from arena_assets.ingest.sources import load_model_records
        from arena_assets.pipeline.site import leaderboard_site_month, registry_info
        from arena_assets.storage import Lake

        lake_root = args.lake or setting("ARENA_LAKE_ROOT", "./data/lake")
        raw_root = setting("ARENA_RAW_ROOT", "./data/raw")
        lake = Lake(lake_root, storage_options(lake_root))
        try:
            registry = registry_info(load_model_records(raw_root, storage_options(raw_root)))
            step = leaderboard_site_month(
                lake,
                month,
                root,
                registry=registry,
                min_votes=int(setting("ARENA_MIN_BATTLES", "300") or 300),
                deprecate_after_months=settings["deprecate_after_months"],
                options=options,
            )
        except (FileNotFoundError, ValueError) as exc:
            raise SystemExit(f"arena-assets site: {exc}") from None
        print(
            f"{month}: {step.files} files, {step.bytes_written:,} bytes, "
            f"{len(step.boards)} boards, {step.models} model pages -> {step.page_url}"
        )
        print(f"  {card_line(step.data_card, month)}; seconds {step.seconds}")
        for board, (site_votes, used) in step.mismatched_boards.items():
            print(
                f"  WARNING {board}: the site counts {site_votes:,} votes, the leaderboard "
                f"used {used:,}: rematerialize arena_leaderboard for {month}"
            )
    if args.serve:
        return _serve(root.path, args.host, args.port, month)
    return 0


def _dry_run(args: argparse.Namespace, month: str, root, settings: dict, options) -> int:
    """Build the month in memory and say what publishing it would overwrite; write nothing."""
    from arena_assets.cli.common import storage_options
    from arena_assets.envfile import setting
    from arena_assets.site.build import build_month
    from arena_assets.site.publish import month_changes

    if args.catalog:
        from arena_assets.site.published import catalog_site

        site = catalog_site(args.catalog, month)
    else:
        from arena_assets.ingest.sources import load_model_records
        from arena_assets.pipeline.site import read_month_site, registry_info
        from arena_assets.storage import Lake

        lake_root = args.lake or setting("ARENA_LAKE_ROOT", "./data/lake")
        raw_root = setting("ARENA_RAW_ROOT", "./data/raw")
        try:
            site, _ = read_month_site(
                Lake(lake_root, storage_options(lake_root)),
                month,
                registry=registry_info(load_model_records(raw_root, storage_options(raw_root))),
                min_votes=int(setting("ARENA_MIN_BATTLES", "300") or 300),
                deprecate_after_months=settings["deprecate_after_months"],
            )
        except (FileNotFoundError, ValueError) as exc:
            raise SystemExit(f"arena-assets site: {exc}") from None
    changes = month_changes(root, month, build_month(site, options).files)
    folder = f"{root.url}/{month}/"
    overwrites = len(changes["replaced"]) + len(changes["removed"])
    print(f"dry run, nothing written: {month} -> {folder}")
    print(
        f"  overwrites {overwrites} existing file(s): {len(changes['replaced'])} replaced, "
        f"{len(changes['removed'])} removed; {len(changes['new'])} new, "
        f"{len(changes['unchanged'])} unchanged"
    )
    for kind in ("replaced", "removed"):
        for name in changes[kind]:
            print(f"  {kind} {folder}{name}")
    months = root.months()
    print(
        f"  rebuilds {root.url}/index.html and history.html from "
        f"{len(set(months) | {month})} month(s)"
    )
    return 0


def card_line(card: dict | None, month: str) -> str:
    """The data card in one line (``not checked`` without an overall board)."""
    if card is None:
        return f"votes up to {month}: not checked (no overall board)"
    from arena_assets.site.extras import card_sentence

    c = card["up_to_month"]
    return (
        f"votes up to {month}: {c['votes_in']:,} in = {c['ingest_rejects']:,} ingest "
        f"rejects + {c['shown']:,} on the overall board + {sum(c['filtered'].values()):,} "
        f"filtered + {c['kept_without_winner'] + c['kept_off_board']:,} kept but unusable"
        f" -- {card_sentence(card)}"
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "site",
        help="build a month of the static leaderboard site (ARENA_SITE_ROOT)",
        description="Writes <root>/<MONTH>/ (a page per board and per model, SVG figures, "
        "downloads) and rebuilds the root's index and history. Reads the lake "
        "(ARENA_LAKE_ROOT), or with --catalog the published arena-catalog JSON files.",
    )
    p.add_argument("--month", required=True, help="the month, YYYY-MM")
    p.add_argument(
        "--serve", action="store_true", help="then serve the site on http://HOST:PORT until Ctrl-C"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 = any free port")
    p.add_argument("--root", default=None, help="site root (default ARENA_SITE_ROOT)")
    p.add_argument("--lake", default=None, help="lake root (default ARENA_LAKE_ROOT)")
    p.add_argument(
        "--catalog",
        default=None,
        metavar="DIR",
        help="render the leaderboard-*.json files of an arena-catalog data folder "
        "as the month's boards instead of the lake",
    )
    p.add_argument("--workers", type=int, default=2, help="processes drawing the figures")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="build the month in memory and list the files under the site root it "
        "would overwrite or remove; write nothing",
    )
    p.set_defaults(func=run_site)
