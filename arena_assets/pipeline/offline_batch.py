"""A month's requests of one LLM task as files answered elsewhere (``llm.offline``): every
LLM asset's month step in planning mode (``pipeline.plan.PLANNERS``, over a lake that
writes nothing), its task's requests collected for ``arena-assets llm export-batch`` or
answered from a response file for ``arena-assets llm import-batch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from arena_assets.llm.client import LLMEndpointError
from arena_assets.llm.offline import OfflineRun, offline, read_responses
from arena_assets.pipeline import LLM_ASSETS
from arena_assets.pipeline.plan import PLANNERS, MonthSettings
from arena_assets.storage import Lake

# --task names -> the settings their tasks are bound to (LLMTask.setting)
TASKS = {"labeler": "LABELER", "embed": "EMBED", "judge": "JUDGE", "candidates": "CANDIDATES"}


@dataclass
class MonthRequests:
    run: OfflineRun
    skipped: dict[str, str] = field(default_factory=dict)  # asset -> why it was not planned
    # import: outcomes of the lines that name no request once (line -> outcome)
    other_lines: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    def outcomes(self) -> dict[str, tuple[str, str | None]]:
        """Every line of the response file: custom_id (or "line N") -> (outcome, error)."""
        run = self.run
        unknown = {
            cid: ("unknown", "no pending request of the task this month")
            for cid in (run.responses or {})
            if cid not in run.pending
        }
        return {**run.outcomes, **unknown, **self.other_lines}

    def still_pending(self) -> int:
        """Pending requests the response file did not answer."""
        return sum(1 for k in self.run.pending if k not in self.run.outcomes)


def month_requests(
    lake: Lake,
    month: str,
    settings: MonthSettings,
    task: str,
    responses: bytes | None = None,
    assets: Sequence[str] = LLM_ASSETS,
) -> MonthRequests:
    """The task's pending requests of ``month`` (export), or, with ``responses`` (a
    Batch-API output file's bytes), their answers validated and cached (import)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
    parsed, others = read_responses(responses) if responses is not None else (None, {})
    out = MonthRequests(OfflineRun(TASKS[task], parsed), other_lines=others)
    with offline(out.run):
        for asset in assets:
            try:
                PLANNERS[asset](lake, month, settings)
            except (ValueError, LLMEndpointError) as exc:  # its settings: the others go on
                out.skipped[asset] = str(exc)
    return out
