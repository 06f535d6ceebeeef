"""The leaderboard site: a month's boards as static pages (no Dagster here).

``build.build_month`` turns a ``MonthSite`` (boards, registry, history, bench, data card)
into files; ``root.build_root`` makes the index and the history of every month;
``publish.SiteRoot`` writes them to a folder or ``s3://``; ``published.catalog_site``
reads LMArena's arena-catalog files into a ``MonthSite``. The pipeline step that reads the
lake is ``arena_assets.pipeline.site``; the CLI ``arena-assets site``.
"""
