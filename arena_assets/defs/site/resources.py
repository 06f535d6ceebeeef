"""The site stage's settings: where the public leaderboard site is written and how."""

from __future__ import annotations

import os

import dagster as dg


class SiteSettings(dg.ConfigurableResource):
    """Where the monthly leaderboard site goes (a folder or s3://bucket/prefix), where
    readers reach it, and what its pages show. `arena-assets site` reads the same
    variables (``site.cli.site_settings``)."""

    site_root: str = "./data/site"
    site_name: str = "Arena leaderboard"
    # the base URL the site is served at (https://leaderboard.example.org/): links in
    # metadata point there; empty = the root itself (a file:// URL for a local folder)
    public_url: str = ""
    # a model with no vote in this many months up to the page's month counts as deprecated
    # (as does one the registry marks `"deprecated": true`); 0 = the registry alone
    deprecate_after_months: int = 2
    plot_top: int = 30  # models in the interval and win-rate figures
    heatmap_top: int = 20  # models in the win-fraction and battle-count heatmaps
    # processes drawing the figures (0 = one per core, at most 4)
    figure_workers: int = 0

    def options(self):
        from arena_assets.site.build import SiteOptions

        workers = self.figure_workers or min(4, os.cpu_count() or 1)
        return SiteOptions(
            site_name=self.site_name,
            plot_top=self.plot_top,
            heatmap_top=self.heatmap_top,
            workers=workers,
        )

    def page_url(self, month: str, board_page: str = "index.html") -> str:
        """Where the month's page of a board is (or will be, once the site is built)."""
        from arena_assets.site.publish import page_address

        return page_address(self.site_root, month, board_page, self.public_url)


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "site_settings": SiteSettings(
                site_root=dg.EnvVar("ARENA_SITE_ROOT"),
                site_name=dg.EnvVar("ARENA_SITE_NAME"),
                public_url=dg.EnvVar("ARENA_SITE_PUBLIC_URL"),
                deprecate_after_months=dg.EnvVar.int("ARENA_SITE_DEPRECATE_AFTER_MONTHS"),
                plot_top=dg.EnvVar.int("ARENA_SITE_PLOT_TOP"),
                heatmap_top=dg.EnvVar.int("ARENA_SITE_HEATMAP_TOP"),
            )
        }
    )
