"""Draw the site's figures, in this process or in a few worker processes.

A month has a few dozen to a few hundred small SVGs (four per board, one per model);
matplotlib draws one at a time per process, so with ``workers > 1`` they are spread over
a ``spawn`` pool (not ``fork``: the caller may hold polars' and numpy's threads). Every
figure is a pure function of its arguments, so the bytes do not depend on where it ran.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

POOL_MIN_JOBS = 40


def _draw(job: tuple) -> list[tuple[str, bytes]]:
    """A job is (path, plots function name, keyword arguments), or (tuple of paths, name,
    arguments) for a function that returns one figure per path."""
    from arena_assets.site import plots

    path, name, kwargs = job
    drawn = getattr(plots, name)(**kwargs)
    return list(zip(path, drawn, strict=True)) if isinstance(path, tuple) else [(path, drawn)]


def _draw_chunk(jobs: list) -> list[tuple[str, bytes]]:
    return [pair for job in jobs for pair in _draw(job)]


def draw_all(jobs: list[tuple], workers: int = 1) -> dict[str, bytes]:
    """path -> SVG bytes for every job (see ``_draw``)."""
    # a worker costs ~1 CPU-s to start (matplotlib's import): below ~40 figures (a month of
    # a few boards, the demo's) one process is as fast
    if workers <= 1 or len(jobs) < POOL_MIN_JOBS:
        return dict(_draw_chunk(jobs))
    # a few chunks per worker: one start-up (importing matplotlib) per process, balanced
    chunks = [jobs[i :: workers * 2] for i in range(workers * 2)]
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        done = [pair for part in pool.map(_draw_chunk, chunks) for pair in part]
    return dict(sorted(done))
