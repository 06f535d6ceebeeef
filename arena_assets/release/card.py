"""Dataset cards: a Hugging Face `README.md` with a YAML header and a body a reader can check.

The header carries what the Hub indexes (configs with their data files, licence, language
codes, size category, task categories, pretty name, tags); the body gives the counts, the
languages, categories and models with their shares, and how the rows were cleaned and
redacted. Every figure is computed from the frame that was written.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl
import yaml

from arena_assets.contracts import PII_TYPES

# the Hub's size buckets, upper bounds exclusive
_SIZES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
)


def size_category(rows: int) -> str:
    for bound, label in _SIZES:
        if rows < bound:
            return label
    return "100M<n<1B"


def language_codes(frame: pl.DataFrame) -> list[str]:
    """ISO 639-1 codes present, most frequent first; "und" (undecided) is not a language."""
    if "language" not in frame.columns or frame.height == 0:
        return []
    counts = (
        frame.filter(pl.col("language").is_not_null() & (pl.col("language") != "und"))
        .group_by("language")
        .len()
        .sort(["len", "language"], descending=[True, False])
    )
    return counts["language"].to_list()


def _table(frame: pl.DataFrame, column: str, title: str, limit: int = 30) -> str:
    if column not in frame.columns or frame.height == 0:
        return ""
    values = frame[column]
    if values.dtype == pl.List(pl.String):
        values = values.explode(empty_as_null=True)  # an empty list counts as "(none)"
    counts = (
        values.fill_null("(none)")
        .value_counts(sort=True, name="n")
        .sort(["n", column], descending=[True, False])
    )
    total = int(counts["n"].sum())
    lines = [f"| {title} | rows | share |", "| --- | ---: | ---: |"]
    for value, n in counts.head(limit).iter_rows():
        lines.append(f"| {value} | {n:,} | {n / total:.1%} |")
    if counts.height > limit:
        lines.append(f"| ({counts.height - limit} more) | {int(counts['n'][limit:].sum()):,} | |")
    return "\n".join(lines) + "\n"


def _header(
    *,
    pretty_name: str,
    license: str,
    languages: list[str],
    rows: int,
    task_categories: list[str],
    data_files: str,
    tags: list[str],
) -> str:
    meta = {
        "pretty_name": pretty_name,
        "license": license,
        "language": languages,
        "size_categories": [size_category(rows)],
        "task_categories": task_categories,
        "tags": tags,
        "configs": [
            {"config_name": "default", "data_files": [{"split": "train", "path": data_files}]}
        ],
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


_REDACTION = (
    "Text was redacted before it reached this release: email addresses, phone numbers, IP "
    "addresses, card numbers and street addresses are replaced by typed placeholders ("
    + ", ".join(f"`<{t.upper()}>`" for t in PII_TYPES)
    + "), and the release refuses any text on which the same detector still fires. User "
    "identifiers are keyed hashes re-keyed for this release alone (HMAC-SHA256 under a "
    "per-release salt): they are consistent inside the release and cannot be joined with "
    "another release or with the operator's tables. Raw logs are never part of a release."
)


def chat_card(
    chat: pl.DataFrame, *, name: str, month: str, license: str, data_files: str = "data/train-*"
) -> str:
    langs = language_codes(chat)
    flagged = chat["moderation_flagged"].sum() if chat.height else 0
    header = _header(
        pretty_name=f"Arena chats {month}",
        license=license,
        languages=langs,
        rows=chat.height,
        task_categories=["text-generation"],
        data_files=data_files,
        tags=["arena", "conversations", "chat"],
    )
    body = [
        f"# {name}\n",
        f"Every cleaned conversation of {month} on the arena: one row per conversation, its "
        "latest snapshot, with the model that answered and the conversation's language.\n",
        "## Counts\n",
        f"- conversations: {chat.height:,}",
        f"- users: {chat['user_id'].n_unique():,}",
        f"- models: {chat['model'].n_unique():,}",
        f"- languages: {len(langs)} (plus `und` where the language was undecidable)",
        f"- conversations with images: {int((chat['images'].list.len() > 0).sum()):,}",
        f"- conversations with redacted PII: {int(chat['redacted'].sum()):,}",
        f"- flagged by moderation: {int(flagged or 0):,}"
        + (
            " (no moderation endpoint configured: column empty)"
            if chat.height and chat["moderation_flagged"].null_count() == chat.height
            else ""
        ),
        "",
        "## Languages\n",
        _table(chat, "language", "language"),
        "## Models\n",
        _table(chat, "model", "model"),
        "## How it was cleaned\n",
        "One row per conversation id (its latest logged snapshot); malformed log lines were "
        "rejected with a reason and are not here; the language is fastText lid.176 on the "
        "user turns with code and URLs removed.\n",
        "## Redaction\n",
        _REDACTION,
        "",
    ]
    return header + "\n" + "\n".join(body)


def battle_card(
    battle: pl.DataFrame,
    counts: Mapping,
    *,
    name: str,
    month: str,
    license: str,
    data_files: str = "data/train-*",
) -> str:
    langs = language_codes(battle)
    header = _header(
        pretty_name=f"Arena battles {month}",
        license=license,
        languages=langs,
        rows=battle.height,
        task_categories=["text-classification"],
        data_files=data_files,
        tags=["arena", "human-preference", "battles"],
    )
    removed = counts.get("removed_by_reason", {})
    removed_lines = [f"- {reason}: {n:,}" for reason, n in removed.items()] or ["- none"]
    body = [
        f"# {name}\n",
        f"Anonymous pairwise votes of {month}: two models answered the same prompt, the user "
        "voted (`model_a`, `model_b`, `tie`, `tie (bothbad)`); both conversations included.\n",
        "## Counts\n",
        f"- battles released: {battle.height:,}",
        f"- votes logged: {counts.get('votes', 0):,}; kept after filtering: {counts.get('kept', 0):,}",
        f"- kept but left out (a conversation missing from the month): "
        f"{counts.get('missing_conversation', 0):,}",
        f"- voters: {battle['judge'].n_unique():,}",
        f"- models: {len(set(battle['model_a']) | set(battle['model_b'])):,}",
        "",
        "## Outcomes\n",
        _table(battle, "winner", "winner"),
        "## Languages\n",
        _table(battle, "language", "language"),
        "## Models (side A)\n",
        _table(battle, "model_a", "model"),
        "## How it was cleaned\n",
        "Votes were removed, each under its first reason, in this order: not anonymous, same "
        "model, a model naming itself or another, anomalous voter (sequential likelihood-ratio "
        "test against the crowd), vote bursts, a daily cap per voter, and over-popular "
        "prompts sampled down. Removed here:\n",
        "\n".join(removed_lines),
        "",
        "## Redaction\n",
        _REDACTION,
        "",
    ]
    return header + "\n" + "\n".join(body)


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
) -> str:
    langs = language_codes(bench)
    header = _header(
        pretty_name=f"Arena bench {month}",
        license=license,
        languages=langs,
        rows=bench.height,
        task_categories=["text-generation"],
        data_files=data_files,
        tags=["arena", "benchmark", "llm-as-a-judge"],
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
            ["## Categories\n", _table(bench, "category", "category")]
            if "category" in bench.columns
            else []
        ),
        *(
            ["## Languages\n", _table(bench, "language", "language")]
            if "language" in bench.columns
            else []
        ),
        "## Redaction\n",
        _REDACTION,
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
    ]
    return header + "\n" + "\n".join(body)


def sft_card(
    count: int,
    *,
    name: str,
    month: str,
    license: str,
    languages: list[str],
    data_files: str = "data/train.jsonl",
) -> str:
    header = _header(
        pretty_name=f"Arena chats {month}, SFT format",
        license=license,
        languages=languages,
        rows=count,
        task_categories=["text-generation"],
        data_files=data_files,
        tags=["arena", "sft", "chat"],
    )
    return header + (
        f"\n# {name}\n\n{count:,} conversations of the month's Chat release as OpenAI chat "
        'messages, one JSON object per line: `{"messages": [{"role": ..., "content": ...}]}`. '
        "Text-only conversations that end with the assistant's answer and were not flagged by "
        "moderation; no user identifier.\n\n## Redaction\n\n" + _REDACTION + "\n"
    )


def parse_card(text: str) -> tuple[dict, str]:
    """(YAML header, body) of a card; raises ValueError when the header is not there."""
    if not text.startswith("---\n"):
        raise ValueError("a dataset card starts with a YAML header between --- lines")
    head, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(head), body
