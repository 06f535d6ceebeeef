"""A month of raw files -> parsed parts: in this process, or in a pool of parse workers.

Sits above ``parse`` (one file) and ``parallel`` (the pool), so neither imports the other's
callers and the pool machinery stays a plain dependency.
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from . import sources
from .frames import empty_raw_logs, empty_rejects
from .parallel import iter_pooled_parts
from .parse import DEFAULT_CHUNK_LINES, FileCounts, ParsedMonth, ParsedPart, iter_file_parts
from .validate import Checker


def iter_parsed_files(
    raw_root: str,
    month: str,
    *,
    salt: str,
    known_models: set[str] | None,
    storage_options: dict | None = None,
    workers: int = 1,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
    urls: list[str] | None = None,
    forgotten: frozenset[str] = frozenset(),
) -> Iterator[ParsedPart]:
    """Parts of every file of the month, in file order (see module doc for memory).
    ``urls``: the month's files as already listed (so that what is parsed is exactly what
    was listed and hashed); None lists them here. Lines of the ``forgotten`` user hashes
    become ``forgotten_user`` rejects."""
    if urls is None:
        urls = sources.list_month_files(raw_root, month, storage_options)
    names = [sources.relative_name(raw_root, u, storage_options) for u in urls]
    seen: set[str] = set()
    if workers <= 1 or len(urls) <= 1:
        checker = Checker(month, salt, known_models, forgotten)
        for url, name in zip(urls, names, strict=True):
            yield from iter_file_parts(
                url, name, checker, seen, storage_options=storage_options, chunk_lines=chunk_lines
            )
        return
    yield from iter_pooled_parts(
        urls,
        names,
        month,
        salt=salt,
        known_models=known_models,
        storage_options=storage_options,
        workers=workers,
        chunk_lines=chunk_lines,
        forgotten=forgotten,
    )


def parse_month(
    raw_root: str,
    month: str,
    *,
    salt: str,
    known_models: set[str] | None,
    storage_options: dict | None = None,
    workers: int = 1,
    forgotten: frozenset[str] = frozenset(),
) -> ParsedMonth:
    """The whole month in memory (use :func:`iter_parsed_files` for very large months)."""
    logs: list[pl.DataFrame] = []
    rejects: list[pl.DataFrame] = []
    files: dict[str, FileCounts] = {}
    for part in iter_parsed_files(
        raw_root,
        month,
        salt=salt,
        known_models=known_models,
        storage_options=storage_options,
        workers=workers,
        forgotten=forgotten,
    ):
        counts = files.setdefault(
            part.source_file, FileCounts(part.source_file, part.source_format)
        )
        counts.lines_read += part.lines_read
        counts.accepted += part.raw_logs.height
        counts.rejected += part.rejects.height
        logs.append(part.raw_logs)
        rejects.append(part.rejects)
    raw_logs = pl.concat(logs) if logs else empty_raw_logs()
    raw_rejects = pl.concat(rejects) if rejects else empty_rejects()
    total = sum(c.lines_read for c in files.values())
    return ParsedMonth(month, raw_logs, raw_rejects, total, list(files.values()))
