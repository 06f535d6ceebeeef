"""What a judge is shown of a battle: the first prompt and each side's whole conversation.

A judge prompt (``judging.verdicts.pairwise_messages``) takes one question and two answers.
A multi-turn battle becomes: the first user turn as the question, and for each side its
first answer followed, turn by turn, by ``TURN_BREAK``, the user's next message,
``REPLY_BREAK`` and the side's reply. Both sides share the user turns (the arena sends the
same prompt to both), so the judge sees everything the voter saw, in one order.
"""

from __future__ import annotations

TURN_BREAK = "\n\n<|The user then wrote|>\n"
REPLY_BREAK = "\n<|The assistant replied|>\n"


def side_text(messages: list[dict]) -> tuple[str, str]:
    """(first user message, the side's answers with later user turns between them)."""
    users = [m["content"] or "" for m in messages if m["role"] == "user"]
    answers = [m["content"] or "" for m in messages if m["role"] == "assistant"]
    if not users:
        return "", "\n".join(answers)
    text = answers[0] if answers else ""
    for user, answer in zip(users[1:], answers[1:], strict=False):
        text += TURN_BREAK + user + REPLY_BREAK + answer
    return users[0], text


def first_answer(answer_text: str) -> str:
    """The first reply of a side text built by :func:`side_text`."""
    return answer_text.split(TURN_BREAK, 1)[0]
