"""Judge prompts (our own wording), verdict parsers, and judgment files of other projects.

Pairwise protocol: every (question, candidate) is judged twice against the baseline with
the positions swapped; game 1 shows the baseline as Assistant A, game 2 the candidate as
A (the Arena-Hard-Auto layout). A verdict is one of five labels; the *last* label in the
judge's text counts (judges often restate the options before deciding). Scores are from
the candidate's side: win 1, tie 0.5, loss 0; a strong verdict (``>>``) counts ``weight``
times (Arena-Hard-Auto uses 3).

Judgment frame (one row per game), the common shape of our judgments and of imports:
``question_id, model, baseline, judge, game, model_a, model_b, judgment, verdict,
parsed`` (verdict null when unparsed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

PROMPT_VERSION = "pairwise-v1"
SINGLE_PROMPT_VERSION = "single-v1"
VERDICTS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
# spellings other judges use for the same five outcomes
_EQUIVALENT = {"A<<B": "B>>A", "A<B": "B>A", "B=A": "A=B", "B<A": "A>B", "B<<A": "A>>B"}
_VERDICT_RE = re.compile(r"\[\[\s*([AB])\s*(>>|<<|>|<|=)\s*([AB])\s*\]\]")
_RATING_RE = re.compile(r"\[\[\s*(\d+(?:\.\d+)?)\s*\]\]")
_RATING_BACKUP_RE = re.compile(r"\[\s*(\d+(?:\.\d+)?)\s*\]")

PAIRWISE_SYSTEM = (
    "You compare two AI assistants' answers to the same user request and decide which "
    "one serves the user better.\n"
    "First write your own short answer to the request, so you know what a good answer "
    "contains. Then check each assistant's answer for mistakes, missing pieces, and "
    "whether it actually does what was asked; a concise answer that is correct beats a "
    "long one that is not. Do not let the order of the answers, their length or their "
    "formatting sway you.\n"
    "End with exactly one verdict on its own line, chosen from:\n"
    "[[A>>B]] A is much better; [[A>B]] A is better; [[A=B]] about the same;\n"
    "[[B>A]] B is better; [[B>>A]] B is much better."
)
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


def pairwise_messages(question: str, answer_a: str, answer_b: str) -> list[dict]:
    return [
        {"role": "system", "content": PAIRWISE_SYSTEM},
        {"role": "user", "content": PAIRWISE_USER.format(
            question=question, answer_a=answer_a, answer_b=answer_b)},
    ]


def single_messages(question: str, answer: str) -> list[dict]:
    return [
        {"role": "system", "content": SINGLE_SYSTEM},
        {"role": "user", "content": SINGLE_USER.format(question=question, answer=answer)},
    ]


_PAIRWISE_PARTS = re.compile(
    r"\A<\|User Request\|>\n(?P<q>.*?)\n\n<\|Answer of Assistant A\|>\n(?P<a>.*?)\n"
    r"<\|End of Answer A\|>\n\n<\|Answer of Assistant B\|>\n(?P<b>.*?)\n<\|End of Answer B\|>\Z",
    re.DOTALL)
_SINGLE_PARTS = re.compile(
    r"\A<\|User Request\|>\n(?P<q>.*?)\n\n<\|Answer\|>\n(?P<a>.*?)\n<\|End of Answer\|>\Z",
    re.DOTALL)


def split_pairwise_prompt(user_text: str) -> tuple[str, str, str] | None:
    """(question, answer A, answer B) of a message built by ``pairwise_messages``; the
    simulated judge endpoint reads its inputs this way. None for any other text."""
    m = _PAIRWISE_PARTS.match(user_text or "")
    return (m["q"], m["a"], m["b"]) if m else None


def split_single_prompt(user_text: str) -> tuple[str, str] | None:
    m = _SINGLE_PARTS.match(user_text or "")
    return (m["q"], m["a"]) if m else None


def judge_with_retry(
    ask: Callable[[list[dict], int], str | None], messages: list[dict], retries: int = 1
) -> tuple[str | None, str | None, int]:
    """(last judge text, verdict or None, attempts). ``ask(messages, attempt)`` makes the
    call; the attempt number must enter the call's cache key, or a retry would only read
    back the cached unparseable answer."""
    text = None
    for attempt in range(retries + 1):
        text = ask(messages, attempt)
        verdict = parse_verdict(text)
        if verdict is not None:
            return text, verdict, attempt + 1
    return text, None, retries + 1


def plan_games(
    question_ids: Iterable[str], models: Iterable[str], baseline: str, judges: Iterable[str]
) -> pl.DataFrame:
    """Every game to play: question x candidate x judge x two position orders."""
    rows = [
        {"question_id": q, "model": m, "baseline": baseline, "judge": j, "game": g,
         "model_a": a, "model_b": b}
        for q in question_ids for m in models if m != baseline for j in judges
        for g, a, b in game_positions(m, baseline)
    ]
    return pl.DataFrame(rows, schema={k: JUDGMENT_SCHEMA[k] for k in (
        "question_id", "model", "baseline", "judge", "game", "model_a", "model_b")})


def normalise_verdict(label: str | None) -> str | None:
    """One of VERDICTS, or None for anything else."""
    if label is None:
        return None
    label = re.sub(r"\s+", "", label)
    label = _EQUIVALENT.get(label, label)
    return label if label in VERDICTS else None


def parse_verdict(text: str | None) -> str | None:
    """The last ``[[X?Y]]`` label in a judge's text, normalised; None when there is none."""
    if not text:
        return None
    matches = _VERDICT_RE.findall(text)
    for a, op, b in reversed(matches):
        label = normalise_verdict(f"{a}{op}{b}")
        if label is not None and a != b:
            return label
    return None


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


def judgment_frame(rows: list[dict]) -> pl.DataFrame:
    """Rows -> the judgment frame; verdicts normalised, ``parsed`` derived."""
    out = []
    for r in rows:
        verdict = normalise_verdict(r.get("verdict"))
        out.append({**{k: r.get(k) for k in JUDGMENT_SCHEMA}, "verdict": verdict,
                    "parsed": verdict is not None})
    return pl.DataFrame(out, schema=JUDGMENT_SCHEMA)


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def import_arena_hard_judgments(path: str | Path, baseline: str = "gpt-4-0314") -> pl.DataFrame:
    """Arena-Hard-Auto ``model_judgment`` JSONL (file or folder) -> judgment frame.

    Each record holds two games: game 1 with the baseline as A, game 2 with the model as A;
    ``score`` is the label the judge gave (null when it could not be parsed).
    """
    path = Path(path)
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    rows = []
    for f in files:
        for rec in _read_jsonl(f):
            qid = str(rec.get("question_id", rec.get("uid")))
            positions = game_positions(rec["model"], baseline)
            for game, (g, a, b) in zip(rec.get("games", []), positions):
                game = game or {}
                rows.append({"question_id": qid, "model": rec["model"], "baseline": baseline,
                             "judge": str(rec.get("judge")), "game": g, "model_a": a,
                             "model_b": b, "judgment": game.get("judgment"),
                             "verdict": game.get("score")})
    return judgment_frame(rows)


def import_fastchat_pairwise(path: str | Path, baseline: str | None = None) -> pl.DataFrame:
    """FastChat MT-Bench pairwise JSONL (``model_1, model_2, g1_winner, g2_winner``).

    FastChat reports each game's winner by model name (game 2 already mapped back from the
    swapped order); we restate them as A/B verdicts of games with positions
    (model_1, model_2) and (model_2, model_1). ``baseline`` defaults to ``model_2``.
    """
    rows = []
    for rec in _read_jsonl(Path(path)):
        m1, m2 = rec["model_1"], rec["model_2"]
        base = baseline or m2
        model = m1 if base == m2 else m2
        judge = rec.get("judge")
        judge = judge[0] if isinstance(judge, list) else judge
        qid = f"{rec['question_id']}:t{rec.get('turn', 1)}"
        for g, (a, b), key in ((1, (m1, m2), "g1"), (2, (m2, m1), "g2")):
            winner = rec.get(f"{key}_winner")
            verdict = {a: "A>B", b: "B>A", "tie": "A=B"}.get(winner)
            rows.append({"question_id": qid, "model": model, "baseline": base, "judge": judge,
                         "game": g, "model_a": a, "model_b": b,
                         "judgment": rec.get(f"{key}_judgment"), "verdict": verdict})
    return judgment_frame(rows)


SINGLE_SCHEMA = {"question_id": pl.String, "model": pl.String, "judge": pl.String,
                 "turn": pl.Int64, "judgment": pl.String, "score": pl.Float64}


def import_fastchat_single(path: str | Path) -> pl.DataFrame:
    """FastChat MT-Bench single-answer JSONL -> ``question_id, model, judge, turn,
    judgment, score`` (score -1 where the grade was not parsed)."""
    rows = []
    for rec in _read_jsonl(Path(path)):
        judge = rec.get("judge")
        rows.append({
            "question_id": str(rec["question_id"]), "model": rec["model"],
            "judge": "/".join(judge) if isinstance(judge, list) else str(judge),
            "turn": int(rec.get("turn", 1)), "judgment": rec.get("judgment"),
            "score": float(rec["score"]) if rec.get("score") is not None else -1.0,
        })
    return pl.DataFrame(rows, schema=SINGLE_SCHEMA)


def detect_format(path: str | Path) -> str:
    """'arena_hard', 'fastchat_pairwise', 'fastchat_single' or 'judgments' (ours)."""
    path = Path(path)
    if path.suffix == ".parquet":
        return "judgments"
    first = next((f for f in ([path] if path.is_file() else sorted(path.glob("*.jsonl")))), None)
    if first is None:
        raise ValueError(f"{path}: no judgment file")
    with open(first) as fh:
        line = next((ln for ln in fh if ln.strip()), "")
    rec = json.loads(line) if line else {}
    if "games" in rec:
        return "arena_hard"
    if "g1_winner" in rec:
        return "fastchat_pairwise"
    if "score" in rec and "turn" in rec:
        return "fastchat_single"
    if "verdict" in rec and "game" in rec:
        return "judgments"
    raise ValueError(f"{first}: not a judgment format this reader knows (keys {sorted(rec)})")


def read_judgments(path: str | Path, baseline: str | None = None) -> tuple[str, pl.DataFrame]:
    """(kind, frame): kind 'single' (single-answer grades) or 'pairwise' (judgment frame)."""
    fmt = detect_format(path)
    if fmt == "fastchat_single":
        return "single", import_fastchat_single(path)
    if fmt == "arena_hard":
        return "pairwise", import_arena_hard_judgments(path, baseline or "gpt-4-0314")
    if fmt == "fastchat_pairwise":
        return "pairwise", import_fastchat_pairwise(path, baseline)
    path = Path(path)
    if path.suffix == ".parquet":
        frame = pl.read_parquet(path)
    else:
        frame = pl.DataFrame(_read_jsonl(path), infer_schema_length=None)
    return "pairwise", judgment_frame(frame.to_dicts())
