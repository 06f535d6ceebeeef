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


def run_site(args: argparse.Namespace) -> int:
    from arena_assets.envfile import setting
    from arena_assets.pipeline.backfill import MonthError, parse_month

    try:
        month = parse_month(args.month, "--month")
    except MonthError as exc:
        raise SystemExit(f"arena-assets site: {exc}") from None
    root_url = args.root or setting("ARENA_SITE_ROOT", "./data/site")
    if args.serve and "://" in root_url:
        raise SystemExit(f"arena-assets site: --serve needs a local site root, not {root_url} "
                         "(any static host serves an s3:// site as it is)")
    from arena_assets.pipeline.cli import _storage_options
    from arena_assets.site.build import SiteOptions
    from arena_assets.site.publish import SiteRoot

    options = SiteOptions(site_name=setting("ARENA_SITE_NAME", "") or "Arena leaderboard",
                          workers=args.workers)
    root = SiteRoot(root_url, _storage_options(root_url))
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
        lake = Lake(lake_root, _storage_options(lake_root))
        try:
            registry = registry_info(load_model_records(raw_root, _storage_options(raw_root)))
            step = leaderboard_site_month(
                lake, month, root, registry=registry,
                min_votes=int(setting("ARENA_MIN_BATTLES", "300") or 300), options=options)
        except (FileNotFoundError, ValueError) as exc:
            raise SystemExit(f"arena-assets site: {exc}") from None
        card = step.data_card["up_to_month"]
        print(f"{month}: {step.files} files, {step.bytes_written:,} bytes, "
              f"{len(step.boards)} boards, {step.models} model pages -> {step.page_url}")
        print(f"  votes up to {month}: {card.get('votes_in', 0):,} in = "
              f"{card.get('shown', 0):,} on the overall board + "
              f"{sum(card.get('filtered', {}).values()):,} filtered + "
              f"{card.get('kept_without_winner', 0) + card.get('kept_off_board', 0):,} kept "
              f"but unusable; seconds {step.seconds}")
        for board, (site_votes, used) in step.mismatched_boards.items():
            print(f"  WARNING {board}: the site counts {site_votes:,} votes, the leaderboard "
                  f"used {used:,}: rematerialize arena_leaderboard for {month}")
    if args.serve:
        return _serve(root.path, args.host, args.port, month)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "site", help="build a month of the static leaderboard site (ARENA_SITE_ROOT)",
        description="Writes <root>/<MONTH>/ (a page per board and per model, SVG figures, "
        "downloads) and rebuilds the root's index and history. Reads the lake "
        "(ARENA_LAKE_ROOT), or with --catalog the published arena-catalog JSON files.")
    p.add_argument("--month", required=True, help="the month, YYYY-MM")
    p.add_argument("--serve", action="store_true",
                   help="then serve the site on http://HOST:PORT until Ctrl-C")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 = any free port")
    p.add_argument("--root", default=None, help="site root (default ARENA_SITE_ROOT)")
    p.add_argument("--lake", default=None, help="lake root (default ARENA_LAKE_ROOT)")
    p.add_argument("--catalog", default=None, metavar="DIR",
                   help="render the leaderboard-*.json files of an arena-catalog data folder "
                   "as the month's boards instead of the lake")
    p.add_argument("--workers", type=int, default=2, help="processes drawing the figures")
    p.set_defaults(func=run_site)
