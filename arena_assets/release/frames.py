"""The rows a public release holds: Chat, Battle and Bench frames built from lake tables.

Only redacted tables go in: `conversations` (PII replaced by placeholders at cleaning),
`battles` (no message text; its conversations come from `conversations`) and a bench of
prompts taken from `conversations`. Each builder selects an explicit list of columns, refuses
a frame that carries raw_logs columns, and refuses text on which the PII detector still
fires, so an unredacted string cannot reach a release by a wrong join or a stale table.

User and voter hashes are re-keyed per release: HMAC-SHA256 of the stored hash under a
release salt (`release_salt`), so a hash in one release matches neither the lake's hashes
nor another release's, while staying consistent inside the release (a user's chats and
votes share one id).
"""

from __future__ import annotations

import hashlib
import hmac

import polars as pl

from arena_assets.clean.pii import contains_pii, redact_expr
from arena_assets.clean.schema import CONVERSATIONS_SCHEMA
from arena_assets.contracts import PII_TYPES
from arena_assets.errors import ArenaError
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA

# columns of raw_logs / raw_rejects that hold original text or point back into the raw
# files: their presence means someone passed an unredacted table
RAW_ONLY_COLUMNS = frozenset({"messages_a", "messages_b", "raw", "source_file", "line_no"})
assert RAW_ONLY_COLUMNS & set(RAW_LOGS_SCHEMA) and not RAW_ONLY_COLUMNS & set(CONVERSATIONS_SCHEMA)
RELEASE_HASH_CHARS = 20  # 80 bits, like the lake's user_hash

TURN_TYPE = pl.Struct({"role": pl.String, "content": pl.String})
CHAT_SCHEMA = {
    "conversation_id": pl.String,
    "model": pl.String,
    "conversation": pl.List(TURN_TYPE),
    "images": pl.List(pl.String),  # sha256 of each user image, in order (no pixels)
    "turn": pl.Int32,
    "language": pl.String,
    "tstamp": pl.Datetime("us", "UTC"),
    "user_id": pl.String,  # re-keyed per release
    "anony": pl.Boolean,
    "redacted": pl.Boolean,  # a PII placeholder replaced something in this conversation
    "moderation_flagged": pl.Boolean,
    "moderation_categories": pl.String,
}
STYLE_FIELDS = (
    "sum_assistant_tokens",
    "header_count",
    "ordered_list_count",
    "unordered_list_count",
    "list_count",
    "bold_count",
)
BATTLE_SCHEMA = {
    "question_id": pl.String,
    "model_a": pl.String,
    "model_b": pl.String,
    "winner": pl.String,
    "judge": pl.String,  # the voter, re-keyed per release (same key as the chats' user_id)
    "conversation_a": pl.List(TURN_TYPE),
    "conversation_b": pl.List(TURN_TYPE),
    "images": pl.List(pl.String),
    "turn": pl.Int32,
    "anony": pl.Boolean,
    "language": pl.String,
    "tstamp": pl.Datetime("us", "UTC"),
    "conv_metadata": pl.Struct({f"{f}_{s}": pl.Int64 for s in "ab" for f in STYLE_FIELDS}),
}
# a bench row: id and prompt required, the rest kept when present, in this order
BENCH_REQUIRED = ("question_id", "prompt")
BENCH_OPTIONAL = (
    "images",
    "category",
    "cluster",
    "cluster_name",
    "language",
    "quality",
    "bench_version",
)


class UnsafeReleaseError(ArenaError, ValueError):
    """A frame offered to a release is not the redacted table it must be."""


def release_salt(secret: str, release: str) -> bytes:
    """The salt of one release: HMAC of its name under an operator secret. Reruns of a
    release give the same bytes; two releases (or months) get unrelated salts."""
    if not secret:
        raise ValueError("a release needs a non-empty secret to derive its salt from")
    return hmac.new(secret.encode(), b"arena-release:" + release.encode(), hashlib.sha256).digest()


def rekey(hashes: pl.Series, salt: bytes) -> pl.Series:
    """HMAC-SHA256(salt, hash) hex, cut to RELEASE_HASH_CHARS; nulls stay null."""
    if len(salt) < 16:
        raise ValueError("release salt shorter than 16 bytes")
    unique = hashes.drop_nulls().unique().to_list()
    table = {
        h: hmac.new(salt, h.encode(), hashlib.sha256).hexdigest()[:RELEASE_HASH_CHARS]
        for h in unique
    }
    return hashes.replace_strict(table, default=None, return_dtype=pl.String)


def _refuse_raw(frame: pl.DataFrame, table: str) -> None:
    leaked = sorted(RAW_ONLY_COLUMNS & set(frame.columns))
    if leaked:
        raise UnsafeReleaseError(
            f"{table}: columns {leaked} belong to raw_logs, which never leaves in a release; "
            "pass the redacted table"
        )


def _refuse_pii(texts: pl.Series, what: str) -> None:
    hits = texts.to_frame("t").select(contains_pii(pl.col("t")).fill_null(False).sum()).item()
    if hits:
        raise UnsafeReleaseError(
            f"{what}: {hits} text(s) still match a PII pattern; re-run cleaning before releasing"
        )


def _turns(messages: str) -> pl.Expr:
    return pl.col(messages).list.eval(
        pl.struct(pl.element().struct.field("role"), pl.element().struct.field("content"))
    )


def _images(messages: str) -> pl.Expr:
    return pl.col(messages).list.eval(
        pl.element().struct.field("images").explode(empty_as_null=False).drop_nulls()
    )


def chat_frame(conversations: pl.DataFrame, salt: bytes) -> pl.DataFrame:
    """The Chat release (VisionArena-Chat / LMSYS-Chat-1M columns) from `conversations`."""
    _refuse_raw(conversations, "conversations")
    missing = [c for c in CONVERSATIONS_SCHEMA if c not in conversations.columns]
    if missing:
        raise UnsafeReleaseError(f"conversations: missing columns {missing}")
    _refuse_pii(
        conversations.select(
            pl.col("messages").explode(empty_as_null=False).struct.field("content")
        ).to_series(),
        "conversations.messages",
    )
    pii_total = pl.sum_horizontal([pl.col(f"pii_{t}") for t in PII_TYPES])
    chat = conversations.sort("conv_id").select(
        pl.col("conv_id").alias("conversation_id"),
        "model",
        _turns("messages").alias("conversation"),
        _images("messages").alias("images"),
        pl.col("turns").alias("turn"),
        "language",
        "tstamp",
        pl.col("user_hash").alias("user_id"),
        pl.col("anony").fill_null(False),
        (pii_total > 0).alias("redacted"),
        "moderation_flagged",
        "moderation_categories",
    )
    chat = chat.with_columns(rekey(chat["user_id"], salt).alias("user_id"))
    return chat.cast(CHAT_SCHEMA)  # type: ignore[arg-type]


def battle_frame(
    battles: pl.DataFrame, chat: pl.DataFrame, salt: bytes
) -> tuple[pl.DataFrame, dict]:
    """The Battle release from the kept `battles` and the release's own `chat_frame` rows
    (their conversations are already redacted and checked); `judge` is the voter re-keyed
    with the same salt as the chats' `user_id`. Returns (frame, counts): kept battles whose
    conversation is not in the month's chats are left out and counted."""
    _refuse_raw(battles, "battles")
    if "conversation_id" not in chat.columns or "messages" in chat.columns:
        raise UnsafeReleaseError("battle_frame takes the release's chat frame, not conversations")
    kept = battles.filter(pl.col("keep"))
    sides = chat.select("conversation_id", "conversation", "images")
    joined = kept.join(
        sides.rename(
            {"conversation_id": "conv_id_a", "conversation": "conversation_a", "images": "images_a"}
        ),
        on="conv_id_a",
        how="inner",
    ).join(
        sides.rename(
            {"conversation_id": "conv_id_b", "conversation": "conversation_b", "images": "images_b"}
        ),
        on="conv_id_b",
        how="inner",
    )
    frame = joined.sort("battle_id").select(
        pl.col("battle_id").alias("question_id"),
        "model_a",
        "model_b",
        "winner",
        pl.col("voter_hash").alias("judge"),
        "conversation_a",
        "conversation_b",
        pl.col("images_a").list.concat("images_b").list.unique(maintain_order=True).alias("images"),
        "turn",
        "anony",
        "language",
        "tstamp",
        pl.struct([f"{f}_{s}" for s in "ab" for f in STYLE_FIELDS]).alias("conv_metadata"),
    )
    frame = frame.with_columns(rekey(frame["judge"], salt).alias("judge"))
    frame = frame.cast(BATTLE_SCHEMA)  # type: ignore[arg-type]
    removed = battles.filter(~pl.col("keep"))["removed_reason"].value_counts(sort=True)
    counts = {
        "votes": battles.height,
        "kept": kept.height,
        "released": frame.height,
        "missing_conversation": kept.height - frame.height,
        "removed_by_reason": dict(
            zip(removed["removed_reason"].to_list(), removed["count"].to_list())
        ),
    }
    return frame, counts


def bench_frame(bench: pl.DataFrame) -> pl.DataFrame:
    """The Bench release: ``question_id`` and ``prompt`` (redacted text from
    `conversations`) plus whichever of BENCH_OPTIONAL the bench table has."""
    _refuse_raw(bench, "bench")
    if "uid" in bench.columns and "question_id" not in bench.columns:
        bench = bench.rename({"uid": "question_id"})  # the Arena-Hard-Auto name
    if "prompt_id" in bench.columns and "question_id" not in bench.columns:
        bench = bench.rename({"prompt_id": "question_id"})  # the bench_prompts table
    missing = [c for c in BENCH_REQUIRED if c not in bench.columns]
    if missing:
        raise UnsafeReleaseError(f"bench: missing columns {missing}")
    if bench.schema["prompt"] != pl.String:
        raise UnsafeReleaseError("bench: `prompt` must be the prompt's text")
    _refuse_pii(bench["prompt"], "bench.prompt")
    keep = [*BENCH_REQUIRED, *(c for c in BENCH_OPTIONAL if c in bench.columns)]
    return bench.select(keep).sort("question_id")


def redacted_texts(
    frame: pl.DataFrame, columns: tuple[str, ...], what: str
) -> tuple[pl.DataFrame, int]:
    """``frame`` with each of its text ``columns`` redacted by the cleaning's own rules, and
    how many texts changed; refused (UnsafeReleaseError) when the independent scanner still
    fires on one. For text the bench stage wrote (candidate answers, judge replies), which
    never went through cleaning; the prompts come redacted and are only checked."""
    _refuse_raw(frame, what)
    changed = 0
    for col in (c for c in columns if c in frame.columns):
        before = frame[col]
        frame = frame.with_columns(redact_expr(pl.col(col)).alias(col))
        changed += int((before.fill_null("") != frame[col].fill_null("")).sum())
        _refuse_pii(frame[col], f"{what}.{col}")
    return frame, changed
