"""raw_logs -> conversations: latest snapshot per conversation, then cleaning.

Two steps so that a large month can be streamed: `latest_snapshots` (`arena_assets.clean.snapshots`:
DuckDB decides on narrow key columns, out of core, then the winners' messages are gathered)
needs every event of a conversation at once;
`clean_conversations` is row-local, so the asset feeds it the snapshots batch by batch.
"""

from __future__ import annotations

import hashlib

import polars as pl

from arena_assets.clean.language import WHITESPACE_TO_FOLD, LanguageDetector, detect_languages
from arena_assets.clean.moderation import Moderator, moderate_texts
from arena_assets.clean.pii import redact_frame
from arena_assets.clean.schema import CONVERSATIONS_SCHEMA
from arena_assets.clean.snapshots import latest_snapshots
from arena_assets.contracts import MESSAGE_TYPE, PII_TYPES
from arena_assets.tokens import approx_tokens

# a leading and a trailing run of punctuation, symbols and spaces (two passes: one pattern
# with a `^...|...$` alternation costs twice as much, measured)
_LEADING_PUNCT = r"^[\p{P}\p{S}\s]+"
_TRAILING_PUNCT = r"[\p{P}\p{S}\s]+$"


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
    per_conv = messages.group_by("_row", maintain_order=True).agg(
        pl.struct("role", "content", "images").alias("messages"),
        is_user.sum().cast(pl.Int32).alias("turns"),
        pl.col("images").list.len().sum().cast(pl.Int32).alias("n_images"),
        pl.col("_tokens").filter(is_user).sum().alias("prompt_tokens"),
        pl.col("_tokens").filter(pl.col("role") == "assistant").sum().alias("response_tokens"),
        pl.col("images").filter(is_user).first().alias("_first_images"),
        user_content.alias("_user_contents"),
    )
    # first and joined user turns from the gathered list: a string join per group inside
    # the aggregation cost 2.5x as much (same values, nulls skipped by both)
    return per_conv.with_columns(
        pl.col("_user_contents").list.first().alias("first_prompt"),
        pl.col("_user_contents").list.join(" ").alias("_user_text"),
        *_pii_counts(messages, per_conv.get_column("_row")),
    ).drop("_user_contents")


def _pii_counts(messages: pl.DataFrame, rows: pl.Series) -> list[pl.Series]:
    """`pii_<type>` per conversation (`rows`: the ascending `_row` of each). Only the few
    messages with a replacement are grouped: summing seven mostly-zero columns over every
    conversation cost more than the rest of this step's aggregations together."""
    columns = [f"pii_{t}" for t in PII_TYPES]
    found = (
        messages.filter(pl.any_horizontal(pl.col(columns) > 0))
        .group_by("_row")
        .agg(pl.col(columns).sum().cast(pl.Int32))
    )
    at = rows.search_sorted(found.get_column("_row"))
    return [
        pl.zeros(len(rows), pl.Int32, eager=True).scatter(at, found.get_column(c)).alias(c)
        for c in columns
    ]


def dedup_key(first_prompt: pl.Expr, first_images: pl.Expr) -> pl.Expr:
    """blake2b-64 hex of the normalised first prompt (image refs when there is no text).

    Normalised: NFKC, lowercase, whitespace runs folded to one space, leading and trailing
    punctuation/symbols/spaces removed; when nothing is left the key is taken from
    ``"images:" + ",".join(images)``.
    """
    return pl.struct(first_prompt.alias("prompt"), first_images.alias("images")).map_batches(
        lambda pairs: dedup_keys(pairs.struct.field("prompt"), pairs.struct.field("images")),
        return_dtype=pl.String,
    )


def dedup_keys(prompts: pl.Series, images: pl.Series) -> pl.Series:
    """`dedup_key` of each (prompt, images) row, as a Series.

    Each distinct prompt is normalised and hashed once (a month repeats about half of its
    first prompts: both sides of a battle, popular prompts); only rows whose prompt
    normalises to nothing look at their images.
    """
    prompts = prompts.fill_null("")
    distinct = prompts.unique()
    normalised = _normalise(distinct)
    digests = [None if not text else _blake2b_hex16(text) for text in normalised.to_list()]
    keys = (
        prompts.to_frame("prompt")
        .join(
            pl.DataFrame({"prompt": distinct, "key": pl.Series(digests, dtype=pl.String)}),
            on="prompt",
            how="left",
            maintain_order="left",
        )
        .get_column("key")
    )
    imageonly = keys.is_null().arg_true()
    if len(imageonly):
        refs = images.gather(imageonly).list.join(",").fill_null("")
        keys = keys.scatter(
            imageonly,
            pl.Series([_blake2b_hex16("images:" + r) for r in refs.to_list()], dtype=pl.String),
        )
    return keys.alias(prompts.name)


def _normalise(texts: pl.Series) -> pl.Series:
    return (
        nfkc(texts)
        .str.to_lowercase()
        .str.replace_all(WHITESPACE_TO_FOLD, " ")
        .str.replace(_LEADING_PUNCT, "")
        .str.replace(_TRAILING_PUNCT, "")
    )


# Code points that never make NFKC change a text: each is its own NFKC form, a starter
# (combining class 0) and never the second character of a canonical composition, so a text
# made of them only is already NFKC (Unicode's quick check answers YES). ASCII, Latin-1 and
# Latin Extended-A letters, basic Greek and Cyrillic, common quotes and dashes, kana, CJK
# ideographs, Hangul syllables: all assigned since Unicode 14 or earlier, so normalisation
# stability keeps this true in later versions (each one checked in test_clean_dedup_key.py).
NFKC_STABLE_RANGES = (
    (0x00, 0x7F),
    (0xA1, 0xA7),
    (0xA9, 0xA9),
    (0xAB, 0xAE),
    (0xB0, 0xB1),
    (0xB6, 0xB7),
    (0xBB, 0xBB),
    (0xBF, 0x131),
    (0x134, 0x13E),
    (0x141, 0x148),
    (0x14A, 0x17E),
    (0x391, 0x3A1),
    (0x3A3, 0x3A9),
    (0x3B1, 0x3C9),
    (0x400, 0x45F),
    (0x2013, 0x2014),
    (0x2018, 0x2019),
    (0x201C, 0x201D),
    (0x2022, 0x2022),
    (0x20AC, 0x20AC),
    (0x3001, 0x3002),
    (0x300C, 0x300F),
    (0x3041, 0x3096),
    (0x30A1, 0x30FA),
    (0x30FC, 0x30FC),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
)
_NEEDS_NFKC = "[^" + "".join(rf"\x{{{a:x}}}-\x{{{b:x}}}" for a, b in NFKC_STABLE_RANGES) + "]"


def nfkc(texts: pl.Series) -> pl.Series:
    """NFKC of the texts that have a character outside NFKC_STABLE_RANGES; the others are
    their own NFKC form, and skipping them (all ASCII text, most Cyrillic and Hangul text,
    Chinese and Japanese text without full-width punctuation, which NFKC does change) cuts
    the cost of this step by two thirds on the simulated month."""
    todo = texts.str.contains(_NEEDS_NFKC).fill_null(False).arg_true()
    if not len(todo):
        return texts
    return texts.clone().scatter(todo, texts.gather(todo).str.normalize("NFKC"))


def _blake2b_hex16(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def clean_conversations(
    snapshots: pl.DataFrame,
    *,
    language_detector: LanguageDetector | None = None,
    moderation: Moderator | None = None,
) -> pl.DataFrame:
    """Latest snapshots (`arena_assets.clean.schema.SNAPSHOT_SCHEMA`) -> rows of CONVERSATIONS_SCHEMA, sorted by conv_id."""
    if not snapshots.get_column("conv_id").is_sorted():
        # streamed batches come sorted by DuckDB; sorting again copied every message
        snapshots = snapshots.sort("conv_id")
    snapshots = snapshots.with_row_index("_row")
    per_conv = _per_conversation(snapshots)
    out = snapshots.drop("messages")
    if 0 < per_conv.height == out.height:
        # every conversation has a message, so per_conv's _row runs 0..n-1 in order (groups
        # keep first appearance): the join is a side-by-side stack, without the gather
        out = out.hstack(per_conv.drop("_row").get_columns())
    else:
        out = out.join(per_conv, on="_row", how="left", maintain_order="left")
    out = out.with_columns(
        pl.col("messages").fill_null(pl.lit([], dtype=pl.List(MESSAGE_TYPE))),
        *[
            pl.col(c).fill_null(0)
            for c in ("turns", "n_images", "prompt_tokens", "response_tokens")
        ],
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
