"""Cleaning: raw_logs -> conversations (latest snapshot, PII redaction, language, tokens,
moderation, dedup key). Pure library; no Dagster.

Exports load on first use (PEP 562): the parse workers import ``clean.pii`` (to scrub
rejected lines), and an eager package would drag DuckDB, fastText and the snapshot SQL
into every worker's start-up.
"""

_EXPORTS = {
    "build_conversations": ".conversations",
    "clean_conversations": ".conversations",
    "dedup_key": ".conversations",
    "FastTextLid": ".language",
    "LanguageDetector": ".language",
    "detect_languages": ".language",
    "OpenAIModeration": ".moderation",
    "moderate_texts": ".moderation",
    "ANY_PII_PATTERN": ".pii",
    "PREFILTER": ".pii",
    "contains_pii": ".pii",
    "find_pii": ".pii",
    "redact_expr": ".pii",
    "redact_frame": ".pii",
    "TOKEN_PATTERN": ".tokens",
    "approx_tokens": ".tokens",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
