"""Child process for the SIGKILL test: label N prompts through the stand-in server.

Usage: python -m arena_assets_tests.llm_kill_child BASE_URL CACHE_ROOT N CHUNK CONCURRENCY
"""

from __future__ import annotations

import sys

from arena_assets.labels.prompts import CRITERIA_VERSION, criteria_messages, parse_criteria
from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, run_batch


def requests(n: int) -> list[LLMRequest]:
    return [
        LLMRequest(
            f"p{i}", criteria_messages(f"prompt number {i} about topic {i % 7}"), CRITERIA_VERSION
        )
        for i in range(n)
    ]


def main() -> None:
    base_url, root, n, chunk, conc = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    task = LLMTask(
        model="labeler-strong", base_url=base_url, api_key="test-key", max_concurrency=conc
    )
    results, report = run_batch(
        task, requests(n), ResponseCache(root, "kill", chunk), parse_criteria
    )
    print(report.calls, report.cache_hits, sum(r.status == "ok" for r in results))


if __name__ == "__main__":
    main()
