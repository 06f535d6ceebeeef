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

Said in one line: a partition that cannot be read (missing, damaged, not readable) or
written (a read-only folder, a full disk, a refused writer) raises an error that names the
partition, the file, the setting that points there (``ARENA_LAKE_ROOT``) and what to do
(``storage.errors``).

No Dagster here; the Dagster resource in ``arena_assets.defs.resources`` wraps the lake.

Modules: ``lake`` (the ``Lake``), ``errors`` (what it says when it cannot), ``encoding``
(compression, dictionary pages, filters), ``catalog`` (DuckDB over the lake).
"""

from arena_assets.storage.catalog import create_view, duckdb_connect, sql_literal, view_sql
from arena_assets.storage.encoding import (
    DICTIONARY_COLUMNS,
    PARQUET_COMPRESSION,
    ROW_GROUP_ROWS,
    dictionary_columns,
)
from arena_assets.storage.errors import (
    DamagedPartitionError,
    EmptyPartitionError,
    MissingPartitionError,
    WriteRefused,
)
from arena_assets.storage.lake import Lake

__all__ = [
    "DICTIONARY_COLUMNS",
    "PARQUET_COMPRESSION",
    "ROW_GROUP_ROWS",
    "DamagedPartitionError",
    "EmptyPartitionError",
    "Lake",
    "MissingPartitionError",
    "WriteRefused",
    "create_view",
    "dictionary_columns",
    "duckdb_connect",
    "sql_literal",
    "view_sql",
]
