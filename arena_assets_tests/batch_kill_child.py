"""Child process for the batch kill test: label 40 prompts in batch mode, and wait.

Usage: python -m arena_assets_tests.batch_kill_child BASE_URL CACHE_ROOT

The test holds the simulated arena's jobs in flight (``Faults.batch_hold``), waits for this
process to submit its job, and kills it with SIGKILL while it waits for the job.
"""

from __future__ import annotations

import sys

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, run_batch


def requests() -> list[LLMRequest]:
    return [
        LLMRequest(
            f"p{i}", criteria_messages(f"prompt {i} about sorting in rust"), CRITERIA_VERSION
        )
        for i in range(40)
    ]


def main() -> None:
    base_url, root = sys.argv[1], sys.argv[2]
    task = LLMTask(
        model="sim-labeler-large",
        base_url=base_url,
        mode="batch",
        batch_poll_s=0.02,
        price_input_per_1m=2.0,
        price_output_per_1m=8.0,
        price_input_per_1m_batch=1.0,
        price_output_per_1m_batch=4.0,
    )
    results, report = run_batch(task, requests(), ResponseCache(root, "kill"), parse_criteria)
    print(report.batches_submitted, sum(r.status == "ok" for r in results))


if __name__ == "__main__":
    main()
