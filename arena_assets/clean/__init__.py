"""Cleaning: raw_logs -> conversations (latest snapshot, PII redaction, language, tokens,
moderation, dedup key). Pure library; no Dagster."""

from arena_assets.clean.conversations import (
    build_conversations,
    clean_conversations,
    dedup_key,
)
from arena_assets.clean.language import FastTextLid, LanguageDetector, detect_languages
from arena_assets.clean.moderation import OpenAIModeration, moderate_texts
from arena_assets.clean.pii import (
    ANY_PII_PATTERN,
    PREFILTER,
    contains_pii,
    find_pii,
    redact_expr,
    redact_frame,
)
from arena_assets.clean.tokens import TOKEN_PATTERN, approx_tokens

__all__ = [
    "ANY_PII_PATTERN", "PREFILTER", "TOKEN_PATTERN", "FastTextLid", "LanguageDetector",
    "OpenAIModeration", "approx_tokens", "build_conversations", "clean_conversations",
    "contains_pii", "dedup_key", "detect_languages", "find_pii",
    "moderate_texts", "redact_expr", "redact_frame",
]
