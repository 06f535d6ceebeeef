"""Judgment files as published, read into the judgment frame or the single-grade frame.

Layouts (a file, or a folder of ``*.jsonl`` read recursively in name order):

* Arena-Hard-Auto v0.1 ``model_judgment/<judge>/<model>.jsonl``: ``question_id, model,
  judge, games[2]{user_prompt, judgment, score}``; the baseline is not in the file
  (``gpt-4-0314`` unless given);
* Arena-Hard-Auto v2: ``uid, category, judge, model, baseline, games[2]{score,
  judgment{answer}, prompt}``; each record names its baseline and question category;
* FastChat MT-Bench pairwise: ``question_id, model_1, model_2, g1_winner, g2_winner,
  judge, turn``;
* single-answer grades: ``question_id, model, score`` (+ ``judge, judgment, turn,
  user_prompt``): MT-Bench's ``*_single.jsonl`` and grade files without ``turn``
  (one turn, as RouteLLM's and others' grade dumps);
* ours: the ``judgments`` table (Parquet) or its rows as JSON lines.

Anything else is refused in one line that names the layout it came closest to and the
fields it lacks.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from arena_assets.judging.verdicts import SINGLE_SCHEMA, game_positions, judgment_frame

V01_BASELINE = "gpt-4-0314"
# layout -> fields a record must have (the order is the order of the detection)
LAYOUTS = {
    "arena_hard_v2": ("uid", "model", "baseline", "games"),
    "arena_hard_v0.1": ("question_id", "model", "games"),
    "fastchat_pairwise": ("question_id", "model_1", "model_2", "g1_winner", "g2_winner"),
    "single_grades": ("question_id", "model", "score"),
    "judgments": ("question_id", "model", "game", "verdict"),
}
_NAMES = {
    "arena_hard_v2": "Arena-Hard v2 judgments",
    "arena_hard_v0.1": "Arena-Hard v0.1 judgments",
    "fastchat_pairwise": "MT-Bench pairwise judgments",
    "single_grades": "single-answer grades",
    "judgments": "our judgments table",
}


def _files(path: Path) -> list[Path]:
    return sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]


def _records(path: Path):
    for f in _files(path):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def detect_layout(path: str | Path) -> str:
    """The layout of a judgment file or folder (``LAYOUTS``), from its first record; a
    ValueError naming the closest layout and its missing fields otherwise."""
    path = Path(path)
    if path.suffix == ".parquet":
        return "judgments"
    files = _files(path)
    if not files or not files[0].exists():
        raise ValueError(f"{path}: no judgment file")
    rec = next(_records(files[0]), None)
    if not isinstance(rec, dict):
        raise ValueError(f"{files[0]}: empty, or a line is not a JSON object")
    for layout, need in LAYOUTS.items():
        if all(k in rec for k in need):
            return layout
    missing = {k: [f for f in need if f not in rec] for k, need in LAYOUTS.items()}
    fewest = min(len(m) for m in missing.values())
    closest = " or ".join(
        f"{_NAMES[k]} (needs {', '.join(m)})" for k, m in missing.items() if len(m) == fewest
    )
    raise ValueError(
        f"{files[0]}: not a judgment layout this reader knows: closest is {closest}; "
        f"the record has {', '.join(sorted(rec)[:12])}"
    )


def _score(game: dict | None) -> tuple[str | None, str | None]:
    if not isinstance(game, dict):
        return None, None
    text = game.get("judgment")
    if isinstance(text, dict):  # v2 keeps the judge's output object
        text = text.get("answer")
    return game.get("score"), text if isinstance(text, str) else None


def import_arena_hard_judgments(
    path: str | Path, baseline: str | None = None, protocol: str | None = None
) -> pl.DataFrame:
    """Arena-Hard-Auto ``model_judgment`` JSONL (v0.1 or v2; a file or a folder) ->
    judgment frame. Game 1 shows the baseline as A, game 2 the model. The stored ``score``
    is the label the anchor parsed (null when it could not); it is read as ``protocol``
    reads labels (default: the file's own version). ``baseline``: a v2 record names its
    own, and only the records against this one are kept; a v0.1 record names none, so
    this names it (default ``gpt-4-0314``)."""
    rows = []
    version = protocol
    for rec in _records(Path(path)):
        v2 = "uid" in rec
        version = version or ("arena-hard-v2" if v2 else "arena-hard-v0.1")
        if baseline and rec.get("baseline") and rec["baseline"] != baseline:
            continue
        base = rec.get("baseline") or baseline or V01_BASELINE
        qid = str(rec.get("uid") if v2 else rec.get("question_id"))
        category = rec.get("category") if v2 else "arena-hard-v0.1"
        games = list(rec.get("games") or [])
        games += [None] * (2 - len(games))
        for game, (g, a, b) in zip(games[:2], game_positions(rec["model"], base)):
            label, text = _score(game)
            rows.append(
                {
                    "question_id": qid,
                    "category": category,
                    "model": rec["model"],
                    "baseline": base,
                    "judge": str(rec.get("judge")),
                    "game": g,
                    "model_a": a,
                    "model_b": b,
                    "judgment": text,
                    "verdict": label,
                }
            )
    return judgment_frame(rows, version)


def import_fastchat_pairwise(path: str | Path, baseline: str | None = None) -> pl.DataFrame:
    """FastChat MT-Bench pairwise JSONL (``model_1, model_2, g1_winner, g2_winner``).

    FastChat reports each game's winner by model name (game 2 already mapped back from the
    swapped order); we restate them as A/B verdicts of games with positions
    (model_1, model_2) and (model_2, model_1). ``baseline`` defaults to each record's
    ``model_2``; given, only the records where it plays are kept.
    """
    rows = []
    for rec in _records(Path(path)):
        m1, m2 = rec["model_1"], rec["model_2"]
        if baseline and baseline not in (m1, m2):
            continue
        base = baseline or m2
        model = m1 if base == m2 else m2
        judge = rec.get("judge")
        judge = judge[0] if isinstance(judge, list) else judge
        qid = f"{rec['question_id']}:t{rec.get('turn', 1)}"
        for g, (a, b), key in ((1, (m1, m2), "g1"), (2, (m2, m1), "g2")):
            winner = rec.get(f"{key}_winner")
            verdict = {a: "A>B", b: "B>A", "tie": "A=B"}.get(winner)
            rows.append(
                {
                    "question_id": qid,
                    "category": "mt-bench",
                    "model": model,
                    "baseline": base,
                    "judge": judge,
                    "game": g,
                    "model_a": a,
                    "model_b": b,
                    "judgment": rec.get(f"{key}_judgment"),
                    "verdict": verdict,
                }
            )
    return judgment_frame(rows)


def import_single_grades(path: str | Path) -> pl.DataFrame:
    """Single-answer grade JSONL -> ``question_id, model, judge, turn, judgment, score``
    (score -1 where the grade was not parsed; ``turn`` 1 when the file has none)."""
    rows = []
    for rec in _records(Path(path)):
        judge = rec.get("judge")
        score = rec.get("score")
        rows.append(
            {
                "question_id": str(rec["question_id"]),
                "model": rec["model"],
                "judge": "/".join(map(str, judge))
                if isinstance(judge, list)
                else (str(judge) if judge else None),
                "turn": int(rec.get("turn") or 1),
                "judgment": rec.get("judgment"),
                "score": float(score) if isinstance(score, int | float) else -1.0,
            }
        )
    return pl.DataFrame(rows, schema=SINGLE_SCHEMA)


def read_judgments(
    path: str | Path, baseline: str | None = None, protocol: str | None = None
) -> tuple[str, pl.DataFrame]:
    """(kind, frame): kind 'single' (single-answer grades) or 'pairwise' (judgment frame)."""
    layout = detect_layout(path)
    if layout == "single_grades":
        return "single", import_single_grades(path)
    if layout.startswith("arena_hard"):
        return "pairwise", import_arena_hard_judgments(path, baseline, protocol)
    if layout == "fastchat_pairwise":
        return "pairwise", import_fastchat_pairwise(path, baseline)
    path = Path(path)
    frame = (
        pl.read_parquet(path)
        if path.suffix == ".parquet"
        else pl.DataFrame(list(_records(path)), infer_schema_length=None)
    )
    return "pairwise", judgment_frame(frame.to_dicts(), protocol)
