"""Small text renderings shared by the assets' metadata and the CLI summaries."""

from __future__ import annotations

import polars as pl


def _cell(value: object, max_chars: int) -> str:
    text = "" if value is None else str(value)
    text = text.replace("\n", " ").replace("|", "\\|")
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def markdown_table(frame: pl.DataFrame, max_rows: int = 10, max_chars: int = 60) -> str:
    """A GitHub-style markdown table of the first rows (long cells cut, pipes escaped)."""
    if frame.width == 0:
        return "_(no columns)_"
    head = frame.head(max_rows)
    lines = [
        "| " + " | ".join(head.columns) + " |",
        "| " + " | ".join("---" for _ in head.columns) + " |",
    ]
    for row in head.iter_rows():
        lines.append("| " + " | ".join(_cell(v, max_chars) for v in row) + " |")
    if frame.height > max_rows:
        lines.append(f"\n_{frame.height - max_rows} more rows_")
    if frame.height == 0:
        lines.append("\n_(no rows)_")
    return "\n".join(lines)


def counts_table(counts: dict[str, int], key: str = "reason", value: str = "rows") -> str:
    frame = pl.DataFrame(
        {key: list(counts), value: list(counts.values())}, schema={key: pl.String, value: pl.Int64}
    ).sort(value, key, descending=[True, False])
    return markdown_table(frame, max_rows=50)
