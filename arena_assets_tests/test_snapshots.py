"""Latest snapshots (narrow decision in DuckDB + positional gather) against the rule written
out independently in polars, on random months full of ties; streamed from a lake file in
memory and spilled to buckets."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from arena_assets.clean import snapshots
from arena_assets.clean.schema import SNAPSHOT_SCHEMA
from arena_assets.clean.snapshots import iter_latest_snapshots, latest_snapshots
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA
from arena_assets.storage import Lake

MONTH = "2024-05"


def _messages(rng: random.Random, conv: str) -> list[dict] | None:
    if rng.random() < 0.1:
        return None
    return [
        {
            "role": ("user", "assistant")[k % 2],
            "content": f"{conv} turn {k} {rng.random()}",
            "images": [] if rng.random() < 0.8 else [f"img{k}"],
        }
        for k in range(rng.randint(0, 4))
    ]


def random_raw(seed: int, rows: int = 400) -> pl.DataFrame:
    """Few conv ids, few timestamps and message counts: every tie-break rule gets used."""
    rng = random.Random(seed)
    base = datetime(2024, 5, 1, tzinfo=UTC)
    out = []
    for i in range(rows):
        a = f"c{rng.randint(0, 60):03d}"
        b = f"c{rng.randint(0, 60):03d}" if rng.random() < 0.4 else None
        out.append(
            {
                "month": MONTH,
                "event_id": f"e{i}",
                "source_file": rng.choice(["d1.jsonl", "d2.jsonl"]),
                "line_no": rng.randint(1, 40),
                "tstamp": base + timedelta(seconds=rng.randint(0, 5)),
                "type": "chat",
                "anony": rng.random() < 0.5,
                "user_hash": f"u{rng.randint(0, 9)}",
                "conv_id_a": a,
                "model_a": f"m{i % 7}",
                "messages_a": _messages(rng, a),
                "conv_id_b": b,
                "model_b": None if b is None else f"m{i % 5}",
                "messages_b": None if b is None else _messages(rng, b),
                "source_format": "native",
            }
        )
    return pl.DataFrame(out, schema=RAW_LOGS_SCHEMA)


def by_the_rule(raw: pl.DataFrame) -> pl.DataFrame:
    """Greatest tstamp, then most messages (null = 0), then source_file, line_no, side b
    over a, then the later row; snapshots = states per conv_id, first_tstamp = the least."""
    raw = raw.with_row_index("row")
    sides = (
        pl.concat(
            [
                raw.select(
                    "month",
                    "row",
                    "tstamp",
                    "user_hash",
                    "anony",
                    "source_file",
                    "line_no",
                    conv_id=f"conv_id_{s}",
                    model=f"model_{s}",
                    messages=f"messages_{s}",
                    side=pl.lit(k, pl.Int8),
                )
                for k, s in enumerate("ab")
            ]
        )
        .filter(pl.col("conv_id").is_not_null())
        .with_columns(n=pl.col("messages").list.len().fill_null(0))
    )
    keys = ["tstamp", "n", "source_file", "line_no", "side", "row"]
    winners = sides.sort(["conv_id", *keys], descending=[False] + [True] * len(keys))
    out = winners.group_by("conv_id", maintain_order=True).agg(
        pl.all().first(), snapshots=pl.len(), first_tstamp=pl.col("tstamp").min()
    )
    return out.select([pl.col(c).cast(t) for c, t in SNAPSHOT_SCHEMA.items()])


@pytest.mark.parametrize("seed", range(5))
def test_in_memory_snapshots_follow_the_rule(seed: int) -> None:
    raw = random_raw(seed)
    got = latest_snapshots(raw)
    assert got.equals(by_the_rule(raw))
    assert got["conv_id"].is_sorted() and got["conv_id"].n_unique() == got.height
    assert got["snapshots"].sum() == raw["conv_id_a"].count() + raw["conv_id_b"].count()


def _lake_with_raw(tmp_path: Path, raw: pl.DataFrame, part_rows: int) -> Lake:
    lake = Lake(str(tmp_path / "lake"))
    schema = raw.to_arrow().schema
    parts = (raw.slice(i, part_rows) for i in range(0, raw.height, part_rows))
    lake.write_batches("raw_logs", MONTH, schema, parts)  # one row group per part
    return lake


def test_streamed_snapshots_same_in_memory_and_spilled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = random_raw(11, rows=900)
    lake = _lake_with_raw(tmp_path, raw, part_rows=130)
    monkeypatch.setattr(snapshots, "READ_ROWS", 37)  # slices across row group boundaries
    buckets: list[int] = []
    init = snapshots.Buckets.__init__

    def spy(self, count, rows, folder):
        buckets.append(count)
        init(self, count, rows, folder)

    monkeypatch.setattr(snapshots.Buckets, "__init__", spy)
    expected = by_the_rule(raw)
    for gather_bytes in (1 << 40, 1):  # one bucket in memory; a bucket per batch on disk
        batches = list(iter_latest_snapshots(lake, MONTH, batch_rows=8, gather_bytes=gather_bytes))
        assert [b.height for b in batches[:-1]] == [8] * (len(batches) - 1)
        assert pl.concat(batches).equals(expected)
    assert buckets == [1, -(-expected.height // 8)]


def test_buckets_sized_by_the_whole_file_not_only_its_first_slice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Short conversations first, long ones after: sized from the first slice alone, one
    bucket would hold the whole month; the file's average splits it (review finding)."""
    raw = random_raw(5, rows=600).with_row_index("_i")
    long = pl.element().struct.with_fields(pl.field("content") + "x" * 4000)
    raw = raw.with_columns(
        pl.when(pl.col("_i") >= 100).then(pl.col(m).list.eval(long)).otherwise(pl.col(m)).alias(m)
        for m in ("messages_a", "messages_b")
    ).drop("_i")
    lake = _lake_with_raw(tmp_path, raw, part_rows=100)
    monkeypatch.setattr(snapshots, "READ_ROWS", 50)  # the first slice holds short rows only
    counts: list[int] = []
    init = snapshots.Buckets.__init__
    monkeypatch.setattr(
        snapshots.Buckets,
        "__init__",
        lambda self, count, rows, folder: (counts.append(count), init(self, count, rows, folder))[
            1
        ],
    )
    # a quarter of the long payload: the first slice's bytes per state would allow it all
    batches = list(iter_latest_snapshots(lake, MONTH, batch_rows=8, gather_bytes=300_000))
    assert pl.concat(batches).equals(by_the_rule(raw))
    assert counts and counts[0] > 1, counts


def test_a_raw_logs_file_changed_between_the_two_reads_stops_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = random_raw(7, rows=200)
    lake = _lake_with_raw(tmp_path, raw, part_rows=50)
    reads = []
    plain = snapshots.row_group_slices

    def second_read_differs(pf, columns):
        reads.append(columns)
        for first_row, chunk in plain(pf, columns):
            if len(reads) == 2:  # same rows, other ids: what a rewrite by key could give
                ids = pl.from_arrow(chunk["conv_id_a"]).str.replace("^", "x").to_arrow()
                chunk = chunk.set_column(
                    chunk.schema.get_field_index("conv_id_a"), "conv_id_a", ids
                )
            yield first_row, chunk

    monkeypatch.setattr(snapshots, "row_group_slices", second_read_differs)
    with pytest.raises(RuntimeError, match="changed while it was read"):
        list(iter_latest_snapshots(lake, MONTH, batch_rows=8))


def test_month_without_conversations_gives_no_batch(tmp_path: Path) -> None:
    raw = random_raw(3, rows=20).with_columns(
        pl.lit(None, pl.String).alias("conv_id_a"), pl.lit(None, pl.String).alias("conv_id_b")
    )
    assert list(iter_latest_snapshots(_lake_with_raw(tmp_path, raw, 8), MONTH)) == []
    assert latest_snapshots(raw).schema == pl.Schema(SNAPSHOT_SCHEMA)
    assert latest_snapshots(raw).height == 0


def test_side_b_wins_a_full_tie_before_the_later_row() -> None:
    """Both rows say the same file, line and time with two messages for "x": the state on
    side b wins although the other row comes later (hand-written, not random)."""
    base = datetime(2024, 5, 1, tzinfo=UTC)
    two = [
        {"role": "user", "content": "q", "images": []},
        {"role": "assistant", "content": "a", "images": []},
    ]
    common = {
        "month": MONTH,
        "source_file": "f.jsonl",
        "line_no": 3,
        "tstamp": base,
        "type": "leftvote",
        "anony": True,
        "user_hash": "u",
        "source_format": "native",
    }
    raw = pl.DataFrame(
        [
            {
                **common,
                "event_id": "e1",
                "conv_id_a": "w",
                "model_a": "m1",
                "messages_a": two,
                "conv_id_b": "x",
                "model_b": "from-side-b",
                "messages_b": two,
            },
            {
                **common,
                "event_id": "e2",
                "conv_id_a": "x",
                "model_a": "from-side-a",
                "messages_a": two,
                "conv_id_b": None,
                "model_b": None,
                "messages_b": None,
            },
        ],
        schema=RAW_LOGS_SCHEMA,
    )
    got = latest_snapshots(raw)
    assert got.filter(pl.col("conv_id") == "x")["model"].to_list() == ["from-side-b"]
    assert got.equals(by_the_rule(raw))
