"""Raw logs of one month -> typed ``raw_logs`` rows + ``raw_rejects`` rows (no Dagster).

Public API:

- :func:`list_month_files` — files of ``<raw_root>/<YYYY-MM>/`` (local or any fsspec URL);
  :func:`scan_month` also says which root was read and which files were skipped
- :func:`load_model_registry` — names from ``<raw_root>/models.json`` or ``None``
- :func:`parse_month` — the whole month as a :class:`ParsedMonth`
- :func:`iter_parsed_files` — the same, one :class:`ParsedPart` at a time (bounded memory)
- :func:`parse_lines` — in-memory lines, for tests and tools

Formats: the native event log, FastChat ``clean_battle`` records and conversation dumps
(LMSYS-Chat-1M / VisionArena); see ``adapters.py`` for detection and mapping and
``validate.py`` for the order in which reject reasons are checked.
"""

_EXPORTS = {
    "CLEAN_BATTLE": ".adapters",
    "CONVERSATION_DUMP": ".adapters",
    "NATIVE": ".adapters",
    "detect_format": ".adapters",
    "iter_parsed_files": ".month",
    "parse_month": ".month",
    "partial_files": ".parse",
    "FileCounts": ".parse",
    "ParsedMonth": ".parse",
    "ParsedPart": ".parse",
    "UnreadableFileError": ".parse",
    "parse_lines": ".parse",
    "reason_counts": ".parse",
    "RAW_EXTENSIONS": ".sources",
    "list_month_files": ".sources",
    "load_model_records": ".sources",
    "load_model_registry": ".sources",
    "month_bounds_us": ".sources",
    "MonthListing": ".sources",
    "scan_month": ".sources",
}

__all__ = [
    "CLEAN_BATTLE",
    "CONVERSATION_DUMP",
    "NATIVE",
    "RAW_EXTENSIONS",
    "FileCounts",
    "MonthListing",
    "ParsedMonth",
    "ParsedPart",
    "UnreadableFileError",
    "detect_format",
    "iter_parsed_files",
    "list_month_files",
    "load_model_records",
    "load_model_registry",
    "month_bounds_us",
    "parse_lines",
    "parse_month",
    "partial_files",
    "reason_counts",
    "scan_month",
]


def __getattr__(name: str):
    # exports load on first use (PEP 562): importing this package, e.g. for the CLI's
    # parser, costs nothing until a name is used
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
