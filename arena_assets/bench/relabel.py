"""BenchBuilder's optional second labelling pass: the strong labeler re-asks the seven
criteria for the prompts that survived the cheap labeler's pass (``builder.Relabel``), on
the same input the cheap labels were asked on (``label_text``: every user turn joined, cut
at 12,500 characters).

Labelling every prompt of a month with a strong model is the expensive way; the cheap
labeler (``topic_labels``) filters first and only the few hundred survivors reach the
strong one. It asks the task of the label prompt set that answers the criteria
(``criteria_v0.1``; the whole prompt set's definitions and output format, read by the
anchor's rule); its calls are cached like every LLM call (namespace
``bench_relabel/<prompt set>/<task>``, keyed by model and prompt), and the batch report is
kept for the asset's metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import polars as pl

from arena_assets.bench.schema import CRITERIA
from arena_assets.labels.prompt_sets import PromptSet, load_prompt_set
from arena_assets.llm import BatchReport, LLMRequest, LLMTask, ResponseCache, run_batch


@dataclass
class StrongRelabel:
    """A ``Relabel`` hook backed by an LLM task; ``reports`` holds one batch report per
    call (the text bench and the vision bench each call it once)."""

    task: LLMTask
    cache_root: str
    storage_options: dict = field(default_factory=dict)
    max_prompt_chars: int = 12_500
    reports: list[BatchReport] = field(default_factory=list)
    prompt_set: PromptSet = field(default_factory=load_prompt_set)
    reask_unreadable: bool = False  # as labels.label.LabelConfig: off = the anchor's single call

    def __call__(self, survivors: pl.DataFrame) -> pl.DataFrame:
        lt = next(t for t in self.prompt_set.tasks if "criteria_v0.1" in t.tags)
        version = self.prompt_set.version(lt)
        cache = ResponseCache(
            self.cache_root,
            f"bench_relabel/{self.prompt_set.name}/{lt.id}",
            storage_options=self.storage_options,
        )
        # the input the cheap labels read (all user turns joined), else the prompt
        source = "label_text" if "label_text" in survivors.columns else "prompt"
        reqs = [
            LLMRequest(pid, lt.messages(text[: self.max_prompt_chars]), version)
            for pid, text in survivors.select("prompt_id", source).iter_rows()
        ]
        task = self.task if self.reask_unreadable else replace(self.task, parse_retries=0)
        results, report = run_batch(task, reqs, cache, lt.parse_any)
        cache.flush()
        self.reports.append(report)
        # a failed or unparsed call gives null criteria: the builder drops that prompt
        # (below_quality_after_relabel) rather than keeping the cheap labeler's say-so
        parsed = [r.value["criteria_v0.1"] if r.status == "ok" else (None, False) for r in results]
        return pl.DataFrame(
            {
                "prompt_id": [r.item_id for r in results],
                **{c: [v[c] if ok else None for v, ok in parsed] for c in CRITERIA},
            },
            schema={"prompt_id": pl.String, **dict.fromkeys(CRITERIA, pl.Boolean)},
        )

    def as_metadata(self) -> dict:
        """Calls, cache hits, tokens and cost of the second pass, summed over its batches."""
        rs = self.reports
        return {
            "model": self.task.model,
            "batches": len(rs),
            "items": sum(r.items for r in rs),
            "calls": sum(r.calls for r in rs),
            "cache_hits": sum(r.cache_hits for r in rs),
            "prompt_tokens": sum(r.prompt_tokens for r in rs),
            "completion_tokens": sum(r.completion_tokens for r in rs),
            "estimated_cost": round(sum(r.cost for r in rs), 6),
            "statuses": _sum_statuses(rs),
        }


def _sum_statuses(reports: list[BatchReport]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in reports:
        for k, v in (r.statuses or {}).items():
            out[k] = out.get(k, 0) + v
    return out
