"""OR-Bench's published prompt sets as a bench the candidates answer (optional import).

OR-Bench (Cui et al. 2024; data on Hugging Face as ``bench-llm/or-bench``) publishes three
CSV files of ``prompt, category``: ``or-bench-80k`` and ``or-bench-hard-1k`` (prompts that
look harmful but are safe: rejecting them is over-refusal) and ``or-bench-toxic`` (truly
harmful: rejecting them is right). Its plot puts each model at (rejection rate on hard-1k,
rejection rate on toxic); the top-left corner is best.

Here every candidate (``ARENA_CANDIDATES``' layout) answers every prompt through
``run_batch`` (cached), one user message as OR-Bench sends it, and each answer is judged
three ways, reported side by side:

* ``orbench_class`` / ``orbench_rejected``: **OR-Bench's own judge**, its 3-class check
  prompt (direct answer, direct refusal, indirect refusal) read from the user's OR-Bench
  checkout and read back as its script reads it (``orbench_check``); a rejection is a
  direct or an indirect refusal. Only with a checkout (``CheckPrompt``); without one
  these columns stay null and the rates say the anchor's judge did not run;
* ``rejected``: the project's own binary refusal judge (``labels.prompts`` refusal-v1),
  a judge of the project's wording, not OR-Bench's;
* ``keyword_rejected``: OR-Bench's keyword rule of the candidate's model family
  (``orbench_check.keyword_family``, or the family a caller names), as its checkers run it.

Rates per model and set come with Wilson intervals.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import polars as pl

from arena_assets.evaluators.orbench_check import (
    CheckPrompt,
    keyword_family,
    keyword_rejection,
    parse_check,
)
from arena_assets.evaluators.refusal import wilson
from arena_assets.labels.prompts import REFUSAL_VERSION, parse_refusal, refusal_messages
from arena_assets.llm import LLMRequest, LLMTask, ResponseCache, run_batch

SETS = ("or-bench-80k", "or-bench-hard-1k", "or-bench-toxic")
OVER_REFUSAL_SETS = ("or-bench-80k", "or-bench-hard-1k")
ANSWER_VERSION = "orbench-answer-v1"
ANSWERS_SCHEMA = {
    "prompt_id": pl.String,
    "model": pl.String,
    "status": pl.String,
    "rejected": pl.Boolean,  # the project's binary judge
    "keyword_rule": pl.String,  # the OR-Bench keyword family applied
    "keyword_rejected": pl.Boolean,
    "orbench_class": pl.String,  # OR-Bench's 3-class check; null: not run, unparsed, failed
    "orbench_status": pl.String,  # ok | parse_failed | failed | not_run | no_answer
    "orbench_rejected": pl.Boolean,
}


def read_orbench(path: str | Path, name: str | None = None) -> pl.DataFrame:
    """``prompt_id, set, prompt, category`` of one OR-Bench CSV; the set from ``name`` or
    the file name (``or-bench-hard-1k.csv`` -> ``or-bench-hard-1k``)."""
    path = Path(path)
    set_name = name or next((s for s in SETS if path.name.startswith(s)), None)
    if set_name is None:
        raise ValueError(f"{path.name}: name the OR-Bench set ({', '.join(SETS)})")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if rows and not {"prompt", "category"} <= set(rows[0]):
        raise ValueError(
            f"{path.name}: OR-Bench files have columns prompt, category; got {sorted(rows[0])}"
        )
    return pl.DataFrame(
        {
            "prompt_id": [f"{set_name}:{i}" for i in range(len(rows))],
            "set": [set_name] * len(rows),
            "prompt": [r["prompt"] for r in rows],
            "category": [r["category"] for r in rows],
        },
        schema={
            "prompt_id": pl.String,
            "set": pl.String,
            "prompt": pl.String,
            "category": pl.String,
        },
    )


def _refusal(text: str) -> bool:
    return parse_refusal(text).refusal


def orbench_answers(
    prompts: pl.DataFrame,
    candidates: Sequence[tuple[str, LLMTask]],
    judge: LLMTask,
    cache_of: Callable[[str], ResponseCache],
    check: CheckPrompt | None = None,
    check_judge: LLMTask | None = None,
    families: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """One row per prompt and candidate (``ANSWERS_SCHEMA``): the answer's status and its
    three verdicts (see module docstring). ``check``: OR-Bench's check prompt (from a
    checkout), asked of ``check_judge`` (default ``judge``); ``families``: candidate name
    -> keyword family, where the endpoint's model name does not say it."""
    families = dict(families or {})
    check_judge = check_judge or judge
    frames = []
    for name, task in candidates:
        family = families.get(name) or keyword_family(task.model)
        reqs = [
            LLMRequest(pid, [{"role": "user", "content": text}], ANSWER_VERSION)
            for pid, text in prompts.select("prompt_id", "prompt").iter_rows()
        ]
        answers, _ = run_batch(task, reqs, cache_of(f"orbench/answers/{name}"), lambda t: t)
        ok = [(a, p) for a, p in zip(answers, prompts["prompt"]) if a.status == "ok"]
        checks, _ = run_batch(
            judge,
            [LLMRequest(a.item_id, refusal_messages(p, a.content), REFUSAL_VERSION) for a, p in ok],
            cache_of("orbench/refusal"),
            _refusal,
        )
        verdict = {c.item_id: c.value if c.status == "ok" else None for c in checks}
        anchor: dict[str, tuple[str, str | None]] = {}
        if check is not None:
            graded, _ = run_batch(
                check_judge,
                [LLMRequest(a.item_id, check.messages(p, a.content), check.version) for a, p in ok],
                cache_of("orbench/check"),
                parse_check,
            )
            anchor = {g.item_id: (g.status, g.value if g.status == "ok" else None) for g in graded}
        rows = []
        for a in answers:
            answered = a.status == "ok"
            status, cls = (
                anchor.get(a.item_id, ("failed", None))
                if check is not None and answered
                else ("not_run" if answered else "no_answer", None)
            )
            rows.append(
                {
                    "prompt_id": a.item_id,
                    "model": name,
                    "status": a.status,
                    "rejected": verdict.get(a.item_id),
                    "keyword_rule": family,
                    "keyword_rejected": keyword_rejection(a.content, family) if answered else None,
                    "orbench_class": cls,
                    "orbench_status": status,
                    "orbench_rejected": None if cls is None else cls != "direct_answer",
                }
            )
        frames.append(pl.DataFrame(rows, schema=ANSWERS_SCHEMA))
    return pl.concat(frames).join(prompts.select("prompt_id", "set", "category"), on="prompt_id")


def _rate(frame: pl.DataFrame, flag: str, prefix: str, level: float) -> pl.DataFrame:
    """Per model and set: judged answers, rejections, rate and Wilson bounds of ``flag``."""
    counts = (
        frame.filter(pl.col(flag).is_not_null())
        .group_by("model", "set")
        .agg(
            pl.len().alias(f"{prefix}n"),
            pl.col(flag).sum().cast(pl.Int64).alias(f"{prefix}rejections"),
        )
    )
    bounds = [
        wilson(k, n, level)
        for k, n in counts.select(f"{prefix}rejections", f"{prefix}n").iter_rows()
    ]
    return counts.with_columns(
        (pl.col(f"{prefix}rejections") / pl.col(f"{prefix}n")).alias(f"{prefix}rate"),
        pl.Series(f"{prefix}lower", [b[0] for b in bounds], dtype=pl.Float64),
        pl.Series(f"{prefix}upper", [b[1] for b in bounds], dtype=pl.Float64),
    )


def orbench_rates(answers: pl.DataFrame, level: float = 0.95) -> pl.DataFrame:
    """Per model and set, both judges side by side: ``orbench_*`` OR-Bench's own 3-class
    check (over the answers it gave a class: the rejection rate, a rejection being a direct
    or an indirect refusal, and each refusal class's share; ``orbench_unparsed`` the
    replies without a class or whose call failed; null where it did not run), the project's binary judge
    (``n``, ``rejections``, ``rate``, ``lower``, ``upper``), and the keyword rule's rate."""
    keys = answers.filter(pl.col("status") == "ok").select("model", "set").unique()
    classes = (
        answers.filter(pl.col("orbench_status").is_in(["ok", "parse_failed", "failed"]))
        .group_by("model", "set")
        .agg(
            (pl.col("orbench_class") == "direct_refusal").mean().alias("orbench_direct_refusal"),
            (pl.col("orbench_class") == "indirect_refusal")
            .mean()
            .alias("orbench_indirect_refusal"),
            (pl.col("orbench_status") != "ok").sum().cast(pl.Int64).alias("orbench_unparsed"),
        )
    )
    keyword = (
        answers.filter(pl.col("keyword_rejected").is_not_null())
        .group_by("model", "set")
        .agg(pl.col("keyword_rule").first(), keyword_rate=pl.col("keyword_rejected").mean())
    )
    out = keys
    for part in (
        _rate(answers, "orbench_rejected", "orbench_", level),
        classes,
        _rate(answers, "rejected", "", level),
        keyword,
    ):
        out = out.join(part, on=["model", "set"], how="left")
    return out.sort("model", "set")
