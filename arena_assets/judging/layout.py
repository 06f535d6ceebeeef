"""A month's bench in Arena-Hard-Auto's own file layout, written and read back.

    <root>/question.jsonl                         one question per line
    <root>/model_answer/<model>.jsonl             every answer of one model
    <root>/model_judgment/<judge>/<model>.jsonl   one record per (question, model): two games

The fields are the anchor's, by protocol version. v0.1 (the published v0.1 files):
question ``uid, category ("arena-hard-v0.1"), cluster, prompt``; answer ``question_id,
answer_id, model_id, choices[{index, turns[{content, token_len}]}], tstamp, conv_metadata
{token_len, header_count{h1..h6}, list_count{ordered, unordered}, bold_count{**, __}}``;
judgment ``question_id, model, judge, games[{user_prompt, judgment, score}]``. v2 (HEAD):
question ``uid, category, subcategory, prompt``; answer ``uid, ans_id, model, messages
[user, assistant{answer, reasoning}], tstamp, metadata{...the same counts}``; judgment
``uid, category, judge, model, baseline, games[{score, judgment{answer}, prompt}]``. A
game's ``score`` is the verdict (null when unparsed). Markdown counts follow the anchor's
counter (code blocks removed first; ``battles.style`` holds the same patterns).

``write_layout`` writes any fsspec URL (a release folder on S3 too); ``read_layout`` reads
both versions, so the published files and our exports come back as the same frames.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path

import fsspec
import orjson
import polars as pl

from arena_assets.battles.style import (
    BOLD_SPAN,
    CODE_BLOCK,
    HEADER_LEVEL,
    ORDERED_ITEM,
    UNORDERED_ITEM,
)
from arena_assets.judging.judge_prompts import JudgePrompts, own_prompts
from arena_assets.judging.protocol import OWN, OWN_V2, V01, get_protocol

# battles.style's patterns are Rust regex with inline flags: restated for Python's re
_HEADERS = {k: re.compile(p[4:], re.M) for k, p in HEADER_LEVEL.items()}
_CODE = re.compile(CODE_BLOCK[4:].replace(r"\z", r"\Z"), re.S)


def markdown_counts(text: str) -> dict:
    """The anchor's ``count_markdown_elements`` of an answer, code blocks removed."""
    plain = _CODE.sub("", text or "")
    return {
        "header_count": {k: len(p.findall(plain)) for k, p in _HEADERS.items()},
        "list_count": {
            "ordered": len(re.findall(ORDERED_ITEM[4:], plain, re.M)),
            "unordered": len(re.findall(UNORDERED_ITEM[4:], plain, re.M)),
        },
        "bold_count": {
            "**": len(re.findall(BOLD_SPAN.split("|")[0], plain)),
            "__": len(re.findall(BOLD_SPAN.split("|")[1], plain)),
        },
    }


def _id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:22]


def question_records(prompts: pl.DataFrame, protocol: str = V01) -> list[dict]:
    """``prompts``: ``question_id`` (or ``prompt_id``), ``prompt``, ``category``, and
    ``cluster`` or ``cluster_id`` (v0.1)."""
    proto = get_protocol(protocol)
    if "prompt_id" in prompts.columns and "question_id" not in prompts.columns:
        prompts = prompts.rename({"prompt_id": "question_id"})
    out = []
    for r in prompts.iter_rows(named=True):
        cat = proto.question_category(r.get("category"))
        if proto.rules == V01:
            cluster = r.get("cluster") if r.get("cluster") is not None else r.get("cluster_id")
            out.append(
                {
                    "uid": r["question_id"],
                    "category": cat,
                    "cluster": str(cluster),
                    "prompt": r["prompt"],
                }
            )
        else:
            out.append(
                {
                    "uid": r["question_id"],
                    "category": cat,
                    "subcategory": r.get("category"),
                    "prompt": r["prompt"],
                }
            )
    return out


def answer_records(
    answers: pl.DataFrame, prompts: dict[str, str], protocol: str = V01, tstamp: float = 0.0
) -> dict[str, list[dict]]:
    """{model: records} of the ok answers (``question_id, model, answer``, optional
    ``reasoning`` and ``token_len`` / ``answer_tokens``)."""
    proto = get_protocol(protocol)
    tokens = "token_len" if "token_len" in answers.columns else "answer_tokens"
    out: dict[str, list[dict]] = {}
    ok = answers.filter(pl.col("status") == "ok") if "status" in answers.columns else answers
    for r in ok.sort("model", maintain_order=True).iter_rows(named=True):
        # an imported answer keeps its file's counts, ids and time; ours are computed here
        meta = (
            orjson.loads(r["metadata"])
            if r.get("metadata")
            else {"token_len": int(r[tokens] or 0), **markdown_counts(r["answer"])}
        )
        aid = r.get("answer_id") or _id("answer", r["model"], r["question_id"])
        tstamp = r["tstamp"] if r.get("tstamp") is not None else tstamp
        if proto.rules == V01:
            rec = {
                "question_id": r["question_id"],
                "answer_id": aid,
                "model_id": r["model"],
                "choices": [
                    {
                        "index": 0,
                        "turns": [{"content": r["answer"], "token_len": meta.get("token_len")}],
                    }
                ],
                "tstamp": tstamp,
                "conv_metadata": meta,
            }
        else:
            content = {"answer": r["answer"]} | (
                {"reasoning": r["reasoning"]} if r.get("reasoning") else {}
            )
            rec = {
                "uid": r["question_id"],
                "ans_id": aid,
                "model": r["model"],
                "messages": [
                    {"role": "user", "content": prompts.get(r["question_id"], "")},
                    {"role": "assistant", "content": content},
                ],
                "tstamp": tstamp,
                "metadata": meta,
            }
        out.setdefault(r["model"], []).append(rec)
    return out


def judgment_records(
    judgments: pl.DataFrame,
    texts: dict[str, str],
    answers: dict[tuple[str, str], str],
    protocol: str = V01,
    judge_prompts: JudgePrompts | None = None,
) -> dict[tuple[str, str], list[dict]]:
    """{(judge, model): records}, one per (question, model, judge) with its two games;
    questions never played (a missing answer) are left out, as the anchor skips them. Each
    game's request is rendered from ``judge_prompts``, the texts the games were judged with
    (default: the project's own wording); judgments recording another set's hash
    (``prompt_sha256``) are refused in one line."""
    proto = get_protocol(protocol)
    prompts = judge_prompts or own_prompts(OWN if proto.rules == V01 else OWN_V2)
    if "prompt_sha256" in judgments.columns:
        used = sorted(set(judgments["prompt_sha256"].drop_nulls()))
        if used and used != [prompts.sha256]:
            raise ValueError(
                f"the judgments were judged with prompt set {', '.join(u[:12] for u in used)}, "
                f"not {prompts.sha256[:12]} ({prompts.protocol}): give the month's own set"
            )
    played = (
        judgments.filter(pl.col("status") != "no_answer")
        if "status" in judgments.columns
        else judgments
    )
    out: dict[tuple[str, str], list[dict]] = {}
    for (judge, model, qid), part in played.group_by(
        "judge", "model", "question_id", maintain_order=True
    ):
        games = []
        for g in part.sort("game").iter_rows(named=True):
            msgs = prompts.messages(
                texts.get(qid, ""),
                answers.get((qid, g["model_a"]), ""),
                answers.get((qid, g["model_b"]), ""),
                g.get("category") or proto.question_category(None),
            )
            if proto.rules == V01:
                games.append(
                    {
                        "user_prompt": msgs[1]["content"],
                        "judgment": g["judgment"],
                        "score": g["verdict"],
                    }
                )
            else:
                games.append(
                    {"score": g["verdict"], "judgment": {"answer": g["judgment"]}, "prompt": msgs}
                )
        first = part.row(0, named=True)
        if proto.rules == V01:
            rec = {"question_id": qid, "model": model, "judge": judge, "games": games}
        else:
            rec = {
                "uid": qid,
                "category": first.get("category"),
                "judge": judge,
                "model": model,
                "baseline": first["baseline"],
                "games": games,
            }
        out.setdefault((judge, model), []).append(rec)
    return out


def _fields(**types) -> list[dict]:
    """Hub card features (the YAML form of ``datasets.Features``): a type is a dtype
    name, a list ``[fields]`` (a list of structs) or a dict (a struct)."""
    out = []
    for name, t in types.items():
        if isinstance(t, list):
            out.append({"name": name, "list": t[0]})
        elif isinstance(t, dict):
            out.append({"name": name, "struct": _fields(**t)})
        else:
            out.append({"name": name, "dtype": t})
    return out


def card_features(protocol: str = V01) -> dict[str, list[dict]]:
    """The fields of ``question.jsonl`` and of the judgment files, as a dataset card
    declares them (``default`` and ``judgments`` configurations). Declared rather than
    inferred: a judgment file whose games were all unparsed holds only null scores, from
    which a reader would infer a null type that the next file's verdicts cannot fill. The
    answers' counts may come from an imported file's own metadata, so they are left to
    the reader."""
    s = "string"
    if get_protocol(protocol).name == V01:
        question = _fields(uid=s, category=s, cluster=s, prompt=s)
        game = _fields(user_prompt=s, judgment=s, score=s)
        judgment = _fields(question_id=s, model=s, judge=s, games=[game])
    else:
        question = _fields(uid=s, category=s, subcategory=s, prompt=s)
        game = _fields(score=s, judgment={"answer": s}, prompt=[_fields(role=s, content=s)])
        judgment = _fields(uid=s, category=s, judge=s, model=s, baseline=s, games=[game])
    return {"default": question, "judgments": judgment}


def _safe(name: str) -> str:
    """A model or judge name as a file name (the anchor uses the name itself)."""
    return name.replace("/", "_")


def write_layout(
    root: str,
    prompts: pl.DataFrame,
    answers: pl.DataFrame | None = None,
    judgments: pl.DataFrame | None = None,
    *,
    protocol: str = V01,
    month: str | None = None,
    storage_options: dict | None = None,
    judge_prompts: JudgePrompts | None = None,
) -> list[str]:
    """Write the layout under ``root`` (replacing files of the same name); the paths written.
    Records are sorted as their table, so a rerun writes the same bytes. ``judge_prompts``:
    the texts the judgments were played with (``judgment_records``)."""
    fs, base = fsspec.core.url_to_fs(root, **(storage_options or {}))
    tstamp = datetime.strptime(month, "%Y-%m").replace(tzinfo=UTC).timestamp() if month else 0.0
    pid = "prompt_id" if "prompt_id" in prompts.columns else "question_id"
    text = dict(zip(prompts[pid], prompts["prompt"]))
    files: dict[str, list[dict]] = {"question.jsonl": question_records(prompts, protocol)}
    ok: dict[tuple[str, str], str] = {}
    if answers is not None:
        for model, recs in answer_records(answers, text, protocol, tstamp).items():
            files[f"model_answer/{_safe(model)}.jsonl"] = recs
        good = answers.filter(pl.col("status") == "ok") if "status" in answers.columns else answers
        ok = {(q, m): a for q, m, a in good.select("question_id", "model", "answer").iter_rows()}
    if judgments is not None:
        records = judgment_records(judgments, text, ok, protocol, judge_prompts)
        for (judge, model), recs in records.items():
            files[f"model_judgment/{_safe(judge)}/{_safe(model)}.jsonl"] = recs
    written = []
    for name, recs in files.items():
        path = f"{base.rstrip('/')}/{name}"
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        with fs.open(path, "wb") as fh:
            fh.writelines(orjson.dumps(r) + b"\n" for r in recs)
        written.append(path)
    return written


def import_arena_hard_questions(path: str | Path) -> pl.DataFrame:
    """``question.jsonl`` (HEAD's ``uid, category, cluster|subcategory, prompt`` or the older
    ``question_id, category, cluster, turns[{content}]``) -> ``question_id, prompt, category,
    cluster, subcategory``."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = orjson.loads(line)
        prompt = rec.get("prompt")
        if prompt is None and rec.get("turns"):
            prompt = rec["turns"][0].get("content")
        rows.append(
            {
                "question_id": str(rec.get("uid", rec.get("question_id"))),
                "prompt": prompt,
                "category": rec.get("category"),
                "cluster": rec.get("cluster"),
                "subcategory": rec.get("subcategory"),
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "question_id": pl.String,
            "prompt": pl.String,
            "category": pl.String,
            "cluster": pl.String,
            "subcategory": pl.String,
        },
    )


def read_layout(
    root: str | Path, baseline: str | None = None, protocol: str | None = None
) -> tuple[pl.DataFrame, pl.DataFrame | None, pl.DataFrame | None]:
    """(questions, answers or None, judgments or None) of a folder in the anchor's layout;
    ``baseline`` and ``protocol`` as ``readers.import_arena_hard_judgments`` takes them."""
    from arena_assets.judging.answers import import_arena_hard_answers
    from arena_assets.judging.readers import import_arena_hard_judgments

    root = Path(root)
    questions = import_arena_hard_questions(root / "question.jsonl")
    answers = (
        import_arena_hard_answers(root / "model_answer")
        if (root / "model_answer").is_dir()
        else None
    )
    judged = root / "model_judgment"
    files = sorted(judged.rglob("*.jsonl")) if judged.is_dir() else []
    if baseline is None and answers is not None and files:
        # v0.1 records do not name their baseline: it is the one model with answers that
        # was not judged (the anchor leaves it out of model_list)
        unjudged = sorted(set(answers["model"]) - {f.stem for f in files})
        baseline = unjudged[0] if len(unjudged) == 1 else None
    judgments = import_arena_hard_judgments(judged, baseline, protocol) if files else None
    return questions, answers, judgments
