"""Library entry points: simulate months of raw logs with their hidden truth."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from arena_assets.simulator.config import WorldConfig
from arena_assets.simulator.endpoint import ArenaEndpoint, Faults
from arena_assets.simulator.month import MonthSummary, generate_month
from arena_assets.simulator.truth import write_registry, write_world_truth
from arena_assets.simulator.world import World, month_index, month_name


@dataclass(frozen=True)
class SimulationSummary:
    out: str
    seed: int
    months: list[MonthSummary] = field(default_factory=list)

    @property
    def sessions(self) -> int:
        return sum(m.sessions for m in self.months)

    @property
    def events(self) -> int:
        return sum(m.events for m in self.months)

    @property
    def malformed(self) -> int:
        return sum(m.malformed for m in self.months)


def month_range(start: str, n_months: int) -> list[str]:
    first = month_index(start)
    return [month_name(first + k) for k in range(n_months)]


def simulate_months(
    out: str | os.PathLike,
    months: list[str],
    conversations_per_month: int,
    seed: int,
    config: WorldConfig | None = None,
    compress: bool = False,
    completions_per_month: int = 0,
) -> SimulationSummary:
    """Generate ``months`` (any order, each independent) of raw logs under ``out``.

    ``conversations_per_month`` counts sessions: a direct chat (one conversation) or a
    battle (two conversations, usually a vote). Writes ``out/models.json``,
    ``out/YYYY-MM/events-YYYY-MM-DD.jsonl[.gz]`` and ``out/_truth/``; with
    ``completions_per_month``, Copilot Arena completion pairs under ``out/_completions/``
    (``simulator/completions.py``; the chat logs stay byte-identical).
    """
    world = World.build(config or WorldConfig(), seed)
    write_registry(out, world)
    write_world_truth(Path(out), world)
    summaries = [generate_month(world, out, m, conversations_per_month, compress) for m in months]
    if completions_per_month > 0:  # Copilot Arena pairs, from their own random stream
        from arena_assets.simulator.completions import generate_completions

        for m in months:
            generate_completions(world, out, m, completions_per_month)
    return SimulationSummary(str(out), seed, summaries)


def start_endpoint(
    seed: int = 7,
    config: WorldConfig | None = None,
    truth_root: str | os.PathLike | None = None,
    faults: Faults | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    embedding_dim: int = 128,
    labelers: dict[str, float] | None = None,
) -> ArenaEndpoint:
    """Start the simulated arena's OpenAI-compatible server in this process (a daemon
    thread) and return it; ``.base_url`` is where clients go, ``.stop()`` ends it.
    ``truth_root``: a raw root written by ``simulate_months`` (labels and embeddings follow
    its prompt truth); ``port=0`` picks a free port; ``labelers``: labeller model name ->
    label error rate (default ``labeling.LABELERS``)."""
    world = World.build(config or WorldConfig(), seed)
    return ArenaEndpoint(
        world,
        host=host,
        port=port,
        faults=faults,
        truth_root=truth_root,
        embedding_dim=embedding_dim,
        labelers=labelers,
    ).start()
