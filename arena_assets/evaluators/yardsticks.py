"""Published figures printed beside ours, so a reader knows what "good" looks like.

Each is quoted as its source states it; none is a target the tests assert on our data
(different battles, different judges). Sources: PPE (Frick et al. 2024, "How to Evaluate
Reward Models for RLHF", arXiv 2410.14872) on Chatbot Arena's human preference pairs;
MT-Bench (Zheng et al. 2023, "Judging LLM-as-a-Judge", arXiv 2306.05685) on its
expert votes; OR-Bench (Cui et al. 2024, arXiv 2405.20947) for over-refusal.
"""

from __future__ import annotations

import polars as pl

AGREEMENT_YARDSTICKS = (
    {
        "source": "PPE",
        "judge": "best judge / reward model",
        "metric": "accuracy",
        "slice": "hard prompts",
        "value": 0.686,
    },
    {
        "source": "PPE",
        "judge": "longer wins",
        "metric": "accuracy",
        "slice": "human preference set",
        "value": 0.598,
    },
    {
        "source": "MT-Bench",
        "judge": "GPT-4 (pairwise)",
        "metric": "agreement_without_ties",
        "slice": "expert votes",
        "value": 0.80,
        "note": "> 80 %, about the agreement between two humans",
    },
)


def yardstick_rows(table: pl.DataFrame) -> list[dict]:
    """Each yardstick beside our closest figure: the best judge's (or the ``longer``
    baseline's) value of the same metric on the matching slice of ``table``
    (``agreement.agreement_table`` output)."""
    out = []
    for y in AGREEMENT_YARDSTICKS:
        slice_name = "hard" if y["slice"] == "hard prompts" else "overall"
        rows = table.filter(pl.col("slice") == slice_name)
        if y["judge"] == "longer wins":
            rows = rows.filter(pl.col("judge") == "longer")
        else:
            rows = rows.filter(pl.col("judge_kind") != "baseline")
        ours = rows.sort(y["metric"], descending=True, nulls_last=True).head(1)
        out.append(
            {
                **{k: y[k] for k in ("source", "judge", "metric", "slice")},
                "published": y["value"],
                "ours_judge": ours["judge"][0] if ours.height else None,
                "ours": float(ours[y["metric"]][0])
                if ours.height and ours[y["metric"]][0] is not None
                else None,
                "note": y.get("note", ""),
            }
        )
    return out
