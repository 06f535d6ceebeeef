"""Published figures printed beside ours, so a reader knows what "good" looks like.

Each is quoted as its source states it, and compared on the slice its source measured it
on; none is a target the tests assert on our data (different battles, different judges).
Sources: PPE (Frick et al. 2024, "How to Evaluate Reward Models for RLHF", arXiv
2410.14872, and its blog post) on Chatbot Arena's human preference pairs: its best judge's
accuracy (68.59 %) and the "longer wins" baseline's (59.81 %) are figures of its
hard-prompt subset, so both sit beside our ``hard`` slice (the battles whose first prompt
meets 6 or more of the 7 hard-prompt criteria), never beside ``overall``; MT-Bench (Zheng
et al. 2023, "Judging LLM-as-a-Judge", arXiv 2306.05685) on its expert votes, beside
``overall``.
"""

from __future__ import annotations

import polars as pl

# our slice of agreement.agreement_table that each yardstick's slice corresponds to
SLICE_OF = {"hard prompts": "hard", "expert votes": "overall"}

AGREEMENT_YARDSTICKS = (
    {
        "source": "PPE",
        "judge": "best judge / reward model",
        "metric": "accuracy",
        "slice": "hard prompts",
        "value": 0.6859,
    },
    {
        "source": "PPE",
        "judge": "longer wins",
        "metric": "accuracy",
        "slice": "hard prompts",
        "value": 0.5981,
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
    baseline's) value of the same metric on the slice of ``table``
    (``agreement.agreement_table`` output) that matches the yardstick's own
    (``SLICE_OF``); ``ours`` is null, and ``note`` says why, when the month has no such
    slice (fewer battles than the minimum a slice is reported with)."""
    out = []
    for y in AGREEMENT_YARDSTICKS:
        slice_name = SLICE_OF[y["slice"]]
        rows = table.filter(pl.col("slice") == slice_name)
        if y["judge"] == "longer wins":
            rows = rows.filter(pl.col("judge") == "longer")
        else:
            rows = rows.filter(pl.col("judge_kind") != "baseline")
        ours = rows.sort(y["metric"], descending=True, nulls_last=True).head(1)
        value = ours[y["metric"]][0] if ours.height else None
        note = y.get("note", "")
        if not table.filter(pl.col("slice") == slice_name).height:
            note = f"no `{slice_name}` slice this month (too few battles to report it)"
        out.append(
            {
                **{k: y[k] for k in ("source", "judge", "metric", "slice")},
                "published": y["value"],
                "ours_slice": slice_name,
                "ours_judge": ours["judge"][0] if ours.height else None,
                "ours": float(value) if value is not None else None,
                "note": note,
            }
        )
    return out
