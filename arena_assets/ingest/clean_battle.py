"""FastChat's ``clean_battle`` records (one vote with both conversations, or the prompts
only as ``turns``) as ingest rows; also the base of the public releases that extend it."""

from __future__ import annotations

from arena_assets.contracts import WINNER_OF_VOTE

from .validate import Checker, Reject, Row, messages, short, tname

VOTE_OF_WINNER = {winner: vote for vote, winner in WINNER_OF_VOTE.items()}
_CLEAN_BATTLE_REQUIRED = ("question_id", "model_a", "model_b", "winner", "tstamp")


def required_str(record: dict, key: str) -> str:
    value = record.get(key)
    if type(value) is int and key in ("question_id", "conversation_id"):
        return str(value)
    if type(value) is not str or not value:
        what = "absent" if value is None or value == "" else f"{tname(value)} {short(value)}"
        raise Reject("unparseable_record", f"{key} is {what}")
    return value


def voter_of(checker: Checker, record: dict, fallback: str) -> str:
    for key in ("user_id", "judge", "ip"):
        value = record.get(key)
        if type(value) is str and value:
            return checker.user_hash(value)
    return checker.user_hash(fallback)


def clean_battle_row(checker: Checker, record: dict) -> Row:
    missing = [k for k in _CLEAN_BATTLE_REQUIRED if record.get(k) is None]
    if missing:
        raise Reject("unparseable_record", "missing " + ", ".join(missing))
    qid = required_str(record, "question_id")
    winner = record["winner"]
    vote = VOTE_OF_WINNER.get(winner) if type(winner) is str else None
    if vote is None:
        raise Reject(
            "unparseable_record", f"winner {short(winner)} is not one of {list(VOTE_OF_WINNER)}"
        )
    model_a = required_str(record, "model_a")
    model_b = required_str(record, "model_b")
    ts = checker.tstamp_us(record["tstamp"])
    anony = checker.anony_of(record)
    checker.check_model(model_a)
    checker.check_model(model_b)
    if model_a == model_b:
        raise Reject("same_model_battle", f"both sides are {short(model_a)}")
    conv_a, conv_b = record.get("conversation_a"), record.get("conversation_b")
    if conv_a is not None or conv_b is not None:
        msgs_a = messages(conv_a, "conversation_a")
        msgs_b = messages(conv_b, "conversation_b")
    else:
        turns = record.get("turns")
        if type(turns) is not list:
            raise Reject("unparseable_record", "no conversation_a/_b and no turns")
        prompts = [{"role": "user", "content": t} for t in turns]
        msgs_a = messages(prompts, "turns")
        msgs_b = (list(msgs_a[0]), list(msgs_a[1]), list(msgs_a[2]))
    user = voter_of(checker, record, qid)
    return (
        qid,
        ts,
        vote,
        anony,
        user,
        f"{qid}-a",
        model_a,
        msgs_a,
        f"{qid}-b",
        model_b,
        msgs_b,
        None,
    )
