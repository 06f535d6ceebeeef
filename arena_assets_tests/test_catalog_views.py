"""Catalog views: every table can be counted by month, also the ones whose files carry no
``month`` column (the bench's prompts, answers and judgments are keyed by bench version)."""

from __future__ import annotations

import duckdb
import polars as pl

from arena_assets.storage import Lake, create_view


def test_every_view_has_the_month_of_its_file(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    for month, n in (("2024-01", 2), ("2024-02", 3)):
        lake.write(
            "bench_prompts",
            month,
            pl.DataFrame({"prompt_id": [f"p{i}" for i in range(n)], "bench_version": ["v1"] * n}),
        )
        lake.write(
            "conversations",
            month,
            pl.DataFrame({"conv_id": [f"c{i}" for i in range(n)], "month": [month] * n}),
        )
    with duckdb.connect(str(tmp_path / "catalog.duckdb")) as con:
        for asset in ("bench_prompts", "conversations"):
            create_view(con, lake, asset)
            counted = con.execute(f'select month, count(*) from "{asset}" group by 1 order by 1')
            assert counted.fetchall() == [("2024-01", 2), ("2024-02", 3)], asset
        # a table with its own month keeps its columns as written; the other gains only month
        assert [r[0] for r in con.execute('describe "conversations"').fetchall()] == [
            "conv_id",
            "month",
        ]
        assert [r[0] for r in con.execute('describe "bench_prompts"').fetchall()] == [
            "prompt_id",
            "bench_version",
            "month",
        ]


def test_publish_remakes_an_older_view_without_month(tmp_path):
    """A catalog made before bench views carried `month` (a plain SELECT * over files with
    no month column) gets the new view on the next materialization, not a stale one."""
    from dagster_duckdb import DuckDBResource

    from arena_assets.defs.resources import ArenaStorage

    lake_root, catalog = str(tmp_path / "lake"), str(tmp_path / "catalog.duckdb")
    lake = Lake(lake_root)
    lake.write(
        "bench_prompts", "2024-01", pl.DataFrame({"prompt_id": ["p0"], "bench_version": ["v1"]})
    )
    with duckdb.connect(catalog) as con:  # the view as an older release made it
        con.execute(
            f"create view bench_prompts as select * from read_parquet('{lake.glob_url('bench_prompts')}')"
        )
    storage = ArenaStorage(catalog=DuckDBResource(database=catalog), lake_root=lake_root)
    storage.publish("bench_prompts")
    with duckdb.connect(catalog) as con:
        assert con.execute("select month, count(*) from bench_prompts group by 1").fetchall() == [
            ("2024-01", 1)
        ]
