"""Material a user pastes under a request: a code listing or a config file, fenced.

Why: about one real first prompt in twelve is long because the user pasted something (8
of the 100 first prompts of ``../shared/real``'s 2024 battles have 2,000 characters or
more, up to 20,847), and LMArena's ``long_user`` board (>= 500 user tokens) exists only
through them. The simulator composed short prompts alone, so that board never had a vote.

The paste goes after the request, inside a ``` fence: the request keeps the prompt's
first characters (the truth index keys prompts by their first 64 characters), the
language detector drops fenced code, and the text holds no topic phrase, no part sentence
and no digit run a PII detector could take for a number, so the prompt's hidden labels
and planted-PII truth stay what the composer recorded.
"""

from __future__ import annotations

import random

MIN_CHARS = 2_000
MAX_CHARS = 9_000

_NOUNS = (
    "items",
    "orders",
    "rows",
    "config",
    "cache",
    "result",
    "buffer",
    "records",
    "queue",
    "batch",
    "totals",
    "users",
    "events",
    "report",
    "scores",
    "session",
)
_VERBS = (
    "load",
    "parse",
    "merge",
    "filter",
    "update",
    "render",
    "flush",
    "score",
    "group",
    "sort",
    "validate",
    "export",
    "retry",
    "collect",
    "index",
    "split",
)
_KEYS = (
    "name",
    "enabled",
    "timeout",
    "retries",
    "level",
    "path",
    "mode",
    "owner",
    "region",
    "format",
    "backend",
    "workers",
    "strategy",
    "target",
    "source",
)
_VALUES = (
    "true",
    "false",
    "info",
    "debug",
    "strict",
    "fast",
    "local",
    "primary",
    "json",
    "parquet",
    "round_robin",
    "eu_west",
    "nightly",
    "default",
    "none",
)


def pasted_material(rng: random.Random) -> str:
    """A fenced block of MIN_CHARS..MAX_CHARS characters (log-uniform), seeded by ``rng``."""
    target = int(MIN_CHARS * (MAX_CHARS / MIN_CHARS) ** rng.random())
    kind = rng.choice(("python", "javascript", "yaml"))
    write = {"python": _python, "javascript": _javascript, "yaml": _yaml}[kind]
    lines: list[str] = []
    size = 0
    while size < target:
        chunk = write(rng)
        lines.extend(chunk)
        size += sum(len(line) + 1 for line in chunk)
    return f"```{kind}\n" + "\n".join(lines) + "\n```"


def _python(rng: random.Random) -> list[str]:
    verb, noun, other = rng.choice(_VERBS), rng.choice(_NOUNS), rng.choice(_NOUNS)
    return [
        f"def {verb}_{noun}({noun}, {other}=None):",
        "    out = []",
        f"    for entry in {noun}:",
        f"        if {other} and entry.{rng.choice(_KEYS)} not in {other}:",
        "            continue",
        f"        out.append({rng.choice(_VERBS)}_{rng.choice(_NOUNS)}(entry))",
        "    return out",
        "",
    ]


def _javascript(rng: random.Random) -> list[str]:
    verb, noun = rng.choice(_VERBS), rng.choice(_NOUNS)
    key = rng.choice(_KEYS)
    return [
        f"export function {verb}{noun.title()}({noun}, options = {{}}) {{",
        "  const seen = new Set();",
        f"  return {noun}.filter((entry) => {{",
        f"    if (seen.has(entry.{key})) return false;",
        f"    seen.add(entry.{key});",
        f"    return options.{rng.choice(_KEYS)} !== '{rng.choice(_VALUES)}';",
        "  });",
        "}",
        "",
    ]


def _yaml(rng: random.Random) -> list[str]:
    lines = [f"{rng.choice(_NOUNS)}:"]
    for key in rng.sample(_KEYS, 4):
        lines.append(f"  {key}: {rng.choice(_VALUES)}")
    lines.append(f"  {rng.choice(_VERBS)}:")
    lines.extend(f"    - {rng.choice(_VALUES)}" for _ in range(2))
    return lines
