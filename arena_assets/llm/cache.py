"""A durable answer cache for LLM calls, stored with the lake, written in chunks.

Layout under ``root`` (a local folder or any fsspec URL such as ``s3://bucket/lake/_llm_cache``)::

    <root>/<namespace>/chunk-<uuid>.parquet      # immutable, one per flush
    <root>/<namespace>/_tmp/chunk-<uuid>.<owner>.<id>   # in-flight writes, never read

Why chunks rather than one file: results arrive one at a time from many threads; appending
to a Parquet file is impossible and rewriting it per result is quadratic. Every
``chunk_size`` results the buffer becomes one new file, written under a temporary name and
renamed into place (on S3 the single PUT is atomic by itself), so a process killed with
SIGKILL loses only its unflushed buffer (< ``chunk_size`` answers) plus the calls still in
flight, and never leaves a half-written file where readers look.

The key is a hash of (model, messages, generation parameters, prompt version): change any
of them and the old answers stop matching; the same request in a later run costs no call.
When a key has several entries (two runs answered it, or a bad answer cached by an older
version was asked again), the newest wins. Temporary files of writers that died are swept
at the next write (``arena_assets.inflight``).

Chunks are merged as they accumulate: every ``MERGE_AT`` small chunks a cache object writes
are merged into one by a background thread while the run goes on, and a run that wrote chunks
ends with ``settle()``, which merges the namespace's small chunks (< ``SMALL_CHUNK_BYTES``)
into one once there are ``MERGE_AT`` of them. Why: a production month's labels leave
~16,000 chunks of 64 answers per namespace, and every later run (a rerun, the next month,
the plan) read them back one file at a time (2.1 s for 1,318 chunks against 0.27 s for
the same 84,292 answers in one). Why in the background: merged only at the end, a month's
235,000 vectors (231 chunks) took 0.85 s after the last call of its prompt_embeddings,
~6 % of the step, with a core idle during the calls.
Merging is safe beside other readers and writers of the namespace (another month's run,
a plan): the merged chunk is in place before the small ones are deleted, a reader skips a
chunk deleted under it and lists the folder again until nothing new appears, and two
merges at once only leave duplicate rows, which load as one. A merge that fails is a
warning: the answers are already written.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import orjson
import polars as pl
from fsspec.implementations.local import LocalFileSystem

from arena_assets import inflight
from arena_assets.errors import storage_errors
from arena_assets.llm.cache_rows import (
    CACHE_COLUMNS,
    CACHE_SCHEMA,
    CachedRows,
    answer_row,
    chunk_frame,
)

_log = logging.getLogger(__name__)
# small chunks in a namespace before settle() merges them, and the small chunks a cache
# object writes that a background merge takes at once
MERGE_AT = 32
SMALL_CHUNK_BYTES = 8 << 20  # a chunk this large is left alone (merging it gains little)


def request_key(model: str, messages: Any, params: dict, prompt_version: str) -> str:
    """Stable hex key of one request; canonical JSON so dict order does not matter."""
    payload = orjson.dumps(
        {"model": model, "messages": messages, "params": params, "prompt_version": prompt_version},
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.blake2b(payload, digest_size=16).hexdigest()


def text_request_keys(model: str, texts: list[str], params: dict, prompt_version: str) -> list[str]:
    """``request_key(model, text, params, prompt_version)`` of each text, the same keys, the
    request's constant fields serialised once (sorted keys: "messages" comes first): a
    production month's 236,000 texts to embed took 0.63 s one ``request_key`` at a time, 0.39
    so, before the first call could leave."""
    tail = (
        b',"model":'
        + orjson.dumps(model)
        + b',"params":'
        + orjson.dumps(params, option=orjson.OPT_SORT_KEYS)
        + b',"prompt_version":'
        + orjson.dumps(prompt_version)
        + b"}"
    )
    blake, dumps = hashlib.blake2b, orjson.dumps
    return [
        blake(b'{"messages":' + dumps(text) + tail, digest_size=16).hexdigest() for text in texts
    ]


@dataclass
class ResponseCache:
    """Answers by request key under ``<root>/<namespace>``; thread-safe ``put``."""

    root: str
    namespace: str
    chunk_size: int = 64
    storage_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        self.fs, base = fsspec.core.url_to_fs(self.root.rstrip("/"), **self.storage_options)
        self.dir = f"{base}/{self.namespace.strip('/')}"
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._buffer: list[dict] = []
        self._rows: CachedRows | None = None  # what the chunks held when first read
        self._added: dict[str, tuple] = {}  # answers put since, in CACHE_COLUMNS order
        self.chunks_written = 0
        self._swept = False  # dead writers' temporary files (local folders)
        self._fresh: list[str] = []  # chunks this object wrote, not yet given to a merge
        self._merging: threading.Thread | None = None

    # -- reads -----------------------------------------------------------------------------
    def _load(self) -> CachedRows:
        if self._rows is None:
            frame = self._read_all()
            # the newest answer of a key wins (a rerun's, or one asked again after a bad one)
            frame = frame.sort(
                "created_at", descending=True, nulls_last=True, maintain_order=True
            ).unique("key", keep="first", maintain_order=True)
            self._rows = CachedRows(frame)
        return self._rows

    def _chunk_paths(self, detail: bool = False):
        found = self.fs.glob(f"{self.dir}/chunk-*.parquet", detail=detail)
        return found if detail else sorted(found)

    def _read_all(self) -> pl.DataFrame:
        """Every chunk as one frame. A merge elsewhere writes its merged chunk before it
        deletes the small ones, so a chunk gone under us is read later from the merged
        one: missing chunks are skipped and the folder listed again until a listing shows
        nothing new (a listing is not a snapshot: it may pass a new chunk's name before
        the chunk exists and reach a deleted one's after it is gone)."""
        seen: set[str] = set()
        frames = []
        while True:
            paths = [p for p in self._chunk_paths() if p not in seen]
            if not paths:
                break
            frames.append(self._read(paths, missing_ok=True))
            seen.update(paths)
        return pl.concat(frames) if frames else pl.DataFrame(schema=CACHE_SCHEMA)

    def _read(self, paths: list[str], missing_ok: bool = False) -> pl.DataFrame:
        empty = pl.DataFrame(schema=CACHE_SCHEMA)
        if not paths:
            return empty
        if isinstance(self.fs, LocalFileSystem):
            try:  # one multi-file read in polars' own threads
                return pl.scan_parquet(
                    paths, schema=CACHE_SCHEMA, missing_columns="insert", extra_columns="ignore"
                ).collect()
            except (pl.exceptions.SchemaError, FileNotFoundError):
                pass  # a chunk of another layout, or one merged away: one by one below
            blobs = []
            for path in paths:
                try:
                    blobs.append(self.fs.cat_file(path))
                except FileNotFoundError:
                    if not missing_ok:
                        raise
        else:  # object stores fetch the chunks concurrently
            fetched = self.fs.cat(paths, on_error="omit" if missing_ok else "raise")
            blobs = [fetched[p] for p in paths if p in fetched]
        frames = [pl.read_parquet(io.BytesIO(b)) for b in blobs]
        # chunks written before a column existed read it as null
        return pl.concat([empty, *frames], how="diagonal_relaxed").select(
            [pl.col(c).cast(t) for c, t in CACHE_SCHEMA.items()]
        )

    def get(self, key: str) -> dict | None:
        with self._lock:
            added = self._added.get(key)
            if added is not None:
                return dict(zip(CACHE_COLUMNS, added))
            return self._load().get(key)

    def values(self, keys, column: str) -> dict[str, Any]:
        """``column`` of the newest answer of each cached key among ``keys``, the lock taken
        once and no row dict made: a rerun's 236,000 vectors read with ``get`` took 1.6 s."""
        at = CACHE_COLUMNS.index(column)
        found: dict[str, Any] = {}
        with self._lock:
            rows = self._load()
            index, loaded = rows.index, rows.columns[column] if column != "key" else None
            for k in keys:
                added = self._added.get(k)
                if added is not None:
                    found[k] = added[at]
                elif (i := index.get(k)) is not None:
                    found[k] = k if loaded is None else loaded[i]
        return found

    def __len__(self) -> int:
        with self._lock:
            rows = self._load()
            return len(rows.index) + sum(1 for k in self._added if k not in rows.index)

    def entries(self) -> list[dict]:
        """Every cached row (a snapshot)."""
        with self._lock:
            rows = self._load()
            loaded = [rows.get(k) for k in rows.index if k not in self._added]
            return loaded + [dict(zip(CACHE_COLUMNS, v)) for v in self._added.values()]

    def completion_tokens(self, model: str, prompt_version: str) -> tuple[int, int]:
        """(sum of completion tokens, answers) of the cached answers to ``model`` with
        ``prompt_version``: the plan's history of answer lengths, without a row per answer."""
        with self._lock:
            rows = self._load()
            total, n = rows.completion_tokens(model, prompt_version, skip=self._added)
            m, v, c = (
                CACHE_COLUMNS.index("model"),
                CACHE_COLUMNS.index("prompt_version"),
                CACHE_COLUMNS.index("completion_tokens"),
            )
            for row in self._added.values():
                if row[m] == model and row[v] == prompt_version:
                    total += row[c] or 0
                    n += 1
            return total, n

    def input_tokens(self, model: str, prompt_version: str) -> tuple[int, int, int]:
        """(billed input tokens, the plan's count of the same requests, answers) over the
        cached answers to ``model`` with ``prompt_version`` that record both: what the
        endpoint's tokenizer makes of the plan's count (``llm.plan.input_scale``)."""
        with self._lock:
            rows = self._load()
            billed, counted, n = rows.input_tokens(model, prompt_version, skip=self._added)
            m, v = CACHE_COLUMNS.index("model"), CACHE_COLUMNS.index("prompt_version")
            b, c = (
                CACHE_COLUMNS.index("prompt_tokens"),
                CACHE_COLUMNS.index("counted_prompt_tokens"),
            )
            for row in self._added.values():
                if row[m] == model and row[v] == prompt_version and row[b] and row[c]:
                    billed, counted, n = billed + row[b], counted + row[c], n + 1
            return billed, counted, n

    # -- writes ----------------------------------------------------------------------------
    def put(
        self,
        key: str,
        *,
        model: str,
        prompt_version: str,
        content: str | None = None,
        reasoning: str | None = None,
        embedding: list[float] | np.ndarray | None = None,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        counted_prompt_tokens: int | None = None,
    ) -> None:
        self.put_many(
            [
                answer_row(
                    key,
                    model=model,
                    prompt_version=prompt_version,
                    content=content,
                    reasoning=reasoning,
                    embedding=embedding,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    counted_prompt_tokens=counted_prompt_tokens,
                )
            ]
        )

    def put_many(self, rows: list[dict]) -> None:
        """Several answers of one call (an embeddings call's vectors), ``answer_row``'s
        rows: the lock taken once."""
        # the chunk is written while the lock is held: threads with a new answer wait here
        # instead of starting more calls, so a SIGKILL during a slow write (S3, a loaded
        # machine) loses at most the chunk being written plus one call's answers per worker
        with self._lock:
            self._load()
            for row in rows:
                self._added[row["key"]] = tuple(row[c] for c in CACHE_COLUMNS)
            self._buffer.extend(rows)
            if len(self._buffer) >= self.chunk_size:
                self._write(self._take())
                if len(self._fresh) >= MERGE_AT and (
                    self._merging is None or not self._merging.is_alive()
                ):
                    self._merge_later(self._fresh)
                    self._fresh = []

    def flush(self) -> None:
        """Write whatever is buffered and let a background merge finish (call at the end
        of a batch, also on errors: nothing of the batch runs on after it)."""
        with self._lock:
            batch = self._take()
            if batch:
                self._write(batch)
        self._wait_merge()

    def compact(self) -> int:
        """Merge every chunk into one (fewer files to list on S3); returns chunks removed."""
        self.flush()
        with self._lock:
            self._fresh = []  # merged below, or gone
        return self._merge(self._chunk_paths())

    def settle(self) -> int:
        """End of a run that wrote: merge the small chunks once there are ``MERGE_AT`` of
        them (see the module docstring); returns chunks removed. Best effort: every answer
        is already written, so a merge that fails (a store that refuses deletes, a
        throttled bucket) is a warning, not the batch's failure."""
        self.flush()
        with self._lock:
            self._fresh = []  # what the rule below does not merge stays as written
        if not self.chunks_written:
            return 0  # a run that only read leaves the namespace as it found it
        try:
            found = self._chunk_paths(detail=True)
            small = sorted(
                p for p, info in found.items() if (info.get("size") or 0) < SMALL_CHUNK_BYTES
            )
            return self._merge(small) if len(small) >= MERGE_AT else 0
        except Exception as exc:
            _log.warning(
                "LLM cache %s: merging its chunks failed (%s); they stay as written", self.dir, exc
            )
            return 0

    def remove(self, keys, *, dry_run: bool = False) -> int:
        """Delete every answer of ``keys`` (a forgotten user's: ``privacy/cache_keys.py``);
        returns the keys that had one. Each chunk holding one is rewritten without it,
        the new chunk in place before the old one goes, so a crash loses nothing else.
        A merge running at the same time may write a removed answer back from a chunk it
        had read: the chunks are listed again until none holds a key (at most 3 rounds)."""
        wanted = sorted(set(keys))
        found: set[str] = set()
        self.flush()
        for _ in range(3):
            holding = [p for p in self._chunk_paths() if self._has_any(p, wanted)]
            if not holding:
                break
            frame = self._read(holding, missing_ok=True)
            hit = pl.col("key").is_in(wanted)
            found.update(frame.filter(hit)["key"].to_list())
            if dry_run:
                break
            rest = frame.filter(~hit)
            if rest.height:
                self._write_frame(rest)
            self.fs.rm(holding)
        with self._lock:
            self._rows = None  # read again, without them
            self._added = {k: v for k, v in self._added.items() if k not in set(wanted)}
        return len(found)

    def _has_any(self, path: str, keys: list[str]) -> bool:
        try:
            with self.fs.open(path, "rb") as fh:
                present = pl.read_parquet(fh, columns=["key"])["key"]
        except FileNotFoundError:
            return False  # merged away meanwhile: the merged chunk is listed too
        return bool(present.is_in(keys).any())

    def _merge_later(self, paths: list[str]) -> None:
        """Merge ``paths`` (chunks this object wrote) in a thread of its own while calls go
        on: polars reads, sorts and writes outside the interpreter lock, on every CPU (the
        thread leaves the one CPU a pinned call thread that starts it has)."""

        def run() -> None:
            try:
                if hasattr(
                    os, "sched_setaffinity"
                ):  # the main thread's CPUs (Linux: its id is the pid)
                    os.sched_setaffinity(0, os.sched_getaffinity(os.getpid()))
                self._merge(paths)
            except Exception as exc:
                _log.warning(
                    "LLM cache %s: merging %d chunks failed (%s); they stay as written",
                    self.dir,
                    len(paths),
                    exc,
                )

        self._merging = threading.Thread(target=run, name=f"llm-cache-merge {self.namespace}")
        self._merging.start()

    def _wait_merge(self) -> None:
        if self._merging is not None:
            self._merging.join()

    def _merge(self, paths: list[str]) -> int:
        """One chunk of ``paths``' answers (newest per key), written before they are deleted:
        a crash at any point loses nothing, and duplicate keys across chunks load as one."""
        if len(paths) < 2:
            return 0
        try:
            frame = self._read(paths)
        except FileNotFoundError:
            return 0  # another process merged some of them first: it has them all
        merged = frame.sort(
            "created_at", descending=True, nulls_last=True, maintain_order=True
        ).unique("key", keep="first", maintain_order=True)
        self._write_frame(merged)
        if isinstance(self.fs, LocalFileSystem):
            for path in paths:
                try:
                    self.fs.rm_file(path)
                except FileNotFoundError:
                    pass  # deleted by a concurrent merge of the same chunks
        else:  # one bulk request per 1,000 keys; a key already gone is no error there
            self.fs.rm(paths)
        return len(paths)

    def _take(self) -> list[dict]:
        batch, self._buffer = self._buffer, []
        return batch

    def _write(self, rows: list[dict]) -> None:
        frame = chunk_frame(rows)
        path = self._write_frame(frame)
        # a large chunk (wide vectors: 1,024 of 3,072 floats are 12.6 MB) is left alone, as
        # settle() leaves it; its size in memory stands for its size on disk (not smaller)
        if frame.estimated_size() < SMALL_CHUNK_BYTES:
            self._fresh.append(path)

    def _write_frame(self, frame: pl.DataFrame) -> str:
        """Write one chunk; its path. Two writes of one object may run at once (a call
        thread's chunk and a background merge): each has its own name, and the lock only
        guards the sweep and the count. An I/O failure is one line naming the folder and
        ARENA_LLM_CACHE_ROOT."""
        with storage_errors(
            what=f"LLM answer cache {self.namespace}",
            writing=True,
            path=self.dir,
            root=self.root,
            setting="ARENA_LLM_CACHE_ROOT",
            where=f"the cache at {self.root}: ARENA_LLM_CACHE_ROOT, empty = under ARENA_LAKE_ROOT",
        ):
            return self._write_chunk(frame)

    def _write_chunk(self, frame: pl.DataFrame) -> str:
        name = f"chunk-{uuid.uuid4().hex}"
        final = f"{self.dir}/{name}.parquet"
        local = isinstance(self.fs, LocalFileSystem)
        self.fs.makedirs(self.dir, exist_ok=True)
        if local:
            self.fs.makedirs(f"{self.dir}/_tmp", exist_ok=True)
            with self._write_lock:
                if not self._swept:  # once per cache object: the chunks of dead writers
                    inflight.sweep(self.fs, f"{self.dir}/_tmp")
                    self._swept = True
            tmp = f"{self.dir}/_tmp/{inflight.temp_name(name)}"
            with self.fs.open(tmp, "wb") as fh:
                frame.write_parquet(fh, compression="zstd")
            self.fs.mv(tmp, final)  # rename: atomic on one filesystem
        else:  # object stores: the object appears whole when the PUT completes
            with self.fs.open(final, "wb") as fh:
                frame.write_parquet(fh, compression="zstd")
        with self._write_lock:
            self.chunks_written += 1
        return final
