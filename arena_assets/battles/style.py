"""Style features of one side of a battle, computed on its assistant messages.

The counting rules follow the ones behind the published Chatbot Arena / Arena-Hard
``conv_metadata`` (header h1..h6 at line start, ordered ``1. `` and unordered ``- * +`` list
items, ``**bold**`` and ``__bold__`` spans), after removing fenced code blocks, so that a
``# comment`` in a shell snippet is not a header. Each message is cleaned on its own: an
unclosed fence hides the rest of *that* message only, as a markdown renderer would.
Everything is a polars expression, so a month of votes is one vectorised pass.
"""

from __future__ import annotations

import polars as pl

# the cleaning step's cl100k approximation, so conversations and battles count alike
from arena_assets.tokens import approx_tokens

# a fenced block, or an unclosed fence running to the end of the message
CODE_BLOCK = r"(?s)```.*?(?:```|\z)"
HEADER_LEVEL = {f"h{k}": rf"(?m)^#{{{k}}}\s" for k in range(1, 7)}
ORDERED_ITEM = r"(?m)^\s*\d+\.\s"
UNORDERED_ITEM = r"(?m)^\s*[-*+]\s"
BOLD_SPAN = r"\*\*[^*\n]+\*\*|__[^_\n]+__"


def assistant_text(messages: pl.Expr, strip_code: bool = True) -> pl.Expr:
    """Assistant contents joined by blank lines, fenced code removed unless ``strip_code``
    is False (identity leaks look at code too: a name in a comment still leaks)."""
    content = (
        pl.element()
        .filter(pl.element().struct.field("role") == "assistant")
        .struct.field("content")
        .fill_null("")
    )
    if strip_code:
        content = content.str.replace_all(CODE_BLOCK, "")
    return messages.list.eval(content).list.join("\n\n")


def assistant_token_count(messages: pl.Expr) -> pl.Expr:
    """Approximate tokens of all assistant messages, code included (it is still output)."""
    return (
        messages.list.eval(
            pl.element()
            .filter(pl.element().struct.field("role") == "assistant")
            .struct.field("content")
            .pipe(approx_tokens)
        )
        .list.sum()
        .cast(pl.Int64)
    )


def style_columns(messages_col: str, suffix: str) -> list[pl.Expr]:
    """Flat style columns for one side: ``sum_assistant_tokens{suffix}`` and the counts."""
    text = assistant_text(pl.col(messages_col))
    headers = [text.str.count_matches(p).cast(pl.Int64) for p in HEADER_LEVEL.values()]
    ordered = text.str.count_matches(ORDERED_ITEM).cast(pl.Int64)
    unordered = text.str.count_matches(UNORDERED_ITEM).cast(pl.Int64)
    return [
        assistant_token_count(pl.col(messages_col)).alias(f"sum_assistant_tokens{suffix}"),
        pl.sum_horizontal(headers).alias(f"header_count{suffix}"),
        ordered.alias(f"ordered_list_count{suffix}"),
        unordered.alias(f"unordered_list_count{suffix}"),
        (ordered + unordered).alias(f"list_count{suffix}"),
        text.str.count_matches(BOLD_SPAN).cast(pl.Int64).alias(f"bold_count{suffix}"),
    ]


def style_features(messages: list[dict], suffix: str = "") -> dict[str, int]:
    """The same features for one list of messages (convenience for tests and tools)."""
    frame = pl.DataFrame(
        {"m": [messages]},
        schema={"m": pl.List(pl.Struct({"role": pl.String, "content": pl.String}))},
    )
    return frame.select(style_columns("m", suffix)).row(0, named=True)
