"""The site stage's settings: where the public leaderboard site is written and how."""

from __future__ import annotations

import os

import dagster as dg


class SiteSettings(dg.ConfigurableResource):
    """Where the monthly leaderboard site goes (a folder or s3://bucket/prefix) and what
    its pages show."""

    site_root: str = "./data/site"
    site_name: str = "Arena leaderboard"
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
        return SiteOptions(site_name=self.site_name, plot_top=self.plot_top,
                           heatmap_top=self.heatmap_top, workers=workers)

    def page_url(self, month: str, board_page: str = "index.html") -> str:
        """Where the month's page of a board is (or will be, once the site is built)."""
        root = self.site_root.rstrip("/")
        if "://" in root:
            return f"{root}/{month}/{board_page}"
        from pathlib import Path

        return (Path(root) / month / board_page).resolve().as_uri()


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"site_settings": SiteSettings(
        site_root=dg.EnvVar("ARENA_SITE_ROOT"),
        site_name=dg.EnvVar("ARENA_SITE_NAME"),
    )})
