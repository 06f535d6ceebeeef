"""How the lake writes and filters Parquet: compression, row groups, which columns get a
dictionary page, and pyarrow-style filter triples as polars expressions."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl
import pyarrow as pa

PARQUET_COMPRESSION = "zstd"
ROW_GROUP_ROWS = 100_000

# Columns whose values repeat a few dozen times over (months, files, formats, event types,
# model names, message roles, languages, reasons, categories): a dictionary page keeps them
# small and cheap to decode. Everything else is written plain and left to zstd: message text,
# prompts and ids hardly repeat within a page, so a dictionary is built for nothing (pyarrow
# hashes every value, overflows the 1 MB dictionary page and falls back to plain anyway),
# and numbers and timestamps compress as well without one. Measured on the 200k month's
# raw_logs (520,965 rows; full read, CPU-s, median of 5, DuckDB / polars / pyarrow):
# a dictionary on every column 63.0 MB, 3.31 / 1.08 / 2.12; on these only 59.7 MB,
# 3.11 / 1.14 / 1.92; on none 60.4 MB, 3.68 / 1.36 / 2.24.
# A column is matched by its own name, also inside nested types (``messages_a[].role``).
DICTIONARY_COLUMNS = frozenset(
    {
        "month",
        "snapshot_month",
        "source_file",
        "source_format",
        "type",
        "reason",
        "model",
        "model_a",
        "model_b",
        "role",
        "language",
        "winner",
        "category",
        "board",
        "bench_kind",
        "bench_version",
        "ci_method",
        "cluster_name",
        "name_source",
    }
)


def _leaf_paths(field: pa.Field, prefix: str = "") -> Iterator[tuple[str, pa.Field]]:
    """Parquet column paths of a field's leaves, as pyarrow names them (lists as
    ``<name>.list.element``, the compliant layout it writes by default)."""
    path = f"{prefix}{field.name}"
    kind = field.type
    if pa.types.is_struct(kind):
        for i in range(kind.num_fields):
            yield from _leaf_paths(kind.field(i), path + ".")
    elif (
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    ):
        yield from _leaf_paths(kind.value_field.with_name("element"), path + ".list.")
    else:
        yield path, field


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """The leaf columns of ``schema`` to dictionary-encode (see DICTIONARY_COLUMNS)."""
    return [
        path
        for field in schema
        for path, leaf in _leaf_paths(field)
        if leaf.name in DICTIONARY_COLUMNS or pa.types.is_dictionary(leaf.type)
    ]


def filter_expression(triple: tuple) -> pl.Expr:
    """One of pyarrow's filter triples as a polars expression, with pyarrow's nulls: a
    null compares to nothing, and is in a list only when the list holds None."""
    if not (isinstance(triple, tuple) and len(triple) == 3 and isinstance(triple[0], str)):
        raise ValueError(
            f"filters: a list of (column, op, value) triples, all true; got {triple!r}"
        )
    column, op, value = triple
    col = pl.col(column)
    if op in ("in", "not in"):
        values = list(value)
        known = [v for v in values if v is not None]
        hit = col.is_in(pl.Series(known).implode()).fill_null(False) if known else pl.lit(False)
        if len(known) < len(values):  # None in the list: pyarrow's null rows match it
            hit = hit | col.is_null()
        return hit if op == "in" else ~hit
    compare = {
        "=": col.__eq__,
        "==": col.__eq__,
        "!=": col.__ne__,
        "<": col.__lt__,
        "<=": col.__le__,
        ">": col.__gt__,
        ">=": col.__ge__,
    }
    if op not in compare:
        raise ValueError(f"unsupported filter operator {op!r} on {column!r}")
    return compare[op](value)
