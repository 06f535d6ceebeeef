"""Small text renderings shared by the assets' metadata and the CLI summaries."""

from __future__ import annotations

import re

import polars as pl

# Markdown's punctuation that could turn text into markup: "<USER>" would be an HTML tag
# the UI drops, "language:<code>" lose its placeholder, "*" or "_" start emphasis
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~#&!])")
# columns on the Elo scale: one decimal; every other float: 4 significant digits
RATING_COLUMNS = frozenset(
    {
        "rating",
        "lower",
        "upper",
        "rating_q025",
        "rating_q975",
        "bt_rating",
        "bt_lower",
        "bt_upper",
        "style_rating",
        "style_lower",
        "style_upper",
        "rating_unstyled",
        "coef_rating",
    }
)


def md_escape(text: str) -> str:
    """``text`` shown literally by a Markdown renderer (backslash escapes)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def shown_number(value: float, column: str = "") -> str:
    """A float as the UI shows it: 1 decimal on the Elo scale, else 4 significant digits."""
    if value != value:  # NaN
        return "NaN"
    return f"{value:.1f}" if column in RATING_COLUMNS else f"{value:.4g}"


def rounded(value, digits: int = 4):
    """Every float inside ``value`` (dicts, lists) to ``digits`` significant digits, for
    JSON metadata (16-digit floats say nothing more)."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if value == value else value
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    return value


def _cell(value: object, max_chars: int, column: str = "") -> str:
    if isinstance(value, float):
        text = shown_number(value, column)
    else:
        text = "" if value is None else str(value)
    text = text.replace("\n", " ")
    text = text if len(text) <= max_chars else text[: max_chars - 1] + "…"
    return md_escape(text)


def markdown_table(frame: pl.DataFrame, max_rows: int = 10, max_chars: int = 60) -> str:
    """A GitHub-style markdown table of the first rows: long cells cut, every cell escaped
    (shown as text, never as markup), floats rounded (``shown_number``)."""
    if frame.width == 0:
        return "_(no columns)_"
    head = frame.head(max_rows)
    lines = [
        "| " + " | ".join(md_escape(c) for c in head.columns) + " |",
        "| " + " | ".join("---" for _ in head.columns) + " |",
    ]
    for row in head.iter_rows():
        lines.append(
            "| " + " | ".join(_cell(v, max_chars, c) for v, c in zip(row, head.columns)) + " |"
        )
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
