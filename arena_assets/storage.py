"""The lake: one Parquet file per asset and month, on any fsspec filesystem.

Layout under the root URL (``./data/lake`` or ``s3://bucket/prefix``)::

    <root>/<asset>/<YYYY-MM>.parquet       # the system of record, one file per partition
    <root>/<asset>/_tmp/<YYYY-MM>.<host~pid~start>.<id>   # in-flight writes, never matched by the views

Why one file per partition: several months can be written at once by different processes
with no shared lock (DuckDB's single-writer database file would serialise them), a rerun
replaces exactly one object, and local and S3 differ only in the URL.

Writes are atomic: the data goes to a temporary name first and is renamed into place, so a
crash leaves the previous version intact. On S3, "rename" is copy + delete, and the final
PUT/copy is itself atomic, which gives the same guarantee for readers.

Nothing lost: a partition that holds rows is never replaced by an empty one (an input that
vanished, a wrong raw root) unless the lake was opened with ``allow_empty=True`` (the
``ARENA_ALLOW_EMPTY_MONTH`` setting) or the write says an empty result is normal for it;
a partition that is not there is reported as such (``MissingPartitionError``), naming the
file. Temporary files of writers that died are swept (``arena_assets.inflight``).

No Dagster here; the Dagster resource in ``arena_assets.defs.resources`` wraps this class.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import duckdb
import fsspec
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from arena_assets import inflight

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


class EmptyPartitionError(RuntimeError):
    """A write would replace a partition that holds rows with an empty one."""


class MissingPartitionError(FileNotFoundError):
    """A partition a step reads is not in the lake."""


@dataclass
class Lake:
    """Parquet files per (asset, month) under ``root`` (any fsspec URL).

    ``allow_empty``: let an empty result replace a partition that has rows (off by default:
    an empty month is far more often an input that went missing than a real month)."""

    root: str
    storage_options: dict[str, Any] = field(default_factory=dict)
    allow_empty: bool = False
    # catalog views name the files of a local lake relative to this folder (the project's,
    # where the catalog is opened from) when the lake lies inside it, so a copied or moved
    # checkout reads its own lake; None = absolute paths
    relative_to: str | None = None

    def __post_init__(self) -> None:
        self.root = self.root.rstrip("/")
        self.fs, self._root_path = fsspec.core.url_to_fs(self.root, **self.storage_options)

    # -- paths ---------------------------------------------------------------------------
    def url(self, asset: str, month: str) -> str:
        """Full URL of one partition file (what DuckDB and users see)."""
        return f"{self.root}/{asset}/{month}.parquet"

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    def glob_url(self, asset: str) -> str:
        """The files of ``asset`` as a catalog view names them (see ``relative_to``)."""
        base = self._root_path if self.is_local else self.root
        if self.is_local and self.relative_to:
            project = os.path.realpath(self.relative_to)
            inside = os.path.realpath(self._root_path)
            if os.path.commonpath([project, inside]) == project:
                base = os.path.relpath(inside, project)
        return f"{base}/{asset}/*.parquet"

    def _path(self, asset: str, month: str) -> str:
        return f"{self._root_path}/{asset}/{month}.parquet"

    def folder(self, name: str) -> str:
        """A folder under the root on ``self.fs`` (no protocol), e.g. the lake's own
        ``_forget`` journal."""
        return f"{self._root_path}/{name}"

    def partition_path(self, asset: str, month: str) -> str:
        """The partition's path on ``self.fs`` (no protocol), for deletes and raw reads."""
        return self._path(asset, month)

    def assets(self) -> list[str]:
        """Asset folders under the root (underscore folders are the lake's own files)."""
        if not self.fs.exists(self._root_path):
            return []
        names = (
            p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(self._root_path, detail=False)
        )
        return sorted(
            n
            for n in names
            if not n.startswith(("_", ".")) and self.fs.isdir(f"{self._root_path}/{n}")
        )

    def exists(self, asset: str, month: str) -> bool:
        return self.fs.exists(self._path(asset, month))

    def require(self, asset: str, month: str) -> None:
        """Raise ``MissingPartitionError`` (naming the file) unless the partition exists."""
        if not self.exists(asset, month):
            raise _missing(self, asset, month)

    def months(self, asset: str, upto: str | None = None) -> list[str]:
        """Months that have a file for ``asset`` (those <= ``upto`` if given), sorted."""
        pattern = f"{self._root_path}/{asset}/*.parquet"
        found = sorted(p.rsplit("/", 1)[-1].removesuffix(".parquet") for p in self.fs.glob(pattern))
        return [m for m in found if upto is None or m <= upto]

    # -- writes --------------------------------------------------------------------------
    def rows(self, asset: str, month: str) -> int:
        """Rows of a partition from its footer (0 when it does not exist)."""
        try:
            with self.fs.open(self._path(asset, month), "rb") as fh:
                return pq.ParquetFile(fh).metadata.num_rows
        except FileNotFoundError:
            return 0

    def _check_not_emptied(self, asset: str, month: str, rows: int, empty_ok: bool) -> None:
        if rows or empty_ok or self.allow_empty:
            return
        before = self.rows(asset, month)
        if before:
            raise EmptyPartitionError(
                f"{asset} {month}: the new result is empty but the lake holds {before:,} rows "
                f"({self.url(asset, month)}); kept as it was. An input went missing? Set "
                "ARENA_ALLOW_EMPTY_MONTH=true to replace it with an empty month anyway"
            )

    @contextlib.contextmanager
    def _atomic_target(
        self, asset: str, month: str, empty_ok: bool, guard: Callable[[int], None] | None = None
    ) -> Iterator[list]:
        """Yields ``[tmp path, rows]``: the body writes the file and sets the rows; it is
        renamed into place unless that would empty a partition that had rows, or ``guard``
        (called with the rows) raises."""
        final = self._path(asset, month)
        tmp_dir = f"{self._root_path}/{asset}/_tmp"
        self.fs.makedirs(tmp_dir, exist_ok=True)
        inflight.sweep(self.fs, tmp_dir)  # files of writers that died mid-write
        target = [f"{tmp_dir}/{inflight.temp_name(month)}", 0]
        try:
            try:
                yield target
            except Exception as exc:  # a full disk or a quota: say where
                code = _os_error_code(exc)
                if code is None:
                    raise
                raise OSError(
                    code,
                    f"{os.strerror(code)}: writing {asset} {month} at "
                    f"{target[0]} (lake {self.root})",
                ) from exc
            self._check_not_emptied(asset, month, target[1], empty_ok)
            if guard is not None:
                guard(target[1])
            self.fs.mv(target[0], final)
        finally:
            if self.fs.exists(target[0]):
                self.fs.rm(target[0])

    def write(self, asset: str, month: str, frame: pl.DataFrame, *, empty_ok: bool = False) -> str:
        """Replace the partition with ``frame``; returns its URL. ``empty_ok``: an empty
        frame is a normal result here (e.g. a month without rejected lines).

        Polars' writer already decides dictionary encoding per column from the data (top-level
        columns with few distinct values, never nested text), so no DICTIONARY_COLUMNS here."""
        with self._atomic_target(asset, month, empty_ok) as target:
            with self.fs.open(target[0], "wb") as fh:
                frame.write_parquet(
                    fh,
                    compression=PARQUET_COMPRESSION,
                    row_group_size=ROW_GROUP_ROWS,
                    statistics=True,
                )
            target[1] = frame.height
        return self.url(asset, month)

    def write_blob(self, asset: str, name: str, data: bytes) -> str:
        """A side file of an asset (a figure, a card) under ``<asset>/_files/``; atomic."""
        folder = f"{self._root_path}/{asset}/_files"
        tmp_dir = f"{self._root_path}/{asset}/_tmp"
        self.fs.makedirs(folder, exist_ok=True)
        self.fs.makedirs(tmp_dir, exist_ok=True)
        tmp = f"{tmp_dir}/{inflight.temp_name(name)}"
        with self.fs.open(tmp, "wb") as fh:
            fh.write(data)
        self.fs.mv(tmp, f"{folder}/{name}")
        return f"{self.root}/{asset}/_files/{name}"

    def write_batches(
        self,
        asset: str,
        month: str,
        schema: pa.Schema,
        batches: Iterable[pl.DataFrame | pa.Table],
        *,
        empty_ok: bool = False,
        guard: Callable[[int], None] | None = None,
    ) -> int:
        """Stream batches into the partition file without holding them all; returns rows.
        ``guard(rows)``: the caller's last word before the file replaces the partition (it
        raises to keep the partition as it was)."""
        with (
            self._atomic_target(asset, month, empty_ok, guard) as target,
            self.fs.open(target[0], "wb") as fh,
            pq.ParquetWriter(
                fh,
                schema,
                compression=PARQUET_COMPRESSION,
                use_dictionary=dictionary_columns(schema),
            ) as writer,
        ):
            for batch in batches:
                table = batch.to_arrow() if isinstance(batch, pl.DataFrame) else batch
                if table.num_rows == 0:
                    continue
                writer.write_table(table.cast(schema), row_group_size=ROW_GROUP_ROWS)
                target[1] += table.num_rows
        return target[1]

    # -- reads ---------------------------------------------------------------------------
    def read(
        self,
        asset: str,
        month: str,
        columns: list[str] | None = None,
        filters: list[tuple] | None = None,
    ) -> pl.DataFrame:
        """One partition; ``filters``: (column, op, value) triples, all of them true (as
        pyarrow's), pushed into the Parquet scan. On a local lake polars decodes the other
        columns only for the rows they keep (400 of a 500,000-conversation month's
        conversations with their messages: 0.9 s and 0.75 GB, against 2.5 s and 1.4 GB
        through pyarrow's filter); on an object store pyarrow reads by range."""
        path = self._path(asset, month)
        predicates = [_predicate(f) for f in filters or ()]  # a bad filter: one clear error first
        if filters is not None and self.is_local:
            if not self.fs.exists(path):
                raise _missing(self, asset, month)
            # by path: polars reads the footer and the pages it needs (a file handle it
            # would read whole)
            scan = pl.scan_parquet(path)
            return (
                scan.filter(*predicates)
                .select(columns if columns is not None else scan.collect_schema().names())
                .collect()
            )
        try:
            fh = self.fs.open(path, "rb")
        except FileNotFoundError as exc:
            raise _missing(self, asset, month) from exc
        with fh:
            if filters is None:
                return pl.read_parquet(fh, columns=columns)
            if any(op == "in" and not len(value) for _, op, value in filters):  # pyarrow refuses []
                return pl.from_arrow(pq.read_schema(fh).empty_table()).select(
                    columns if columns is not None else pl.all()
                )
            # object stores: pyarrow fetches the footer and the columns it needs by range
            return pl.from_arrow(pq.read_table(fh, columns=columns, filters=filters))

    def read_months(
        self, asset: str, months: Iterable[str], columns: list[str] | None = None
    ) -> pl.DataFrame:
        """Concatenate several months (missing months are skipped)."""
        frames = [self.read(asset, m, columns) for m in months if self.exists(asset, m)]
        if not frames:
            raise FileNotFoundError(f"no partition of {asset!r} among the requested months")
        return pl.concat(frames, how="vertical_relaxed")


def _os_error_code(exc: BaseException) -> int | None:
    """The errno of an I/O failure that does not name its file: an ``OSError`` without a
    filename, or a writer's error that wraps one (polars: "underlying IO error: [Errno 28]")."""
    if isinstance(exc, OSError):
        return exc.errno if exc.filename is None else None
    found = re.search(r"\[Errno (\d+)\]", str(exc))
    return int(found.group(1)) if found else None


def _missing(lake: Lake, asset: str, month: str) -> MissingPartitionError:
    return MissingPartitionError(
        f"{asset} {month} is not in the lake ({lake.url(asset, month)}): materialize {asset} "
        f"for {month} first (or it was deleted, e.g. by retention)"
    )


def duckdb_connect(
    lake: Lake, database: str = ":memory:", read_only: bool = False
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that can read the lake's URLs (fsspec registered for non-local)."""
    con = duckdb.connect(database, read_only=read_only)
    if not lake.is_local:
        # DuckDB reads s3:// etc. through the same fsspec filesystem the lake writes with, so
        # no httpfs extension download is needed (this machine has no network).
        con.register_filesystem(lake.fs)
    return con


# the partition month of a lake file, from its name (<asset>/<YYYY-MM>.parquet)
_FILE_MONTH = r"regexp_extract(filename, '(\d{4}-\d{2})\.parquet$', 1)"


def sql_literal(value: str) -> str:
    """``value`` as a SQL string literal (quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def view_sql(lake: Lake, asset: str, month_from_file: bool = False) -> str:
    """The catalog view of ``asset``: every month's file, each row with its ``month``.

    ``month_from_file``: the files carry no ``month`` column (a month's bench prompts,
    answers and judgments are keyed by bench version), so the view takes it from each
    file's name; every view can then be counted by month."""
    source = f"read_parquet('{lake.glob_url(asset)}', union_by_name = true"
    if not month_from_file:
        return f'CREATE OR REPLACE VIEW "{asset}" AS SELECT * FROM {source})'
    return (
        f'CREATE OR REPLACE VIEW "{asset}" AS SELECT * EXCLUDE (filename), '
        f"{_FILE_MONTH} AS month FROM {source}, filename = true)"
    )


def create_view(con: duckdb.DuckDBPyConnection, lake: Lake, asset: str) -> None:
    """Create the view on an open catalog connection (after the asset's first file exists).

    For an S3 lake the view is bound through the lake's fsspec filesystem; reading it later
    from another DuckDB client needs that client's own S3 access (httpfs). The view reads a
    glob, so it covers new months without being touched again; it is recreated anyway so a
    moved lake root is picked up.
    """
    if not lake.is_local:
        con.register_filesystem(lake.fs)
    if lake.relative_to:  # a relative glob is checked from the project, not this process's cwd
        # a literal, not a bound parameter (which makes DuckDB import pandas: ~0.5 s)
        con.execute(f"SET file_search_path = {sql_literal(os.path.realpath(lake.relative_to))}")
    columns = {
        row[0]
        for row in con.execute(
            f"DESCRIBE SELECT * FROM read_parquet('{lake.glob_url(asset)}', union_by_name = true)"
        ).fetchall()
    }
    con.execute(view_sql(lake, asset, month_from_file="month" not in columns))


def _predicate(triple: tuple) -> pl.Expr:
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
