"""Public releases of a month: Chat, Battle and Bench snapshots in the Hugging Face dataset
layout with dataset cards, and an SFT export of the chats. Pure library (no Dagster):
functions over polars frames of the redacted lake tables. Exports load lazily so the
`arena-assets` parser does not import polars."""

from importlib import import_module

_EXPORTS = {
    "parse_card": ".card",
    "size_category": ".card",
    "BATTLE_SCHEMA": ".frames",
    "CHAT_SCHEMA": ".frames",
    "UnsafeReleaseError": ".frames",
    "battle_frame": ".frames",
    "bench_frame": ".frames",
    "chat_frame": ".frames",
    "rekey": ".frames",
    "release_salt": ".frames",
    "BenchRelease": ".write",
    "ReleaseSummary": ".write",
    "bench_release_from_lake": ".write",
    "sft_lines": ".write",
    "write_bench_dataset": ".write",
    "write_dataset": ".write",
    "write_month_release": ".write",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name], __name__), name)
