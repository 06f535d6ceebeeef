"""The pairwise judging protocols of Arena-Hard-Auto, by version (``ARENA_BENCH_PROTOCOL``).

Read from lmarena/arena-hard-auto: ``arena-hard-v0.1`` is the repository as of the v0.1
era (``config/judge_config.yaml``, ``gen_judgment.py``, ``show_result.py`` and
``utils_math.py`` at commit 0489bf3, Sep 2024), ``arena-hard-v2`` is HEAD
(``config/arena-hard-v2.0.yaml``, ``gen_judgment.py``, ``show_result.py``,
``utils/judge_utils.py``, ``utils/math_utils.py``). What differs, and what this module
encodes (the arithmetic lives in ``judging.arena_hard``):

=========================  ==================================  ===================================
                           arena-hard-v0.1                     arena-hard-v2
=========================  ==================================  ===================================
judge max tokens           4,096                               16,000
answer max tokens          4,096 (gen_answer_config)           per model in the anchor; 16,000 here
attempts per game          2: the judge's reply, then a        1 (no re-ask at HEAD)
                           follow-up asking for the label,
                           in the same conversation
verdict                    ``[[X]]`` exactly one distinct      last ``[[X]]``, else last ``[X]``,
                           label (two different = unparsed,    on the upper-cased text; the 10
                           no retry); one of 5 labels          spellings of label_to_score
unparsed game              that game is dropped                both games of the question dropped
point score                BT on the expanded rows = their     mean of the 100 bootstrap means
                           mean (every model meets only the
                           baseline)
interval                   all expanded rows pooled and        each model's rows resampled on
                           resampled, 100 rounds, 95 %         their own, 100 rounds, 90 %
baseline                   one (gpt-4-0314 by default)         per question category
                                                               (hard_prompt, creative_writing)
style control              (a-b)/(a+b+1) on raw counts,        length (a-b)/(a+b), markdown
                           baseline always side A, features    densities (a-b)/(a+b+1), model
                           centred (population sd), L2         side first, sample sd, no penalty;
                           penalty (sklearn C=1); point = the  point = bootstrap median, 90 %
                           full fit, 95 % percentile interval
=========================  ==================================  ===================================

A "strong" verdict (``>>``) counts ``weight`` (3) times in both. Labels outside each
version's set are unparsed here (v0.1 drops them silently; v2 would raise a KeyError).

A protocol is those rules and the judge's text. Under ``arena-hard-v0.1`` and
``arena-hard-v2`` the judge receives the anchor's own text, read from the user's
arena-hard-auto checkout (``judging.judge_prompts``); ``arena-assets-pairwise`` (v0.1's
rules) and ``arena-assets-pairwise-v2`` (v2's rules) send the project's own wording and need
no checkout. With a real judge different words give different verdicts, so only the first
two give numbers comparable with Arena-Hard-Auto's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from arena_assets.errors import ArenaError

V01 = "arena-hard-v0.1"
V2 = "arena-hard-v2"
OWN = "arena-assets-pairwise"  # v0.1's rules, the project's own wording
OWN_V2 = "arena-assets-pairwise-v2"  # v2's rules, the project's own wording
VERDICTS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
# v2's label_to_score spellings, each restated as one of VERDICTS
_V2_LABELS = {
    "A>B": "A>B",
    "A>>B": "A>>B",
    "A=B": "A=B",
    "A<<B": "B>>A",
    "A<B": "B>A",
    "B>A": "B>A",
    "B>>A": "B>>A",
    "B=A": "A=B",
    "B<<A": "A>>B",
    "B<A": "A>B",
}
_DOUBLE = re.compile(r"\[\[([AB<>=]+)\]\]")
_SINGLE = re.compile(r"\[([AB<>=]+)\]")
# the follow-up of v0.1's second attempt (our wording of the anchor's request)
FOLLOW_UP = "Please finish your evaluation and end it with your final verdict label."


@dataclass(frozen=True)
class BenchProtocol:
    name: str
    judge_max_tokens: int
    answer_max_tokens: int
    attempts: int  # judge calls per game at most (a continued conversation)
    level: float  # interval level
    rounds: int = 100  # bootstrap rounds
    weight: int = 3  # copies of a strong verdict
    drop_question_on_unparsed: bool = False  # v2: both games go when one is unparsed
    categories: tuple[str, ...] = ()  # question categories with their own baseline
    rules: str = V01  # the Arena-Hard-Auto version whose rules and arithmetic apply
    anchor_text: bool = True  # the judge receives the anchor's own text (from a checkout)

    def parse(self, text: str | None) -> tuple[str | None, bool]:
        """(verdict or None, whether the anchor would ask again)."""
        return parse_v01(text) if self.rules == V01 else (parse_v2(text), False)

    def question_category(self, category: str | None) -> str:
        """The anchor's question category of one of our bench categories: v0.1 has one
        (``arena-hard-v0.1``); v2 judges creative writing apart from everything else."""
        if self.rules == V01:
            return V01
        return "creative_writing" if category == "creative_writing" else "hard_prompt"


_V01_RULES = BenchProtocol(
    V01, judge_max_tokens=4096, answer_max_tokens=4096, attempts=2, level=0.95
)
_V2_RULES = BenchProtocol(
    V2,
    judge_max_tokens=16000,
    answer_max_tokens=16000,
    attempts=1,
    level=0.90,
    drop_question_on_unparsed=True,
    categories=("hard_prompt", "creative_writing"),
    rules=V2,
)
PROTOCOLS = {
    OWN: replace(_V01_RULES, name=OWN, anchor_text=False),
    OWN_V2: replace(_V2_RULES, name=OWN_V2, anchor_text=False),
    V01: _V01_RULES,
    V2: _V2_RULES,
}
# the protocols that need no checkout: the simulated judge and the demo use these
OWN_PROTOCOLS = (OWN, OWN_V2)


def get_protocol(name: str | BenchProtocol) -> BenchProtocol:
    if isinstance(name, BenchProtocol):
        return name
    key = (name or "").strip()
    if key == "arena-hard-v2.0":  # the anchor's bench folder name
        key = V2
    if key not in PROTOCOLS:
        raise ValueError(
            f"ARENA_BENCH_PROTOCOL={name!r} is not a protocol: use one of {sorted(PROTOCOLS)}"
        )
    return PROTOCOLS[key]


def parse_v01(text: str | None) -> tuple[str | None, bool]:
    """v0.1's rule on ``[[...]]`` labels, case as written: none -> (None, ask again); one
    distinct -> that label if it is one of the five, else unparsed; several different ->
    (None, no retry)."""
    found = {m for m in _DOUBLE.findall(text or "") if m}
    if not found:
        return None, True
    if len(found) > 1:
        return None, False
    label = found.pop()
    return (label if label in VERDICTS else None), False


def parse_v2(text: str | None) -> str | None:
    """v2's rule: on the upper-cased text the last ``[[...]]`` label, else the last
    ``[...]``; one of the ten spellings, restated as one of the five verdicts."""
    upper = (text or "").upper()
    for pattern in (_DOUBLE, _SINGLE):
        found = [m for m in pattern.findall(upper) if m]
        if found:
            return _V2_LABELS.get(found[-1].strip("\n"))
    return None


def parse_baselines(text: str, protocol: BenchProtocol, candidates: list[str]) -> dict[str, str]:
    """``ARENA_BENCH_BASELINE`` -> {question category: baseline model}.

    One model name serves every category; v2 also takes ``hard_prompt=M1,creative_writing=M2``,
    which must name every category. Empty is an error that says what to set."""
    text = (text or "").strip()
    cats = protocol.categories or (protocol.question_category(None),)
    if not text:
        example = (
            "one candidate name, or per category hard_prompt=M1,creative_writing=M2"
            if protocol.categories
            else "one candidate name"
        )
        raise ValueError(
            f"ARENA_BENCH_BASELINE is empty: set it to the model every candidate "
            f"is judged against ({example}); candidates: {candidates}"
        )
    if "=" not in text:
        out = dict.fromkeys(cats, text)
    else:
        out = {}
        for part in text.split(","):
            cat, sep, model = (p.strip() for p in part.partition("="))
            if not sep or cat not in cats:
                raise ValueError(
                    f"ARENA_BENCH_BASELINE: {part.strip()!r} is not <category>=<model> "
                    f"with a category of {protocol.name} ({', '.join(cats)})"
                )
            out[cat] = model
        missing = [c for c in cats if c not in out]
        if missing:  # never filled in from another category: say which one to add
            raise ValueError(
                f"ARENA_BENCH_BASELINE: no baseline for {', '.join(missing)}: add "
                f"{','.join(f'{c}=<model>' for c in missing)} (or give one model name for every category)"
            )
        out = {c: out[c] for c in cats}
    unknown = sorted(set(out.values()) - set(candidates))
    if unknown:
        raise ValueError(
            f"ARENA_BENCH_BASELINE names {unknown}, not among the candidates {candidates}"
        )
    return out


class ProtocolMismatchError(ArenaError, ValueError):
    """A month's judgments were played by another protocol than the one asked to score them."""


def judgments_protocol(judgments) -> str | None:
    """The protocol a judgments partition (a polars frame) was played by (its ``protocol``
    column); None for a partition written before the column was kept. A partition without
    ``prompt_sha256`` was judged in the project's own wording, whatever rules it names, so
    it reads as the own protocol of those rules. Two in one partition is an error."""
    if "protocol" not in judgments.columns:
        return None
    found = sorted(set(judgments["protocol"].drop_nulls()))
    if len(found) > 1:
        raise ProtocolMismatchError(f"judgments mix protocols {found}: rematerialize the month")
    name = found[0] if found else None
    if name in (V01, V2) and "prompt_sha256" not in judgments.columns:
        return OWN if name == V01 else OWN_V2
    return name
