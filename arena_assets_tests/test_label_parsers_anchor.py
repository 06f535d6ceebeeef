"""The label parsers against LMArena's labeller, on hand-written replies.

``Ref*`` below restate FastChat's ``get_score`` / ``post_process`` from
``fastchat/serve/monitor/classify/category.py`` (HEAD for criteria, if, math, creative
writing; commit c08a0221 for the refusal classifier): the pattern, the text normalising
each one applies first, "exactly one distinct match or nothing", and the value stored for
nothing. Written here from the anchor's code, never calling ours; every reply is read by
both and must give the same ``category_tag`` value. Replies chosen where the rules bite:
two different lists, ``[1,2]`` without the space (the anchor's pattern does not read it),
``[]``, a decision in brackets on its own lines (only the creative-writing parser strips
brackets), a score outside 0-5, mixed-case tags (lower-cased by the decision and
classification parsers, not by the score parser).
"""

from __future__ import annotations

import ast
import re

import pytest

from arena_assets.labels import tags as T
from arena_assets.labels.prompt_sets import ANCHOR_STYLE, load_prompt_set


# ---- the anchor, restated ----------------------------------------------------------------------
def _one(matches: list[str]):
    matches = [m for m in matches if m != ""]
    return matches[0] if len(set(matches)) == 1 else None


def ref_criteria(text: str) -> dict:
    found = _one(re.findall(r"(\[\d(?:\,\s\d)*\])", text))
    listed = ast.literal_eval(found) if found else []
    names = [
        "specificity",
        "domain_knowledge",
        "complexity",
        "problem_solving",
        "creativity",
        "technical_accuracy",
        "real_world",
    ]
    return {name: (i in listed) for i, name in enumerate(names, start=1)}


def ref_if(text: str) -> dict:
    found = _one(re.findall(r"<score>([012345])<\/score>", text))
    score = int(found) if found is not None else None
    return {"if": bool(score >= 4) if score else False, "score": score}


def ref_decision(text: str) -> str | None:
    return _one(re.findall(r"<decision>(\w+)<\/decision>", text.replace("\n", "").lower()))


def ref_creative(text: str) -> dict:
    flat = text.replace("\n", "").replace("[", "").replace("]", "").replace(" ", "").lower()
    score = _one(re.findall(r"<decision>(\w+)<\/decision>", flat))
    return {"creative_writing": bool(score == "yes") if score else False, "score": score}


def ref_refusal(replies: list[str]) -> dict:
    scores = [
        _one(re.findall(r"<classification>(\w+)<\/classification>", r.replace("\n", "").lower()))
        for r in replies
    ]
    return {"refusal": any(bool(s == "yes") if s else False for s in scores), "score": str(scores)}


# ---- the cases ---------------------------------------------------------------------------------
CRITERIA_REPLIES = [
    "[1, 2, 5]",
    "Criteria met: [1, 3, 4, 6, 7]",
    "[1, 2] ... on reflection [2, 4]",  # two different lists: none
    "[2, 4]\nSo: [2, 4]",  # the same list twice: that list
    "[1,2]",  # no space after the comma: the anchor's pattern reads nothing
    "[1,2] then [3, 5]",  # only the spaced list is read
    "[]",  # no criterion
    "[7]",
    "none of them",
    "[1, 2, 3, 4, 5, 6, 7]",
]
SCORE_REPLIES = [
    "<score>4</score>",
    "<score>7</score>",
    "<score>0</score>",
    "<SCORE>5</SCORE>",
    "<score>3</score> <score>5</score>",
    "<score>5</score>\n<score>5</score>",
    "score: 5",
    "<score> 4 </score>",
]
DECISION_REPLIES = [
    "<decision>yes</decision>",
    "<decision>\nyes\n</decision>",
    "<decision>\n[yes]\n</decision>",
    "<Decision>YES</Decision>",
    "<decision>[No]</decision>",
    "<decision>yes</decision><decision>no</decision>",
    "<decision> yes </decision>",
    "yes",
    "<decision>maybe</decision>",
]
CLASS_REPLIES = [
    "<classification>yes</classification>",
    "<classification>\nNo\n</classification>",
    "<Classification>MAYBE</Classification>",
    "<classification>[yes]</classification>",
    "<classification>yes</classification> <classification>no</classification>",
    "I refuse.",
]


@pytest.mark.parametrize("reply", CRITERIA_REPLIES)
def test_criteria_list_reads_as_the_anchor(reply: str) -> None:
    value, _ = T.criteria_list(reply)
    assert value == ref_criteria(reply)


def test_criteria_list_parsed_flag() -> None:
    # what the label's status says: an answer was read ("[]" is one), or nothing was
    assert T.criteria_list("[]")[1] and T.criteria_list("[1, 2]")[1]
    assert not T.criteria_list("[1,2]")[1] and not T.criteria_list("[1, 2] [3, 4]")[1]
    assert not T.criteria_list("none of them")[1]


@pytest.mark.parametrize("reply", SCORE_REPLIES)
def test_score_tag_reads_as_the_anchor(reply: str) -> None:
    value, parsed = T.score_tag(reply)
    assert value == ref_if(reply) and parsed == (ref_if(reply)["score"] is not None)


@pytest.mark.parametrize("reply", DECISION_REPLIES)
def test_decisions_read_as_the_anchor(reply: str) -> None:
    word, parsed = T.decision(reply)
    assert word == ref_decision(reply) and parsed == (word is not None)
    cw_word, _ = T.decision(reply, strip_brackets=True)
    assert {"creative_writing": T.yes(cw_word), "score": cw_word} == ref_creative(reply)


def test_brackets_are_stripped_by_the_creative_writing_parser_only() -> None:
    reply = "<decision>\n[yes]\n</decision>"
    assert T.decision(reply) == (None, False)  # math reads nothing: "[" is no word character
    assert T.decision(reply, strip_brackets=True) == ("yes", True)


@pytest.mark.parametrize("reply", CLASS_REPLIES)
def test_classification_reads_as_the_anchor(reply: str) -> None:
    word, parsed = T.classification(reply)
    assert T.refusal_value([word]) == ref_refusal([reply]) and parsed == (word is not None)


def test_refusal_over_several_answers_as_the_anchor() -> None:
    for replies in (CLASS_REPLIES, CLASS_REPLIES[1:3], ["I refuse."], []):
        assert T.refusal_value([T.classification(r)[0] for r in replies]) == ref_refusal(replies)


def test_the_anchor_style_prompt_set_reads_each_tag_as_the_anchor() -> None:
    tasks = {t.tags[0]: t for t in load_prompt_set(ANCHOR_STYLE).tasks}
    for reply in CRITERIA_REPLIES:
        assert tasks["criteria_v0.1"].parse(reply)["criteria_v0.1"][0] == ref_criteria(reply)
    for reply in SCORE_REPLIES:
        assert tasks["if_v0.1"].parse(reply)["if_v0.1"][0] == ref_if(reply)
    for reply in DECISION_REPLIES:
        word = ref_decision(reply)
        assert tasks["math_v0.1"].parse(reply)["math_v0.1"][0] == {
            "math": bool(word == "yes") if word else False
        }
        assert tasks["ocr_v0.1"].parse(reply)["ocr_v0.1"][0] == {
            "ocr": bool(word == "yes") if word else False
        }
        assert tasks["creative_writing_v0.1"].parse(reply)["creative_writing_v0.1"][
            0
        ] == ref_creative(reply)


# ---- the JSON output (ours: one object for several tags) ---------------------------------------
def _json_task():
    from arena_assets.labels.prompt_sets import LabelTask

    return LabelTask(
        "t",
        "prompt",
        "json",
        ("criteria_v0.1", "if_v0.1", "math_v0.1", "creative_writing_v0.1"),
        "sys",
        "{PROMPT}",
    )


@pytest.mark.parametrize(
    "reply, criteria, if_score, math, cw",
    [
        (
            '{"criteria": [1, 2], "if_score": 4, "math": "yes", "creative_writing": "No"}',
            [1, 2],
            4,
            "yes",
            "no",
        ),
        (
            '```json\n{"criteria": [], "if_score": 0, "math": "no", "creative_writing": "yes"}\n```',
            [],
            0,
            "no",
            "yes",
        ),
        (
            '{"criteria": [0, 8], "if_score": 6, "math": "maybe", "creative_writing": true}',
            None,
            None,
            None,
            None,
        ),
        ('{"criteria": "1, 2", "if_score": true, "math": 1}', None, None, None, None),
        ("[1, 2]", None, None, None, None),
        ("not json", None, None, None, None),
    ],
)
def test_json_replies_hand_worked(reply, criteria, if_score, math, cw) -> None:
    """Each field read alone; an unreadable one holds the anchor's default for nothing read
    (no criterion, if false with score null, not math, creative writing false with score
    null) and counts as unparsed."""
    out = _json_task().parse(reply)
    names = T.CRITERIA
    listed = criteria or []
    assert out["criteria_v0.1"] == (
        {n: i in listed for i, n in enumerate(names, start=1)},
        criteria is not None,
    )
    assert out["if_v0.1"] == (
        {"if": bool(if_score >= 4) if if_score else False, "score": if_score},
        if_score is not None,
    )
    assert out["math_v0.1"] == ({"math": math == "yes"}, math is not None)
    assert out["creative_writing_v0.1"] == (
        {"creative_writing": cw == "yes", "score": cw},
        cw is not None,
    )
