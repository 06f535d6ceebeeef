"""LMArena's ``category_tag``: its tags, the anchor's parsing rules, and board membership.

The tags (FastChat ``fastchat/serve/monitor/classify/category.py``) and what each holds::

    criteria_v0.1          {specificity, domain_knowledge, complexity, problem_solving,
                            creativity, technical_accuracy, real_world: bool}
    if_v0.1                {if: bool (score >= 4), score: int 0-5 | null}
    math_v0.1              {math: bool}
    creative_writing_v0.1  {creative_writing: bool, score: "yes" | "no" | null}
    refusal_v0.1           {refusal: bool (some answer said "yes"), score: str (the list)}
    captioning_v0.1 ... diagram_v0.1, creative_writing_vision_v0.1   {<name>: bool}

Parsing as the anchor's ``get_score``: a reply with no answer in the expected format, or
several *different* ones, gives the tag's default (no criterion met, not math, score null,
...): the anchor stores that, so the boards it feeds do too; here the label's status also
says ``parse_failed``, so it is counted. ``refusal_v0.2`` (LMArena's later classifier, a
bare bool in the published files) is read from files, never produced here.

Boards (LMArena's names, ``BOARDS``): membership over a battle's ``category_tag`` and a few
battle columns, one rule for the files that carry the tag and for our own labels.
"""

from __future__ import annotations

import ast
import re

import polars as pl

CRITERIA = (
    "specificity",
    "domain_knowledge",
    "complexity",
    "problem_solving",
    "creativity",
    "technical_accuracy",
    "real_world",
)
VISION_TAGS = ("captioning", "ocr", "entity_recognition", "humor", "homework", "diagram")
HARD_MIN_CRITERIA = 6
IF_MIN_SCORE = 4

_LIST = re.compile(r"(\[\d(?:\,\s\d)*\])")
_EMPTY = re.compile(r"\[\s*\]")
_SCORE = re.compile(r"<score>([012345])<\/score>")
_DECISION = re.compile(r"<decision>(\w+)<\/decision>")
_CLASS = re.compile(r"<classification>(\w+)<\/classification>")

_B = pl.Boolean
TAG_DTYPE = pl.Struct(
    {
        "criteria_v0.1": pl.Struct(dict.fromkeys(CRITERIA, _B)),
        "if_v0.1": pl.Struct({"if": _B, "score": pl.Int8}),
        "math_v0.1": pl.Struct({"math": _B}),
        "creative_writing_v0.1": pl.Struct({"creative_writing": _B, "score": pl.String}),
        "refusal_v0.1": pl.Struct({"refusal": _B, "score": pl.String}),
        "refusal_v0.2": pl.Struct({"refusal": _B}),
        **{f"{v}_v0.1": pl.Struct({v: _B}) for v in VISION_TAGS},
        "creative_writing_vision_v0.1": pl.Struct({"creative_writing": _B, "score": pl.String}),
    }
)
TAG_NAMES = tuple(TAG_DTYPE.to_schema())


def _one(matches: list[str]) -> str | None:
    found = {m for m in matches if m != ""}
    return matches[0] if len(found) == 1 else None


def criteria_list(text: str) -> tuple[dict, bool]:
    """The criteria numbers of a reply (``[1, 3, 4]``): exactly one distinct list or none."""
    found = _LIST.findall(text or "")
    one = _one(found)
    try:
        listed = set(ast.literal_eval(one)) if one else set()
    except (SyntaxError, ValueError):
        listed, one = set(), None
    # "[]" (no criterion met) is an answer too: the anchor reads it as none, as it reads no list
    empty = not found and _EMPTY.search(text or "") is not None
    return {name: i in listed for i, name in enumerate(CRITERIA, start=1)}, one is not None or empty


def if_value(score: int | None) -> dict:
    return {"if": bool(score >= IF_MIN_SCORE) if score else False, "score": score}


def score_tag(text: str) -> tuple[dict, bool]:
    """``<score>N</score>``, N in 0..5, exactly one distinct."""
    one = _one(_SCORE.findall(text or ""))
    return if_value(int(one) if one is not None else None), one is not None


def decision(text: str, strip_brackets: bool = False) -> tuple[str | None, bool]:
    """``<decision>yes|no</decision>`` after removing newlines and lower-casing (the
    creative-writing parser also drops brackets and spaces)."""
    t = (text or "").replace("\n", "")
    if strip_brackets:
        t = t.replace("[", "").replace("]", "").replace(" ", "")
    one = _one(_DECISION.findall(t.lower()))
    return one, one is not None


def classification(text: str) -> tuple[str | None, bool]:
    """``<classification>yes|no|maybe</classification>`` (the refusal classifier)."""
    one = _one(_CLASS.findall((text or "").replace("\n", "").lower()))
    return one, one is not None


def yes(word: str | None) -> bool:
    return bool(word == "yes") if word else False


def refusal_value(scores: list[str | None]) -> dict:
    """A conversation's refusal tag from its answers' classifications: "yes" counts,
    "maybe" and unparsed do not (as the anchor)."""
    return {"refusal": any(yes(s) for s in scores), "score": str(scores)}


# ---- boards -------------------------------------------------------------------------------------
def _tag(name: str, field: str) -> pl.Expr:
    return pl.col("category_tag").struct.field(name).struct.field(field)


def criteria_count() -> pl.Expr:
    return pl.sum_horizontal(_tag("criteria_v0.1", c).cast(pl.Int8) for c in CRITERIA)


def refused() -> pl.Expr:
    """The battle's refusal: ``refusal_v0.2`` where a file carries it, else ``refusal_v0.1``."""
    return pl.coalesce(_tag("refusal_v0.2", "refusal"), _tag("refusal_v0.1", "refusal"))


# board -> predicate over a battle row with ``category_tag`` and the columns ``is_code``,
# ``turn``, ``user_tokens`` (all user turns), ``is_vision``; null = not in the board
BOARDS: dict[str, pl.Expr] = {
    "hard_6": pl.when(_tag("criteria_v0.1", "specificity").is_not_null()).then(
        criteria_count() >= HARD_MIN_CRITERIA
    ),
    "coding": pl.col("is_code"),
    "math": _tag("math_v0.1", "math"),
    "creative_writing": _tag("creative_writing_v0.1", "creative_writing"),
    "if": _tag("if_v0.1", "if"),
    "long_user": pl.col("user_tokens") >= 500,
    "multiturn": pl.col("turn") > 1,
    "no_refusal": ~refused(),
    "vision": pl.col("is_vision"),
    **{v: _tag(f"{v}_v0.1", v) for v in VISION_TAGS},
    "creative_writing_vision": _tag("creative_writing_vision_v0.1", "creative_writing"),
}
# the battle column each board's rule reads (the others: category_tag)
BOARD_INPUT = {
    "coding": "is_code",
    "long_user": "user_tokens",
    "multiturn": "turn",
    "vision": "is_vision",
}
BOARD_NOTES = {
    "hard_6": "at least 6 of the 7 criteria of criteria_v0.1",
    "coding": "is_code (a file's flag; our labels: the code heuristic on the first prompt)",
    "math": "math_v0.1.math",
    "creative_writing": "creative_writing_v0.1.creative_writing",
    "if": "if_v0.1.if: score >= 4 (the rubric: 4 = complex, 5 = advanced instruction following)",
    "long_user": "at least 500 user tokens over the conversation",
    "multiturn": "more than one turn",
    "no_refusal": "no answer of either side classified a refusal (refusal_v0.2 where a file has it, "
    'else refusal_v0.1: "yes" counts; "maybe" and unreadable answers count as no '
    'refusal; a battle with a failed classification and no "yes" is left out; a release '
    "whose category_tag has no refusal: its battle-level is_refusal column)",
    "vision": "the first turn carries an image",
    **{v: f"{v}_v0.1.{v}" for v in VISION_TAGS},
    "creative_writing_vision": "creative_writing_vision_v0.1.creative_writing",
}


def board_rules_markdown() -> str:
    """The membership rule of every category board, for a leaderboard's metadata."""
    return "| board | battles it holds |\n|---|---|\n" + "\n".join(
        f"| {b} | {BOARD_NOTES[b]} |" for b in BOARDS
    )


def tag_from_flat() -> pl.Expr:
    """``category_tag`` from ``topic_labels``' flat columns (partitions written before the
    tag was stored, and hand-made or simulated truth rows): null where a label is null."""

    def present(*cols: str) -> pl.Expr:
        return pl.all_horizontal(pl.col(c).is_not_null() for c in cols)

    def tag(cond: pl.Expr, **fields: pl.Expr) -> pl.Expr:
        return pl.when(cond).then(pl.struct(**fields))

    word = lambda c: pl.when(pl.col(c)).then(pl.lit("yes")).otherwise(pl.lit("no"))  # noqa: E731
    vision = {
        f"{v}_v0.1": tag(present(f"vision_{v}"), **{v: pl.col(f"vision_{v}")}) for v in VISION_TAGS
    }
    return pl.struct(
        tag(present(*CRITERIA), **{c: pl.col(c) for c in CRITERIA}).alias("criteria_v0.1"),
        tag(
            present("if_score"),
            **{"if": pl.col("if_score") >= IF_MIN_SCORE, "score": pl.col("if_score").cast(pl.Int8)},
        ).alias("if_v0.1"),
        tag(present("math"), math=pl.col("math")).alias("math_v0.1"),
        tag(
            present("creative_writing"),
            creative_writing=pl.col("creative_writing"),
            score=word("creative_writing"),
        ).alias("creative_writing_v0.1"),
        tag(present("refusal"), refusal=pl.col("refusal"), score=pl.lit(None, pl.String)).alias(
            "refusal_v0.1"
        ),
        pl.lit(None, TAG_DTYPE.to_schema()["refusal_v0.2"]).alias("refusal_v0.2"),
        *[e.alias(n) for n, e in vision.items()],
        tag(
            present("vision_creative_writing"),
            creative_writing=pl.col("vision_creative_writing"),
            score=word("vision_creative_writing"),
        ).alias("creative_writing_vision_v0.1"),
    ).cast(TAG_DTYPE)


def tag_frame(tags: list[dict | None]) -> pl.Series:
    """``category_tag`` values (dicts as the files hold them: a tag may be a bare bool, as
    ``refusal_v0.2`` is in LMArena's releases) -> a Series of TAG_DTYPE."""
    out = []
    for tag in tags:
        row = {}
        for name, value in (tag or {}).items():
            if name not in TAG_NAMES:
                continue
            if isinstance(value, bool):  # {"refusal_v0.2": true}
                value = {name.split("_v")[0]: value}
            row[name] = value if isinstance(value, dict) else None
        out.append(row or None)
    return pl.Series("category_tag", out, dtype=TAG_DTYPE, strict=False)


def with_board_columns(battles: pl.DataFrame) -> pl.DataFrame:
    """The columns BOARDS reads, null where a battle table lacks them."""
    fill = {
        "category_tag": TAG_DTYPE,
        "is_code": pl.Boolean,
        "turn": pl.Int64,
        "user_tokens": pl.Int64,
        "is_vision": pl.Boolean,
    }
    return battles.with_columns(
        pl.lit(None, t).alias(c) for c, t in fill.items() if c not in battles.columns
    )


def in_board(battles: pl.DataFrame, board: str) -> pl.DataFrame:
    """The battles of ``board`` (LMArena's membership rule)."""
    return with_board_columns(battles).filter(BOARDS[board].fill_null(False))
