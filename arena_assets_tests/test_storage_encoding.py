"""Lake Parquet encoding: dictionaries only on low-cardinality columns, same rows back
through polars and DuckDB, the same bytes for the same batches."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq

from arena_assets.ingest.schema import RAW_LOGS_SCHEMA
from arena_assets.pipeline.clean import CONVERSATIONS_ARROW
from arena_assets.storage import Lake, dictionary_columns


def _raw(rows: int) -> pl.DataFrame:
    base = datetime(2024, 5, 1, tzinfo=UTC)
    return pl.DataFrame(
        [
            {
                "month": "2024-05",
                "event_id": f"e{i}",
                "source_file": f"d{i % 3}.jsonl",
                "line_no": i + 1,
                "tstamp": base,
                "type": "chat",
                "anony": i % 2 == 0,
                "user_hash": f"u{i % 11}",
                "conv_id_a": f"c{i}",
                "model_a": f"m{i % 4}",
                "messages_a": [
                    {"role": "user", "content": f"free text number {i} " * 3, "images": []}
                ],
                "conv_id_b": None,
                "model_b": None,
                "messages_b": None,
                "source_format": "native",
            }
            for i in range(rows)
        ],
        schema=RAW_LOGS_SCHEMA,
    )


def test_dictionary_columns_are_the_low_cardinality_leaves() -> None:
    raw = _raw(1).to_arrow().schema
    assert dictionary_columns(raw) == [
        "month",
        "source_file",
        "type",
        "model_a",
        "messages_a.list.element.role",
        "model_b",
        "messages_b.list.element.role",
        "source_format",
    ]
    assert dictionary_columns(CONVERSATIONS_ARROW) == [
        "month",
        "model",
        "messages.list.element.role",
        "language",
    ]


def test_write_batches_encodes_by_column_and_is_deterministic(tmp_path: Path) -> None:
    frame = _raw(3000)
    paths = []
    for run in ("one", "two"):
        lake = Lake(str(tmp_path / run))
        parts = [frame.slice(i, 1000) for i in range(0, frame.height, 1000)]
        assert lake.write_batches("raw_logs", "2024-05", frame.to_arrow().schema, parts) == 3000
        paths.append(Path(lake.partition_path("raw_logs", "2024-05")))
    assert paths[0].read_bytes() == paths[1].read_bytes()

    meta = pq.ParquetFile(paths[0]).metadata
    encodings = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).encodings
        for i in range(meta.num_columns)
    }
    dictionary = {path for path, used in encodings.items() if "RLE_DICTIONARY" in used}
    assert dictionary == set(dictionary_columns(frame.to_arrow().schema))
    assert "messages_a.list.element.content" not in dictionary and "event_id" not in dictionary

    # every reader of the lake gets the same rows: polars, DuckDB (the catalog views, clean)
    assert pl.read_parquet(paths[0]).equals(frame)
    with duckdb.connect() as con:
        back = con.execute(f"select * from read_parquet('{paths[0]}') order by line_no").pl()
    assert back.cast(RAW_LOGS_SCHEMA).equals(frame)
