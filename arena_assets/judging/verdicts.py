"""Judge prompts (our own wording), verdict parsers and the judgment frame.

Pairwise protocol: every (question, candidate) is judged twice against the baseline with
the positions swapped; game 1 shows the baseline as Assistant A, game 2 the candidate as
A (the Arena-Hard-Auto layout). A verdict is one of five labels, read by the protocol
version's rule (``judging.protocol``: v0.1 wants exactly one distinct ``[[...]]`` label,
v2 takes the last one and also single brackets). Scores are from the candidate's side:
win 1, tie 0.5, loss 0; a strong verdict (``>>``) counts ``weight`` times (3).

The judge prompt is ours, with the anchor's meaning and output format: the judge writes
its own answer first (v2's creative-writing judge does not), then compares both answers
for mistakes, helpfulness, relevance, concision and missing information, and ends with one
of the five labels. It is sent under the ``arena-assets-pairwise`` protocols; under
Arena-Hard-Auto's names the judge receives the anchor's own text (``judging.judge_prompts``).
Files of other projects are read by ``judging.readers``.

Judgment frame (one row per game), the common shape of our judgments and of imports:
``question_id, category, model, baseline, judge, game, model_a, model_b, judgment,
verdict, parsed`` (verdict null when unparsed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import polars as pl

PROMPT_VERSION = "pairwise-v2"
SINGLE_PROMPT_VERSION = "single-v1"
VERDICTS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
# spellings other judges use for the same five outcomes
_EQUIVALENT = {"A<<B": "B>>A", "A<B": "B>A", "B=A": "A=B", "B<A": "A>B", "B<<A": "A>>B"}
_RATING_RE = re.compile(r"\[\[\s*(\d+(?:\.\d+)?)\s*\]\]")
_RATING_BACKUP_RE = re.compile(r"\[\s*(\d+(?:\.\d+)?)\s*\]")

_PAIRWISE_INTRO = (
    "You are an impartial judge. Two AI assistants answered the same user request, shown "
    "below; decide which answer serves the user better.\n"
)
_OWN_ANSWER = (
    "Before you look at their answers, write your own answer to the request, so you know "
    "what a good one contains. Then compare each assistant's answer with yours, and point "
    "out and correct every mistake or inaccuracy.\n"
)
_COMPARE = "Compare the two answers and point out and correct every mistake or inaccuracy.\n"
_CRITERIA = (
    "Judge whether each answer is helpful (it does what was asked; where the request is "
    "ambiguous, asking the user to clarify beats guessing), relevant (every part bears on "
    "the request) and concise (clear, not padded). Where it matters, weigh creativity and "
    "novelty, and name anything important an answer leaves out. The order of the answers, "
    "their length and their formatting must not sway you.\n"
    "After your explanation, give exactly one of these labels as your final verdict:\n"
    "[[A>>B]] Assistant A is much better\n[[A>B]] Assistant A is better\n"
    "[[A=B]] a tie, about the same\n[[B>A]] Assistant B is better\n"
    "[[B>>A]] Assistant B is much better\n"
    'For example: "Final verdict: [[A=B]]".'
)
PAIRWISE_SYSTEM = _PAIRWISE_INTRO + _OWN_ANSWER + _CRITERIA
# v2's creative-writing judge compares without writing its own answer first
PAIRWISE_SYSTEM_NO_OWN_ANSWER = _PAIRWISE_INTRO + _COMPARE + _CRITERIA
PAIRWISE_USER = (
    "<|User Request|>\n{question}\n\n"
    "<|Answer of Assistant A|>\n{answer_a}\n<|End of Answer A|>\n\n"
    "<|Answer of Assistant B|>\n{answer_b}\n<|End of Answer B|>"
)
SINGLE_SYSTEM = (
    "You grade one AI assistant's answer to a user request. Judge correctness first, "
    "then helpfulness, depth and clarity; length alone earns nothing. Explain briefly, "
    "then give a grade from 1 to 10 on the last line in exactly this form: Rating: [[5]]"
)
SINGLE_USER = "<|User Request|>\n{question}\n\n<|Answer|>\n{answer}\n<|End of Answer|>"


def pairwise_messages(
    question: str, answer_a: str, answer_b: str, own_answer_first: bool = True
) -> list[dict]:
    return [
        {
            "role": "system",
            "content": PAIRWISE_SYSTEM if own_answer_first else PAIRWISE_SYSTEM_NO_OWN_ANSWER,
        },
        {
            "role": "user",
            "content": PAIRWISE_USER.format(
                question=question, answer_a=answer_a, answer_b=answer_b
            ),
        },
    ]


def single_messages(question: str, answer: str) -> list[dict]:
    return [
        {"role": "system", "content": SINGLE_SYSTEM},
        {"role": "user", "content": SINGLE_USER.format(question=question, answer=answer)},
    ]


_PAIRWISE_PARTS = re.compile(
    r"\A<\|User Request\|>\n(?P<q>.*?)\n\n<\|Answer of Assistant A\|>\n(?P<a>.*?)\n"
    r"<\|End of Answer A\|>\n\n<\|Answer of Assistant B\|>\n(?P<b>.*?)\n<\|End of Answer B\|>\Z",
    re.DOTALL,
)
_SINGLE_PARTS = re.compile(
    r"\A<\|User Request\|>\n(?P<q>.*?)\n\n<\|Answer\|>\n(?P<a>.*?)\n<\|End of Answer\|>\Z",
    re.DOTALL,
)


def split_pairwise_prompt(user_text: str) -> tuple[str, str, str] | None:
    """(question, answer A, answer B) of a message built by ``pairwise_messages``; the
    simulated judge endpoint reads its inputs this way. None for any other text."""
    m = _PAIRWISE_PARTS.match(user_text or "")
    return (m["q"], m["a"], m["b"]) if m else None


def split_single_prompt(user_text: str) -> tuple[str, str] | None:
    m = _SINGLE_PARTS.match(user_text or "")
    return (m["q"], m["a"]) if m else None


def plan_games(
    question_ids: Iterable[str],
    models: Iterable[str],
    baseline: str | Mapping[str, str],
    judges: Iterable[str],
    categories: Iterable[str] | None = None,
) -> pl.DataFrame:
    """Every game to play: question x candidate x judge x two position orders. With
    ``categories`` (one per question) and ``baseline`` a {category: model} mapping, each
    question is played against its category's baseline (Arena-Hard v2)."""
    qids = list(question_ids)
    cats = list(categories) if categories is not None else [None] * len(qids)
    models, judges = list(models), list(judges)
    rows = []
    for q, c in zip(qids, cats):
        base = baseline[c] if isinstance(baseline, Mapping) else baseline
        rows += [
            {
                "question_id": q,
                "category": c,
                "model": m,
                "baseline": base,
                "judge": j,
                "game": g,
                "model_a": a,
                "model_b": b,
            }
            for m in models
            if m != base
            for j in judges
            for g, a, b in game_positions(m, base)
        ]
    return pl.DataFrame(
        rows,
        schema={
            k: JUDGMENT_SCHEMA[k]
            for k in (
                "question_id",
                "category",
                "model",
                "baseline",
                "judge",
                "game",
                "model_a",
                "model_b",
            )
        },
    )


def normalise_verdict(label: str | None) -> str | None:
    """One of VERDICTS, or None for anything else (the ten spellings v2 accepts)."""
    if label is None:
        return None
    label = re.sub(r"\s+", "", label)
    label = _EQUIVALENT.get(label, label)
    return label if label in VERDICTS else None


def parse_verdict(text: str | None, protocol: str = "arena-hard-v2") -> str | None:
    """The verdict of a judge's text by ``protocol``'s rule (``judging.protocol``)."""
    from arena_assets.judging.protocol import get_protocol

    return get_protocol(protocol).parse(text)[0]


def parse_rating(text: str | None) -> float:
    """The last ``[[x]]`` grade (``[x]`` as a fallback, as FastChat does); -1 when none."""
    if not text:
        return -1.0
    for pattern in (_RATING_RE, _RATING_BACKUP_RE):
        found = pattern.findall(text)
        if found:
            return float(found[-1])
    return -1.0


def candidate_score(verdict: str | None, candidate_is_a: bool) -> float | None:
    """1 / 0.5 / 0 from the candidate's side; None for an unparsed verdict."""
    if verdict is None:
        return None
    if verdict == "A=B":
        return 0.5
    a_wins = verdict.startswith("A")
    return 1.0 if a_wins == candidate_is_a else 0.0


def is_strong(verdict: str | None) -> bool:
    return verdict is not None and ">>" in verdict


def game_positions(model: str, baseline: str) -> list[tuple[int, str, str]]:
    """The two games of the protocol: (game, model_a, model_b)."""
    return [(1, baseline, model), (2, model, baseline)]


JUDGMENT_SCHEMA = {
    "question_id": pl.String,
    "category": pl.String,  # the anchor's question category (arena-hard-v0.1, hard_prompt...)
    "model": pl.String,
    "baseline": pl.String,
    "judge": pl.String,
    "game": pl.Int64,
    "model_a": pl.String,
    "model_b": pl.String,
    "judgment": pl.String,
    "verdict": pl.String,
    "parsed": pl.Boolean,
}


def judgment_frame(rows: list[dict], protocol: str | None = None) -> pl.DataFrame:
    """Rows -> the judgment frame; verdicts read as ``protocol`` reads a stored label (v0.1:
    the five labels only; v2 or None: the ten spellings), ``parsed`` derived."""
    from arena_assets.judging.protocol import V01, get_protocol

    strict = protocol is not None and get_protocol(protocol).rules == V01
    out = []
    for r in rows:
        label = r.get("verdict")
        verdict = (label if label in VERDICTS else None) if strict else normalise_verdict(label)
        out.append(
            {
                **{k: r.get(k) for k in JUDGMENT_SCHEMA},
                "verdict": verdict,
                "parsed": verdict is not None,
            }
        )
    return pl.DataFrame(out, schema=JUDGMENT_SCHEMA)


SINGLE_SCHEMA = {
    "question_id": pl.String,
    "model": pl.String,
    "judge": pl.String,
    "turn": pl.Int64,
    "judgment": pl.String,
    "score": pl.Float64,
}
