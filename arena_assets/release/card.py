"""Dataset cards: a Hugging Face `README.md` with a YAML header and a body a reader can check.

The header carries what the Hub indexes (configs with their data files, licence, language
codes, size category, task categories, pretty name, tags); the body gives the counts, the
languages, categories and models with their shares, the licence, how the rows were cleaned
and redacted, and, for the datasets that hold user keys (chat and battle), how those keys
join. Each card says only what is true of its own dataset: the bench and SFT exports hold
no user identifier, so their cards say that. Every figure is computed from the frame that
was written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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


def share_table(frame: pl.DataFrame, column: str, title: str, limit: int = 30) -> str:
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


def card_header(
    *,
    pretty_name: str,
    license: str,
    languages: list[str],
    rows: int,
    task_categories: list[str],
    data_files: str,
    tags: list[str],
    configs: Mapping[str, str] | None = None,
    features: Mapping[str, list[dict]] | None = None,
) -> str:
    """The YAML header; ``configs`` maps each configuration name to its data files (the
    first is the one ``load_dataset(folder)`` reads); by default one ``default`` config.
    ``features``: configuration name -> its declared fields (``dataset_info``), for the
    configurations whose types a reader must not infer."""
    configs = configs or {"default": data_files}
    meta = {
        "pretty_name": pretty_name,
        "license": license,
        "language": languages,
        "size_categories": [size_category(rows)],
        "task_categories": task_categories,
        "tags": tags,
        "configs": [
            {"config_name": name, "data_files": [{"split": "train", "path": path}]}
            for name, path in configs.items()
        ],
    }
    if features:
        meta["dataset_info"] = [
            {"config_name": name, "features": list(fields)}
            for name, fields in features.items()
            if name in configs
        ]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


REDACTION = (
    "Text was redacted before it reached this release: email addresses, phone numbers, IP "
    "addresses, card numbers, IBANs, national identity numbers, street addresses and "
    "secrets (keys, tokens) are replaced by typed placeholders ("
    + ", ".join(f"`<{t.upper()}>`" for t in PII_TYPES)
    + "), and the release refuses any text on which the same detector still fires. Raw logs "
    "are never part of a release."
)


def licence_section(license: str) -> str:
    """The licence in the card's text, the same identifier as the header's ``license``."""
    text = f"## Licence\n\nThis dataset is released under the licence `{license}`"
    if license == "other":
        text += " (a licence outside the Hub's list: the publisher's own terms apply)"
    return text + ".\n"


@dataclass(frozen=True)
class UserKeys:
    """How the user keys of one month's chat and battle datasets join, counted on the
    frames written: ``voters`` distinct battle judges, ``voters_in_chat`` of them also a
    chat ``user_id``; ``release`` the name the salt was derived from (by default the
    month), ``battles`` whether the month has a battle dataset."""

    month: str
    release: str
    users: int
    voters: int = 0
    voters_in_chat: int = 0
    battles: bool = False

    @classmethod
    def of(cls, month: str, release: str, chat: pl.DataFrame, battle: pl.DataFrame | None):
        users = set(chat["user_id"].drop_nulls())
        if battle is None:
            return cls(month, release, len(users))
        voters = set(battle["judge"].drop_nulls())
        return cls(month, release, len(users), len(voters), len(voters & users), True)


def user_keys_section(keys: UserKeys, column: str) -> str:
    """What a chat or battle card says about its keys: re-keyed for this release, shared
    between the month's chat ``user_id`` and battle ``judge`` (with the count of voters
    found among the chat users), and joined with no other month."""
    lines = [
        "## User keys\n",
        f"`{column}` is the lake's salted user hash re-keyed for this release alone "
        "(HMAC-SHA256 under a salt derived from the release's name and an operator secret); "
        "no key matches the operator's tables.",
    ]
    if keys.battles:
        share = "all" if keys.voters_in_chat == keys.voters else f"{keys.voters_in_chat:,} of"
        lines.append(
            f"Within this month's release the chat `user_id` (arena-chat-{keys.month}) and "
            f"the battle `judge` (arena-battle-{keys.month}) are one key for one person: "
            f"{share} the {keys.voters:,} judges of {keys.month} appear as chat users."
        )
    if keys.release == keys.month:
        lines.append(
            "No key joins two months: each month's release has its own salt, so a person "
            "active in two months has two unrelated keys."
        )
    else:
        lines.append(
            f"The salt is that of release name `{keys.release}`: releases of another name "
            "(by default each month's own) share no key with this one; releases written "
            "under this same name share its keys."
        )
    return "\n".join(lines) + "\n"


def chat_card(
    chat: pl.DataFrame,
    *,
    name: str,
    month: str,
    license: str,
    keys: UserKeys | None = None,
    data_files: str = "data/train-*",
) -> str:
    keys = keys or UserKeys.of(month, month, chat, None)
    langs = language_codes(chat)
    flagged = chat["moderation_flagged"].sum() if chat.height else 0
    header = card_header(
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
        share_table(chat, "language", "language"),
        "## Models\n",
        share_table(chat, "model", "model"),
        "## How it was cleaned\n",
        "One row per conversation id (its latest logged snapshot); malformed log lines were "
        "rejected with a reason and are not here; the language is fastText lid.176 on the "
        "user turns with code and URLs removed.\n",
        "## Redaction\n",
        REDACTION,
        "",
        user_keys_section(keys, "user_id"),
        licence_section(license),
    ]
    return header + "\n" + "\n".join(body)


def battle_card(
    battle: pl.DataFrame,
    counts: Mapping,
    *,
    name: str,
    month: str,
    license: str,
    keys: UserKeys,
    data_files: str = "data/train-*",
) -> str:
    langs = language_codes(battle)
    header = card_header(
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
        share_table(battle, "winner", "winner"),
        "## Languages\n",
        share_table(battle, "language", "language"),
        "## Models (side A)\n",
        share_table(battle, "model_a", "model"),
        "## How it was cleaned\n",
        "Votes were removed, each under its first reason, in this order: not anonymous, same "
        "model, a model naming itself or another, anomalous voter (sequential likelihood-ratio "
        "test against the crowd), vote bursts, a daily cap per voter, and over-popular "
        "prompts sampled down. Removed here:\n",
        "\n".join(removed_lines),
        "",
        "## Redaction\n",
        REDACTION,
        "",
        user_keys_section(keys, "judge"),
        licence_section(license),
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
    header = card_header(
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
        "moderation.\n\n## Redaction\n\n"
        + REDACTION
        + "\n\n## User keys\n\nThis dataset holds no user identifier: a line is the "
        "conversation's messages alone.\n\n" + licence_section(license)
    )


def parse_card(text: str) -> tuple[dict, str]:
    """(YAML header, body) of a card; raises ValueError when the header is not there."""
    if not text.startswith("---\n"):
        raise ValueError("a dataset card starts with a YAML header between --- lines")
    head, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(head), body
