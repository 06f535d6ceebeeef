"""The demo's closing summary: rows per asset and month from the catalog views, also for
tables whose rows carry no ``month`` column (the bench tables), where the partition file
names the month. Real Parquet files and a real DuckDB catalog; no Dagster run."""

from __future__ import annotations

import duckdb
import polars as pl

from arena_assets.pipeline.cli import summary
from arena_assets.storage import Lake, create_view


def test_summary_counts_rows_per_month_with_and_without_a_month_column(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    # a table whose rows name their month, and one (like bench_prompts) whose rows do not
    lake.write("conversations", "2024-01", pl.DataFrame({"month": ["2024-01"] * 3, "conv_id": ["a", "b", "c"]}))
    lake.write("conversations", "2024-02", pl.DataFrame({"month": ["2024-02"], "conv_id": ["d"]}))
    lake.write("bench_prompts", "2024-01", pl.DataFrame({"prompt_id": ["p1", "p2"]}))
    lake.write("bench_prompts", "2024-02", pl.DataFrame({"prompt_id": ["p3", "p4", "p5", "p6", "p7"]}))
    catalog = str(tmp_path / "arena.duckdb")
    with duckdb.connect(catalog) as con:
        for asset in ("conversations", "bench_prompts"):
            create_view(con, lake, asset)

    text = summary(catalog, lake.root, str(tmp_path / "raw"))

    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("  ")}
    assert lines["conversations"].split(None, 1)[1] == "2024-01: 3, 2024-02: 1"
    assert lines["bench_prompts"].split(None, 1)[1] == "2024-01: 2, 2024-02: 5"
