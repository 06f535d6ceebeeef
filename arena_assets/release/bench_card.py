"""The bench's dataset card: Arena-Hard-Auto's layout as Hub configurations.

The folder holds Arena-Hard-Auto's own files (``question.jsonl``, ``model_answer/``,
``model_judgment/``), so ``show_result.py`` reads it as it is; the card's header makes each
kind of file a configuration of its own, so ``datasets.load_dataset(folder)`` gives the
questions and ``load_dataset(folder, "answers")`` / ``"judgments"`` the rest, with the
question and judgment fields declared (``judging.layout.card_features``).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from arena_assets.judging.layout import card_features
from arena_assets.release.card import (
    REDACTION,
    card_header,
    language_codes,
    licence_section,
    share_table,
)

# the bench's configurations, Arena-Hard-Auto's three kinds of file; the questions first
BENCH_CONFIGS = {
    "default": "question.jsonl",
    "answers": "model_answer/*.jsonl",
    "judgments": "model_judgment/*/*.jsonl",
}
BENCH_CONFIG_TEXT = {
    "default": "gives the questions",
    "answers": "the candidates' answers",
    "judgments": "the judge's games",
}


def _load_call(config: str) -> str:
    return "load_dataset(folder)" if config == "default" else f'load_dataset(folder, "{config}")'


def bench_card(
    bench: pl.DataFrame,
    *,
    name: str,
    month: str,
    license: str,
    data_files: str = "question.jsonl",
    answers: pl.DataFrame | None = None,
    judgments: pl.DataFrame | None = None,
    protocol: str = "arena-hard-v0.1",
    redacted: dict[str, int] | None = None,
    configs: Mapping[str, str] | None = None,
) -> str:
    """``configs``: configuration name -> data files (``BENCH_CONFIGS`` of the files
    written); the questions alone by default."""
    langs = language_codes(bench)
    configs = configs or {"default": data_files}
    header = card_header(
        pretty_name=f"Arena bench {month}",
        license=license,
        languages=langs,
        rows=bench.height,
        task_categories=["text-generation"],
        data_files=data_files,
        tags=["arena", "benchmark", "llm-as-a-judge"],
        configs=configs,
        features=card_features(protocol),
    )
    played = judgments.filter(pl.col("status") != "no_answer") if judgments is not None else None
    body = [
        f"# {name}\n",
        f"Hard, diverse prompts chosen automatically from the arena's traffic of {month}, "
        "for judging models against a baseline with an LLM judge.\n",
        "## Layout\n",
        f"Arena-Hard-Auto's own files, fields of `{protocol}`: `question.jsonl` (the prompts), "
        "`model_answer/<model>.jsonl` (each candidate's answers with their token and markdown "
        "counts) and `model_judgment/<judge>/<model>.jsonl` (one record per question and model, "
        "two games with positions swapped; `score` is the verdict, null when unparsed). "
        "Arena-Hard-Auto's `show_result.py` reads the folder as it is.\n",
        "With the `datasets` library: "
        + ", ".join(
            f"`{_load_call(n)}` {BENCH_CONFIG_TEXT.get(n, n)} (`{path}`)"
            for n, path in configs.items()
        )
        + ".\n",
        "## Counts\n",
        f"- prompts: {bench.height:,}",
        *(
            [f"- categories: {bench['category'].n_unique():,}"]
            if "category" in bench.columns
            else []
        ),
        *([f"- clusters: {bench['cluster'].n_unique():,}"] if "cluster" in bench.columns else []),
        *(
            [f"- answers: {answers.height:,} from {answers['model'].n_unique():,} models"]
            if answers is not None
            else []
        ),
        *(
            [
                f"- games judged: {played.height:,} ({int((~played['parsed']).sum()):,} unparsed) by "
                f"{played['judge'].n_unique():,} judge(s)"
            ]
            if played is not None
            else []
        ),
        "",
        *(
            ["## Categories\n", share_table(bench, "category", "category")]
            if "category" in bench.columns
            else []
        ),
        *(
            ["## Languages\n", share_table(bench, "language", "language")]
            if "language" in bench.columns
            else []
        ),
        "## Redaction\n",
        REDACTION,
        *(
            [
                f"\nThe answers and judge texts were written by models after cleaning, so they are redacted "
                f"here with the same rules and refused likewise: {redacted['answers']:,} answer texts and "
                f"{redacted['judgments']:,} judge texts had PII replaced."
            ]
            if redacted is not None and (answers is not None or judgments is not None)
            else []
        ),
        "",
        "## User keys\n",
        "This dataset holds no user identifier: the prompts are the redacted text of the "
        "month's conversations, without who wrote them; the answers and judgments were "
        "written by models.\n",
        licence_section(license),
    ]
    return header + "\n" + "\n".join(body)
