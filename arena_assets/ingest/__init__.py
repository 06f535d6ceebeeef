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

from .adapters import CLEAN_BATTLE, CONVERSATION_DUMP, NATIVE, detect_format
from .parse import (
    FileCounts,
    ParsedMonth,
    ParsedPart,
    UnreadableFileError,
    iter_parsed_files,
    parse_lines,
    parse_month,
    partial_files,
    reason_counts,
)
from .sources import (
    RAW_EXTENSIONS,
    MonthListing,
    list_month_files,
    load_model_records,
    load_model_registry,
    month_bounds_us,
    scan_month,
)

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
