"""raw_logs -> conversations: latest snapshot per conversation, then cleaning.

Two steps so that a large month can be streamed: `latest_snapshots` (DuckDB SQL, see
`arena_assets.clean.snapshots`) needs every event of a conversation at once and runs out of core;
`clean_conversations` is row-local, so the asset feeds it the snapshots batch by batch.
"""

from __future__ import annotations

import hashlib

import polars as pl

from arena_assets.clean.language import LanguageDetector, detect_languages
from arena_assets.clean.moderation import Moderator, moderate_texts
from arena_assets.clean.pii import redact_frame
from arena_assets.clean.schema import CONVERSATIONS_SCHEMA
from arena_assets.clean.snapshots import latest_snapshots
from arena_assets.clean.tokens import approx_tokens
from arena_assets.contracts import MESSAGE_TYPE, PII_TYPES

_EDGE_PUNCT = r"^[\p{P}\p{S}\s]+|[\p{P}\p{S}\s]+$"


def _per_conversation(snapshots: pl.DataFrame) -> pl.DataFrame:
    """Redacted messages and per-conversation counts, keyed by `_row`."""
    messages = (
        snapshots.select("_row", "messages")
        .explode("messages", empty_as_null=True)
        .unnest("messages")
        .filter(pl.col("role").is_not_null())
    )
    messages = messages.with_columns(approx_tokens(pl.col("content")).alias("_tokens"))
    messages = redact_frame(messages, "content")
    is_user = pl.col("role") == "user"
    user_content = pl.col("content").filter(is_user)
    return messages.group_by("_row", maintain_order=True).agg(
        pl.struct("role", "content", "images").alias("messages"),
        is_user.sum().cast(pl.Int32).alias("turns"),
        pl.col("images").list.len().sum().cast(pl.Int32).alias("n_images"),
        pl.col("_tokens").filter(is_user).sum().alias("prompt_tokens"),
        pl.col("_tokens").filter(pl.col("role") == "assistant").sum().alias("response_tokens"),
        *[pl.col(f"pii_{t}").sum().cast(pl.Int32) for t in PII_TYPES],
        user_content.first().alias("first_prompt"),
        pl.col("images").filter(is_user).first().alias("_first_images"),
        user_content.str.join(" ").alias("_user_text"),
    )


def dedup_key(first_prompt: pl.Expr, first_images: pl.Expr) -> pl.Expr:
    """blake2b-64 hex of the normalised first prompt (image refs when there is no text)."""
    # one Python call over both columns: as a polars expression the normalised prompt was
    # computed twice (in the condition and in the branch), a third of this step's CPU
    return pl.struct(first_prompt.alias("prompt"), first_images.alias("images")).map_batches(
        _dedup_keys, return_dtype=pl.String)


def _dedup_keys(pairs: pl.Series) -> pl.Series:
    prompt, images = pairs.struct.field("prompt"), pairs.struct.field("images")
    normalised = (
        _nfkc(prompt.fill_null(""))
        .str.to_lowercase()
        .str.replace_all(r"\s+", " ")
        .str.replace_all(_EDGE_PUNCT, "")
    )
    keyed = pl.DataFrame({"text": normalised, "images": images}).select(
        pl.when(pl.col("text") == "")
        .then(pl.lit("images:") + pl.col("images").list.join(",").fill_null(""))
        .otherwise(pl.col("text"))
    ).to_series()
    return _blake2b_hex16(keyed)


def _nfkc(texts: pl.Series) -> pl.Series:
    """NFKC of the texts that have a non-ASCII character; ASCII text is its own NFKC form,
    and skipping it halves the cost of this step on arena traffic."""
    todo = texts.str.contains(r"[^\x00-\x7f]").fill_null(False).arg_true()
    if not len(todo):
        return texts
    return texts.clone().scatter(todo, texts.gather(todo).str.normalize("NFKC"))


def _blake2b_hex16(texts: pl.Series) -> pl.Series:
    unique = texts.unique()
    digests = [hashlib.blake2b(t.encode(), digest_size=8).hexdigest() for t in unique]
    lookup = dict(zip(unique.to_list(), digests))
    return pl.Series(texts.name, [lookup[t] for t in texts.to_list()], dtype=pl.String)


def clean_conversations(
    snapshots: pl.DataFrame,
    *,
    language_detector: LanguageDetector | None = None,
    moderation: Moderator | None = None,
) -> pl.DataFrame:
    """Latest snapshots (`arena_assets.clean.schema.SNAPSHOT_SCHEMA`) -> rows of CONVERSATIONS_SCHEMA, sorted by conv_id."""
    snapshots = snapshots.sort("conv_id").with_row_index("_row")
    per_conv = _per_conversation(snapshots)
    out = snapshots.drop("messages").join(per_conv, on="_row", how="left", maintain_order="left")
    out = out.with_columns(
        pl.col("messages").fill_null(pl.lit([], dtype=pl.List(MESSAGE_TYPE))),
        *[pl.col(c).fill_null(0) for c in ("turns", "n_images", "prompt_tokens", "response_tokens")],
        *[pl.col(f"pii_{t}").fill_null(0) for t in PII_TYPES],
        dedup_key(pl.col("first_prompt"), pl.col("_first_images")).alias("dedup_key"),
    )
    user_text = out.get_column("_user_text").fill_null("")
    out = out.hstack(
        [
            *detect_languages(user_text, language_detector).get_columns(),
            *moderate_texts(user_text, moderation).get_columns(),  # the moderator clips
        ]
    )
    return out.select([pl.col(c).cast(t) for c, t in CONVERSATIONS_SCHEMA.items()])


def build_conversations(
    raw_logs: pl.DataFrame,
    *,
    month: str,
    language_detector: LanguageDetector | None = None,
    moderation: Moderator | None = None,
) -> pl.DataFrame:
    """The month's conversations table from its raw_logs (see module docstring)."""
    snapshots = latest_snapshots(raw_logs).with_columns(pl.lit(month).alias("month"))
    return clean_conversations(
        snapshots, language_detector=language_detector, moderation=moderation
    )
