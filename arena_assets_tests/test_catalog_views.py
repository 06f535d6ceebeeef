"""Catalog views: every table can be counted by month, also the ones whose files carry no
``month`` column (the bench's prompts, answers and judgments are keyed by bench version)."""

from __future__ import annotations

import duckdb
import polars as pl

from arena_assets.storage import Lake, create_view


def test_every_view_has_the_month_of_its_file(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    for month, n in (("2024-01", 2), ("2024-02", 3)):
        lake.write("bench_prompts", month, pl.DataFrame({"prompt_id": [f"p{i}" for i in range(n)],
                                                         "bench_version": ["v1"] * n}))
        lake.write("conversations", month, pl.DataFrame({"conv_id": [f"c{i}" for i in range(n)],
                                                         "month": [month] * n}))
    with duckdb.connect(str(tmp_path / "catalog.duckdb")) as con:
        for asset in ("bench_prompts", "conversations"):
            create_view(con, lake, asset)
            counted = con.execute(f'select month, count(*) from "{asset}" group by 1 order by 1')
            assert counted.fetchall() == [("2024-01", 2), ("2024-02", 3)], asset
        # a table with its own month keeps its columns as written; the other gains only month
        assert [r[0] for r in con.execute('describe "conversations"').fetchall()] == ["conv_id", "month"]
        assert [r[0] for r in con.execute('describe "bench_prompts"').fetchall()] == [
            "prompt_id", "bench_version", "month"]
