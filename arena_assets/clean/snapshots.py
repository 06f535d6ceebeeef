"""Latest snapshot per conversation: decided on narrow columns, then gathered by position.

Picking the newest of several snapshots needs every snapshot of a conversation side by
side, i.e. a sort over the whole month. Only the keys take part in it
(``clean/sql/latest_snapshots.sql``, run by DuckDB, which spills to disk under a memory
limit): conv_id, tstamp, message count, source_file, line_no, side, and a *pick* naming
the raw_logs row and side that holds the state. The messages are then read once, slice by
slice, and only the winners' are kept, placed by their rank in conv_id order.

Why not one SQL over the whole rows: DuckDB's Parquet reader decodes the nested message
lists at ~2.5 CPU-s per 520k rows where pyarrow takes ~1, and the window would then sort
that payload too. Message counts come from the ``role`` leaf alone (~0.1 CPU-s), so
the payload is decoded once and never sorted. Measured on the 200k month (314,643
conversations): 5.6 -> 3.9 CPU-s; on five copies of it (1.57M conversations) 50 -> 20 CPU-s,
peak RSS 2.4 -> 1.5 GB (``benchmarks/bench_clean_step.py --stage snapshots``).

Memory stays bounded: the winners land in buckets of consecutive ranks; one bucket is kept
in memory, several (a month whose winners' messages exceed ``gather_bytes``) are spilled to
Arrow IPC files and read back one at a time. The batches are the same whatever the count.
A bucket is sized from the bytes per state (the larger of the first slice's and the file's
average) and is at least one batch; while it is reordered it is held twice, so the step
holds about 2 x ``gather_bytes`` of messages on months whose conversation sizes do not
cluster by conv_id (ids are random hashes on the platform).
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from arena_assets.clean.schema import SNAPSHOT_SCHEMA
from arena_assets.sqlfiles import sql
from arena_assets.storage import Lake

BATCH_ROWS = 50_000
READ_ROWS = 16_384
GATHER_BYTES = 256 << 20  # winners' messages held at once; more go to disk in buckets

# the relation the SQL decides on (one row per logged conversation state)
SIDES_SCHEMA = pa.schema(
    [
        ("conv_id", pa.large_string()),
        ("tstamp", pa.timestamp("us", tz="UTC")),
        ("n_messages", pa.int32()),
        ("source_file", pa.large_string()),
        ("line_no", pa.int64()),
        ("side", pa.int8()),
        ("pick", pa.int64()),
    ]
)
_KEYS = ("tstamp", "source_file", "line_no")
_SHARED = ("month", "tstamp", "user_hash", "anony")  # one value for both sides of a row
_SIDE = {0: ("conv_id_a", "model_a", "messages_a"), 1: ("conv_id_b", "model_b", "messages_b")}
PAYLOAD_COLUMNS = [*_SHARED, *_SIDE[0], *_SIDE[1]]


def _typed(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select([pl.col(c).cast(t) for c, t in SNAPSHOT_SCHEMA.items()])


def _list_lengths(lists: pa.ChunkedArray) -> pa.Array:
    """Lengths of a list column, 0 for a null list. Polars, not pyarrow's numpy bridge:
    the latter imports pandas (1.1 CPU-s) on first use."""
    return pl.from_arrow(lists).list.len().fill_null(0).cast(pl.Int32).to_arrow()


def _sides(chunk: pa.Table, first_row: int) -> Iterator[pa.RecordBatch]:
    """The chunk's conversation states (``chunk`` holds the keys and both message lists,
    whose element fields may be pruned: only the list lengths are read)."""
    pick = pl.int_range(first_row, first_row + chunk.num_rows, dtype=pl.Int64, eager=True) * 2
    for side, (conv_id, _, messages) in _SIDE.items():
        n_messages = _list_lengths(chunk[messages])
        batch = pa.table(
            {
                "conv_id": chunk[conv_id],
                "tstamp": chunk["tstamp"],
                "n_messages": n_messages,
                "source_file": chunk["source_file"],
                "line_no": chunk["line_no"],
                "side": pl.repeat(side, chunk.num_rows, dtype=pl.Int8, eager=True).to_arrow(),
                "pick": (pick + side).to_arrow(),
            }
        )
        batch = batch.filter(pc.is_valid(batch["conv_id"])).cast(SIDES_SCHEMA)
        yield from batch.to_batches()


def _winners(sides: Iterable[pa.RecordBatch], memory_limit: str, spill: str) -> pa.Table:
    """conv_id, pick, snapshots and first_tstamp of each conversation, in conv_id order.

    The states go to DuckDB through a narrow Parquet file in the spill folder, not as a
    registered Arrow stream: registering one imports ``pyarrow.dataset`` and with it pandas
    (1.25 CPU-s, more than this whole step)."""
    path = f"{spill}/sides.parquet"
    with pq.ParquetWriter(path, SIDES_SCHEMA, compression="none") as writer:
        for batch in sides:
            writer.write_batch(batch)
    with duckdb.connect() as con:
        con.execute(f"set memory_limit = '{memory_limit}'")
        con.execute(f"set temp_directory = '{spill}'")
        con.execute(f"create temp view sides as select * from read_parquet('{path}')")
        winners = con.execute(sql("clean", "latest_snapshots")).to_arrow_table()
    Path(path).unlink()
    return winners


def _pieces(chunk: pa.Table, first_row: int, rank_of: np.ndarray) -> Iterator[pa.Table]:
    """The chunk's winning states as snapshot rows, each with its rank in conv_id order."""
    rows = 2 * np.arange(first_row, first_row + chunk.num_rows, dtype=np.int64)
    for side, (conv_id, model, messages) in _SIDE.items():
        rank = rank_of[rows + side]
        keep = np.flatnonzero(rank >= 0)
        if keep.size:
            # pyarrow's take copies the winners out, so no piece holds on to a whole row group
            picked = chunk.select([*_SHARED, conv_id, model, messages]).take(
                pl.Series(keep).to_arrow()
            )
            yield picked.rename_columns([*_SHARED, "conv_id", "model", "messages"]).append_column(
                "rank", pl.Series(rank[keep]).to_arrow()
            )


class Buckets:
    """Winners grouped by rank range; in memory for one bucket, Arrow IPC files for more."""

    def __init__(self, count: int, rows: int, folder: str) -> None:
        self.count, self.rows, self.folder = count, rows, Path(folder)
        self.held: list[pa.Table] = []
        self.writers: dict[int, ipc.RecordBatchStreamWriter] = {}

    def add(self, piece: pa.Table) -> None:
        if self.count == 1:
            self.held.append(piece)
            return
        bucket = pl.from_arrow(piece["rank"]) // self.rows
        for k in bucket.unique().sort().to_list():
            part = piece.filter((bucket == k).to_arrow())
            if k not in self.writers:
                self.writers[k] = ipc.new_stream(self.folder / f"bucket-{k}.arrow", part.schema)
            self.writers[k].write_table(part)

    def close(self) -> None:
        """Finish the spill files (also on an error, so no handle outlives the step)."""
        for writer in self.writers.values():
            writer.close()

    def tables(self) -> Iterator[tuple[int, pa.Table | None]]:
        for k in range(self.count):
            if self.count == 1:
                parts, self.held = self.held, []
                yield k, pa.concat_tables(parts, promote_options="default") if parts else None
            elif k in self.writers:
                with ipc.open_stream(self.folder / f"bucket-{k}.arrow") as reader:
                    yield k, reader.read_all()
                (self.folder / f"bucket-{k}.arrow").unlink()
            else:
                yield k, None


def _gather(
    chunks: Iterable[tuple[int, pa.Table]],
    rows: int,
    winners: pa.Table,
    *,
    batch_rows: int,
    gather_bytes: int,
    spill: str,
    payload_bytes: int = 0,
) -> Iterator[pl.DataFrame]:
    """The winners' snapshot rows in conv_id order, in batches of ``batch_rows``.

    ``payload_bytes``: the file's uncompressed payload size (Parquet metadata), so that a
    first slice of short conversations cannot make the buckets too large for the rest."""
    n = winners.num_rows
    if n == 0:
        return
    rank_of = np.full(2 * rows, -1, dtype=np.int64)
    rank_of[pl.from_arrow(winners["pick"]).to_numpy()] = np.arange(n, dtype=np.int64)
    states = pl.from_arrow(winners["snapshots"]).sum()
    buckets = None
    try:
        for first_row, chunk in chunks:
            if buckets is None:
                # bytes per state as decoded, from the first slice (Parquet's sizes undercount
                # dictionary-encoded text), and never below the whole file's average
                first = sum(chunk.num_rows - chunk[_SIDE[s][0]].null_count for s in _SIDE)
                per_state = max(chunk.nbytes / max(first, 1), payload_bytes / max(states, 1))
                bucket_rows = _bucket_rows(per_state, n, batch_rows, gather_bytes)
                buckets = Buckets(max(1, math.ceil(n / bucket_rows)), bucket_rows, spill)
            for piece in _pieces(chunk, first_row, rank_of):
                buckets.add(piece)
    finally:
        if buckets is not None:
            buckets.close()
    del rank_of
    if buckets is None:
        raise RuntimeError(
            f"raw_logs had no rows on the second read, {n} conversations on "
            "the first: it changed while it was read"
        )
    for k, table in buckets.tables():
        lo, hi = k * buckets.rows, min(n, (k + 1) * buckets.rows)
        if table is None or table.num_rows != hi - lo:
            raise RuntimeError(
                f"gathered {0 if table is None else table.num_rows} snapshots "
                f"for ranks {lo}..{hi}: raw_logs changed while it was read"
            )
        # ranks lo..hi-1 each occur once: placing row i at rank[i] - lo is the sort; polars
        # moves only string views there, where pyarrow would copy every message again
        order = np.empty(hi - lo, dtype=np.int64)
        order[pl.from_arrow(table["rank"]).to_numpy() - lo] = np.arange(hi - lo, dtype=np.int64)
        frame = pl.from_arrow(table.drop_columns("rank"))[order].with_columns(
            snapshots=pl.from_arrow(winners["snapshots"].slice(lo, hi - lo)),
            first_tstamp=pl.from_arrow(winners["first_tstamp"].slice(lo, hi - lo)),
        )
        del table
        # the second read must see the file the first one decided on (on S3 the object is
        # fetched again by key): the gathered ids are the decided ones, or nothing is written
        decided = pl.from_arrow(winners["conv_id"].slice(lo, hi - lo))
        if not frame.get_column("conv_id").equals(decided, check_names=False):
            raise RuntimeError(
                f"conversation ids of ranks {lo}..{hi} differ from the ones "
                "decided on: raw_logs changed while it was read"
            )
        for start in range(0, frame.height, batch_rows):
            yield _typed(frame.slice(start, batch_rows))
        del frame


def _bucket_rows(bytes_per_state: float, winners: int, batch_rows: int, gather_bytes: int) -> int:
    """Conversations per bucket: as many as ``gather_bytes`` of payload allows, a multiple
    of ``batch_rows`` so the batches are the same whatever the bucket count."""
    fit = int(gather_bytes / max(bytes_per_state, 1.0)) // batch_rows * batch_rows
    return max(batch_rows, min(fit, winners))


def latest_snapshots(raw_logs: pl.DataFrame) -> pl.DataFrame:
    """Latest state per conv_id of an in-memory raw_logs frame, sorted by conv_id."""
    table = raw_logs.to_arrow()
    with tempfile.TemporaryDirectory(prefix="arena-snapshots-") as spill:
        winners = _winners(_sides(table, 0), "1GB", spill)
        batches = list(
            _gather(
                [(0, table)],
                table.num_rows,
                winners,
                batch_rows=max(1, winners.num_rows),
                gather_bytes=1 << 62,
                spill=spill,
            )
        )
    return pl.concat(batches) if batches else _typed(pl.DataFrame(schema=SNAPSHOT_SCHEMA))


def row_group_slices(pf: pq.ParquetFile, columns: list[str]) -> Iterator[tuple[int, pa.Table]]:
    """The file in slices of READ_ROWS rows, each with the position of its first row.
    Slices rather than whole row groups: a 100k-row group of messages decodes to ~150 MB,
    and buffers that size go back to the OS after each use (page faults, sys time)."""
    first_row = 0
    for batch in pf.iter_batches(batch_size=READ_ROWS, columns=columns, use_threads=True):
        yield first_row, pa.Table.from_batches([batch])
        first_row += batch.num_rows


def _count_leaf(pf: pq.ParquetFile, messages: str) -> str:
    """The smallest leaf of a message list (its role) whose levels give the list lengths."""
    leaves = [pf.schema.column(i).path for i in range(len(pf.schema))]
    under = [p for p in leaves if p.startswith(messages + ".")]
    return next((p for p in under if p.endswith(".role")), under[0] if under else messages)


def iter_latest_snapshots(
    lake: Lake,
    month: str,
    *,
    batch_rows: int = BATCH_ROWS,
    memory_limit: str = "2GB",
    gather_bytes: int = GATHER_BYTES,
) -> Iterator[pl.DataFrame]:
    """The month's latest snapshots from its raw_logs file, in batches sorted by conv_id.

    ``memory_limit`` is DuckDB's share for deciding the winners; ``gather_bytes`` bounds the
    winners' messages held at once (more spill to disk in buckets); the cleaning of a batch
    needs the rest.
    """
    with contextlib.ExitStack() as stack:
        spill = stack.enter_context(tempfile.TemporaryDirectory(prefix="arena-snapshots-"))
        pf = stack.enter_context(lake.open_parquet("raw_logs", month))
        keys = [
            "conv_id_a",
            "conv_id_b",
            *_KEYS,
            _count_leaf(pf, "messages_a"),
            _count_leaf(pf, "messages_b"),
        ]
        sides = (
            batch
            for first_row, chunk in row_group_slices(pf, keys)
            for batch in _sides(chunk, first_row)
        )
        winners = _winners(sides, memory_limit, spill)
        meta = pf.metadata
        payload = sum(
            group.column(i).total_uncompressed_size
            for group in (meta.row_group(g) for g in range(meta.num_row_groups))
            for i in range(group.num_columns)
            if group.column(i).path_in_schema.split(".")[0] in PAYLOAD_COLUMNS
        )
        yield from _gather(
            row_group_slices(pf, PAYLOAD_COLUMNS),
            meta.num_rows,
            winners,
            batch_rows=batch_rows,
            gather_bytes=gather_bytes,
            spill=spill,
            payload_bytes=payload,
        )
