"""Content-level battle checks: model aliases and identity leaks.

Aliases are resolved per vote date because floating names move (``gpt-4-turbo`` pointed at
``gpt-4-turbo-2024-04-09`` from that date on). Identity leaks: an answer that names a model
(itself or a rival) breaks anonymity, so the vote may reflect the brand, not the answer.
Names match on word boundaries, case-insensitively: "I am Claude" leaks ``claude``,
"claudette" does not.
"""

from __future__ import annotations

import re

import polars as pl

from arena_assets.battles.config import AliasRule
from arena_assets.battles.style import assistant_text


def apply_aliases(column: str, rules: list[AliasRule], date_col: str = "_date") -> pl.Expr:
    """Canonical model name of `column` on the vote's date; unchanged when no rule matches.

    Rules are tried in the order given; the first whose alias and date window match wins.
    """
    expr: pl.Expr = pl.col(column)
    # build from the last rule backwards so the first listed rule takes precedence
    for rule in reversed(rules):
        cond = pl.col(column) == rule.alias
        if rule.valid_from is not None:
            cond = cond & (pl.col(date_col) >= pl.lit(rule.valid_from))
        if rule.valid_to is not None:
            cond = cond & (pl.col(date_col) <= pl.lit(rule.valid_to))
        expr = pl.when(cond).then(pl.lit(rule.canonical)).otherwise(expr)
    return expr


# ASCII word boundary: "我是Sable-8B" must match "sable" although CJK characters count as
# word characters for a Unicode \b; names are ASCII in practice.
_BOUNDARY = r"(?-u:\b)"


def _bounded(name: str) -> str:
    """Regex for `name` with word boundaries on the sides that are ASCII word characters."""
    escaped = re.escape(name)
    left = _BOUNDARY if re.match(r"[A-Za-z0-9_]", name[0]) else ""
    right = _BOUNDARY if re.match(r"[A-Za-z0-9_]", name[-1]) else ""
    return f"{left}{escaped}{right}"


def identity_pattern(names: list[str]) -> str | None:
    """One case-insensitive alternation over all names, longest first so that
    ``gpt-4-turbo`` is reported rather than its prefix ``gpt``."""
    unique = sorted({n.lower() for n in names if n.strip()}, key=lambda n: (-len(n), n))
    if not unique:
        return None
    return "(?i)(?:" + "|".join(_bounded(n) for n in unique) + ")"


def leaked_names(messages_col: str, pattern: str | None) -> pl.Expr:
    """Sorted distinct lowercased names found in one side's assistant messages."""
    if pattern is None:
        return pl.lit([], dtype=pl.List(pl.String))
    return (
        assistant_text(pl.col(messages_col), strip_code=False)
        .str.extract_all(pattern)
        .list.eval(pl.element().str.to_lowercase())
        .list.unique()
        .list.sort()
    )
