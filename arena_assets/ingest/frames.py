"""Column buffers for accepted rows and rejects, turned into polars frames once per part.

Why flat buffers: building a ``List(Struct)`` column from Python dicts costs microseconds
per message; appending to flat lists and assembling Arrow arrays from offsets once per
part costs tens of nanoseconds per value, which keeps the whole parse above 100k lines/s.
"""

from __future__ import annotations

from itertools import accumulate, chain
from operator import itemgetter

import polars as pl
import pyarrow as pa

from arena_assets.clean.rejects import redact_rejects
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA, RAW_REJECTS_SCHEMA

from .validate import Row

_ROLES, _CONTENTS, _IMAGES = itemgetter(0), itemgetter(1), itemgetter(2)


def _messages_arrow(sides: tuple) -> pa.Array:
    """List(Struct) column from one side's per-row (roles, contents, images), None = null."""
    present = [m for m in sides if m is not None]
    lengths = (
        [0 if m is None else len(m[0]) for m in sides]
        if len(present) < len(sides)
        else list(map(len, map(_ROLES, sides)))
    )
    images = list(chain.from_iterable(map(_IMAGES, present)))
    image_offsets = _arrow_int32(list(accumulate(map(len, images), initial=0)))
    image_refs = _arrow_strings(list(chain.from_iterable(images)))
    struct = pa.StructArray.from_arrays(
        [
            _arrow_strings(list(chain.from_iterable(map(_ROLES, present)))),
            _arrow_strings(list(chain.from_iterable(map(_CONTENTS, present)))),
            pa.ListArray.from_arrays(image_offsets, image_refs),
        ],
        names=("role", "content", "images"),
    )
    mask = (
        pl.Series([m is None for m in sides], dtype=pl.Boolean).to_arrow()
        if len(present) < len(sides)
        else None
    )
    offsets = _arrow_int32(list(accumulate(lengths, initial=0)))
    return pa.ListArray.from_arrays(offsets, struct, mask=mask)


def _arrow_int32(values: list[int]) -> pa.Array:
    # through polars, not ``pa.array``: pyarrow's list conversion imports pandas on first
    # use (measured 0.8 CPU-s in every parse worker)
    return pl.Series(values, dtype=pl.Int32).to_arrow()


def _arrow_strings(values: list[str]) -> pa.Array:
    """Python strings -> Arrow, through polars: several times faster than ``pa.array`` on
    long texts, and string views need no 2 GiB offset limit."""
    return pl.Series(values, dtype=pl.String).to_arrow(compat_level=pl.CompatLevel.newest())


class RowBuffer:
    """Accepted rows and rejects of one part of one file.

    Rows are kept as the validator's tuples and transposed once per part (``zip(*rows)``
    runs in C), which is cheaper than a dozen appends per row.
    """

    def __init__(self) -> None:
        self.line_no: list[int] = []
        self.rows: list[Row] = []
        self.rej_line_no: list[int] = []
        self.rej_reason: list[str] = []
        self.rej_detail: list[str] = []
        self.rej_raw: list[str] = []
        self.rej_user: list[str | None] = []

    @property
    def lines(self) -> int:
        return len(self.line_no) + len(self.rej_line_no)

    def add(self, line_no: int, row: Row) -> None:
        self.line_no.append(line_no)
        self.rows.append(row)

    def reject(
        self, line_no: int, reason: str, detail: str, raw: str, user_hash: str | None = None
    ) -> None:
        """A reject whose ``detail`` and ``raw`` have their identities blanked
        (``clean.rejects.blank_reject``); PII is redacted for the whole part in
        :meth:`frames`."""
        self.rej_line_no.append(line_no)
        self.rej_reason.append(reason)
        self.rej_detail.append(detail)
        self.rej_raw.append(raw)
        self.rej_user.append(user_hash)

    def frames(
        self, month: str, source_file: str, source_format: str
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        cols = list(zip(*self.rows, strict=True)) if self.rows else [()] * 12
        eid, ts, typ, anony, user, conv_a, model_a, msgs_a, conv_b, model_b, msgs_b, links = cols
        if any(links):
            ip_hash, net_hash, device_hash = (
                list(c)
                for c in zip(*[(None, None, None) if x is None else x for x in links], strict=True)
            )
        else:  # no event of the part carries an identity field: one null column each
            ip_hash = net_hash = device_hash = [None] * len(links)
        # release adapters' rows carry LMArena's own fields (releases.TaggedRow); native
        # rows never do, so their parts skip the per-row lookups
        tags = (
            (
                [getattr(r, "category_tag", None) for r in self.rows],
                [getattr(r, "release_tags", None) for r in self.rows],
            )
            if source_format != "native"
            else ([None] * len(self.rows),) * 2
        )
        raw_logs = pl.DataFrame(
            {
                "event_id": pl.Series(eid, dtype=pl.String),
                "line_no": pl.Series(self.line_no, dtype=pl.Int64),
                "tstamp": pl.Series(ts, dtype=pl.Int64),
                "type": pl.Series(typ, dtype=pl.String),
                "anony": pl.Series(anony, dtype=pl.Boolean),
                "user_hash": pl.Series(user, dtype=pl.String),
                "ip_hash": pl.Series(ip_hash, dtype=pl.String),
                "net_hash": pl.Series(net_hash, dtype=pl.String),
                "device_hash": pl.Series(device_hash, dtype=pl.String),
                "conv_id_a": pl.Series(conv_a, dtype=pl.String),
                "model_a": pl.Series(model_a, dtype=pl.String),
                "messages_a": pl.from_arrow(_messages_arrow(msgs_a)),
                "conv_id_b": pl.Series(conv_b, dtype=pl.String),
                "model_b": pl.Series(model_b, dtype=pl.String),
                "messages_b": pl.from_arrow(_messages_arrow(msgs_b)),
                "category_tag": pl.Series(tags[0], dtype=pl.String),
                "release_tags": pl.Series(tags[1], dtype=pl.String),
            }
        ).with_columns(
            month=pl.lit(month, pl.String),
            source_file=pl.lit(source_file, pl.String),
            source_format=pl.lit(source_format, pl.String),
        )
        raw_logs = raw_logs.select(list(RAW_LOGS_SCHEMA)).cast(RAW_LOGS_SCHEMA)  # type: ignore[arg-type]
        details, raws = redact_rejects(self.rej_detail, self.rej_raw)
        rejects = pl.DataFrame(
            {
                "month": [month] * len(self.rej_line_no),
                "source_file": [source_file] * len(self.rej_line_no),
                "line_no": self.rej_line_no,
                "reason": self.rej_reason,
                "detail": details,
                "raw": raws,
                "user_hash": self.rej_user,
            },
            schema=RAW_REJECTS_SCHEMA,
        )
        return raw_logs, rejects


def empty_raw_logs() -> pl.DataFrame:
    return pl.DataFrame(schema=RAW_LOGS_SCHEMA)


def empty_rejects() -> pl.DataFrame:
    return pl.DataFrame(schema=RAW_REJECTS_SCHEMA)
