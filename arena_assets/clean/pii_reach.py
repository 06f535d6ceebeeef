"""How far into a text a regex can read from the match attempts that start before a point.

Redacting the stored prefix of a rejected line (hundreds of kilobytes) must give exactly
what redacting the whole line gives (`arena_assets.clean.pii_detect.spans_before`): every
match that starts in the prefix must be found as the whole text would find it, also one
that runs on past the cut. Scanning the whole line for that costs as much as redacting
it; this module bounds the scan instead, from the pattern itself.

The bound: walk the parsed pattern (`re._parser`, the stdlib's own parser). Characters
that an unbounded repeat (``*``, ``+``, ``{n,}``) can consume form the set R; everything
else the pattern consumes or looks ahead at has a bounded width, at most B characters in
all. Any attempt, successful or not, reads one contiguous stretch from where it starts,
and at most B characters of that stretch lie outside R. So an attempt that starts before
``stop`` never reads past the (B+1)-th character outside R at or after ``stop``, and
scanning ``text[:that position + 2]`` (one more for ``$``) yields the same attempts, hence
the same matches, as the whole text. Lookbehinds read backwards, into text that is there.

Over-estimating R or B only moves the bound further out: case-insensitive patterns are
given R with IGNORECASE, and a construct the walk does not know raises, rather than
guess.
"""

from __future__ import annotations

import functools
import re
import re._constants as C
import re._parser as P
from collections.abc import Iterator

_CATEGORIES = {
    C.CATEGORY_DIGIT: r"\d",
    C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w",
    C.CATEGORY_NOT_WORD: r"\W",
}
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)


def _char(code: int) -> str:
    return f"\\U{code:08x}"


def _one_char(op: object, av: object) -> str | None:
    """A regex for the characters one parsed item consumes; None: any character."""
    if op is C.LITERAL:
        return _char(av)
    if op is C.NOT_LITERAL:
        return f"[^{_char(av)}]"
    if op is C.ANY:
        return None
    parts, negate = [], False
    for sub_op, sub_av in av:  # IN
        if sub_op is C.NEGATE:
            negate = True
        elif sub_op is C.LITERAL:
            parts.append(_char(sub_av))
        elif sub_op is C.RANGE:
            parts.append(f"{_char(sub_av[0])}-{_char(sub_av[1])}")
        elif sub_op is C.CATEGORY:
            parts.append(_CATEGORIES[sub_av])
        else:
            raise ValueError(f"unknown set item {sub_op}")
    return f"[{'^' if negate else ''}{''.join(parts)}]"


class _Walk:
    """B (bounded width) and R (chars of unbounded repeats) of a parsed pattern."""

    def __init__(self, parsed: P.SubPattern) -> None:
        self.groups: dict[int, list] = {}
        self.bounded, self.unbounded, _ = self.walk(parsed.data)

    def walk(self, items: list) -> tuple[int, set[str | None], set[str | None]]:
        """(B, R, every char regex met) of a sequence of parsed items."""
        width, reach, chars = 0, set(), set()
        for op, av in items:
            if op in (C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY):
                width += 1
                chars.add(_one_char(op, av))
                continue
            if op is C.AT:
                continue
            if op is C.SUBPATTERN:
                if av[0] is not None:
                    self.groups[av[0]] = av[3]
                parts = [av[3]]
            elif op is C.ATOMIC_GROUP:
                parts = [av]
            elif op in (C.ASSERT, C.ASSERT_NOT):
                if av[0] < 0:
                    continue  # a lookbehind reads backwards, into text that is there
                parts = [av[1]]
            elif op is C.BRANCH:
                parts = av[1]
            elif op is C.GROUPREF_EXISTS:
                parts = [p for p in av[1:] if p is not None]
            elif op is C.GROUPREF:
                parts = [self.groups[av]]
            elif op in _REPEATS:
                _, high, body = av
                b, r, c = self.walk(body.data)
                chars |= c
                if high == C.MAXREPEAT:
                    reach |= c
                else:
                    width, reach = width + high * b, reach | r
                continue
            else:
                raise ValueError(f"unknown regex construct {op}")
            subs = [self.walk(p.data if isinstance(p, P.SubPattern) else p) for p in parts]
            width += max(b for b, _, _ in subs)  # alternatives: the widest
            for _, r, c in subs:
                reach, chars = reach | r, chars | c
        return width, reach, chars


@functools.cache
def _reach(pattern: re.Pattern) -> tuple[int, re.Pattern] | None:
    """(B, a regex matching a run of R characters); None when R holds any character."""
    walk = _Walk(P.parse(pattern.pattern, pattern.flags))
    if None in walk.unbounded:
        return None
    alternatives = "|".join(sorted(walk.unbounded)) or "(?!)"
    return walk.bounded, re.compile(f"(?:{alternatives})*", re.IGNORECASE)


def scan_end(pattern: re.Pattern, text: str, stop: int) -> int:
    """An end for scanning ``text`` with ``pattern`` that finds exactly the matches the
    whole text gives among those starting before ``stop`` (see the module doc)."""
    reach = _reach(pattern)
    if reach is None:
        return len(text)
    bounded, run = reach
    pos = stop
    for _ in range(bounded + 1):
        pos = run.match(text, pos).end() + 1  # past one character outside R
        if pos >= len(text):
            return len(text)
    return min(len(text), pos + 1)


def matches_before(pattern: re.Pattern, text: str, stop: int | None) -> Iterator[re.Match]:
    """``pattern.finditer(text)`` up to the first match that starts at ``stop`` (all when
    None), scanning no further than `scan_end`: exactly the whole text's matches there."""
    if stop is None:
        yield from pattern.finditer(text)
        return
    for m in pattern.finditer(text, 0, scan_end(pattern, text, stop)):
        if m.start() >= stop:
            return
        yield m
