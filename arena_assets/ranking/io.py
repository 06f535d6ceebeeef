"""Reading battle tables: Parquet, JSONL and FastChat clean_battle JSON.

Supported inputs (a file, or a folder of such files):
- Parquet with at least ``model_a, model_b, winner`` (the battles asset's output);
- JSON Lines or a JSON list of FastChat clean_battle records. Only the fields the ranking
  needs are kept: ``model_a, model_b, winner``, boolean flags (``anony``, ``is_code``,
  ``is_refusal``, …), ``language``, ``tstamp``, the style columns when present and, when the
  record has ``conversation_a/_b``, style columns computed from them (the battles stage's
  vectorised counters, so files and the battles asset count alike), and
  ``categories``: the dotted paths of ``category_tag`` whose value is ``true``
  (e.g. ``refusal_v0.2``, ``criteria_v0.1.specificity``, ``math_v0.1.math``).

Token counts come from the file when it carries them, never re-estimated over them:
FastChat's ``conv_metadata`` (``sum_assistant_a_tokens``, ``header_count_a`` {h1..h6},
``list_count_a`` {ordered, unordered}, ``bold_count_a`` {"**", "__"}, same for b) fills the
style columns directly, and ``num_tokens`` on every assistant message of
``conversation_a/_b`` gives ``sum_assistant_tokens_a/_b``; only the counts a file lacks are
computed from the text (the cl100k approximation of ``arena_assets.tokens``).

``category_tag`` itself is kept too (LMArena's structure, ``labels.tags``), with
``user_tokens`` (the user turns of ``conversation_a``: their ``num_tokens`` or the token
approximation) and ``is_vision``, so that ``--category`` with one of LMArena's board names
(``hard_6``, ``math``, ``if``, ``no_refusal``, ``long_user``, ...) applies LMArena's membership
rule to the tag without any labeller, when the table has what that rule reads. Other names
(and board names the table cannot answer) keep the battles where C is a true boolean column,
is listed in the ``categories`` list column, or equals the ``category`` string column (in
that order).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl

from arena_assets.ranking.options import STYLE_FEATURES

REQUIRED = ("model_a", "model_b", "winner")
_SCALARS = ("question_id", "language", "tstamp", "turn", "judge", "category")
_STYLE_COLUMNS = tuple(f"{f}_{s}" for f in STYLE_FEATURES for s in "ab")


def _true_paths(tag: object, prefix: str = "") -> list[str]:
    if isinstance(tag, bool):
        return [prefix] if tag and prefix else []
    if isinstance(tag, dict):
        out: list[str] = []
        for key, value in tag.items():
            out += _true_paths(value, f"{prefix}.{key}" if prefix else str(key))
        return out
    return []


def _record_row(rec: dict) -> dict:
    missing = [c for c in REQUIRED if c not in rec]
    if missing:
        raise ValueError(f"battle record without {missing}: keys {sorted(rec)[:12]}")
    row = {c: rec[c] for c in REQUIRED}
    for key, value in rec.items():
        if isinstance(value, bool) or key in _SCALARS or key in _STYLE_COLUMNS:
            row[key] = value
    if "categories" in rec and isinstance(rec["categories"], list):
        row["categories"] = [str(c) for c in rec["categories"]]
    elif "category_tag" in rec:
        row["categories"] = _true_paths(rec["category_tag"])
    if isinstance(rec.get("category_tag"), dict):
        row["_tag"] = rec["category_tag"]
    if isinstance(rec.get("conversation_a"), list):
        row.update(_user_side(rec["conversation_a"]))
    meta = rec.get("conv_metadata")
    if isinstance(meta, dict):
        row.update(_metadata_style(meta))
    if (
        "conversation_a" in rec
        and "conversation_b" in rec
        and not all(c in row for c in _STYLE_COLUMNS)
    ):
        for side in "ab":
            messages = [m for m in rec[f"conversation_{side}"] or () if isinstance(m, dict)]
            row[f"_conv_{side}"] = [
                {"role": str(m.get("role", "")), "content": str(m.get("content") or "")}
                for m in messages
            ]
            counted = [m.get("num_tokens") for m in messages if m.get("role") == "assistant"]
            if counted and all(isinstance(t, int) for t in counted):
                row[f"_tokens_{side}"] = sum(counted)
    return row


def _user_side(conversation: list) -> dict:
    """``user_tokens`` (the file's ``num_tokens`` when every user turn has it, else None:
    counted later) and ``is_vision`` of a battle's first conversation."""
    users = [m for m in conversation if isinstance(m, dict) and m.get("role") == "user"]
    counted = [m.get("num_tokens") for m in users]
    texts = [
        m.get("content")
        if isinstance(m.get("content"), str)
        else str((m.get("content") or [""])[0])
        for m in users
    ]
    vision = any(
        isinstance(m.get("content"), list) and len(m["content"]) > 1 and m["content"][1]
        for m in users
    )
    return {
        "user_tokens": sum(counted)
        if counted and all(isinstance(t, int) for t in counted)
        else None,
        "_user_text": "\n".join(texts),
        "is_vision": vision,
    }


def _metadata_style(meta: dict) -> dict:
    """Style columns from FastChat's ``conv_metadata`` (counts per kind summed)."""
    out = {}
    for side in "ab":
        tokens = meta.get(f"sum_assistant_{side}_tokens")
        if isinstance(tokens, int | float):
            out[f"sum_assistant_tokens_{side}"] = int(tokens)
        for feature in ("header_count", "list_count", "bold_count"):
            value = meta.get(f"{feature}_{side}")
            if isinstance(value, dict):
                out[f"{feature}_{side}"] = int(
                    sum(v for v in value.values() if isinstance(v, int | float))
                )
            elif isinstance(value, int | float):
                out[f"{feature}_{side}"] = int(value)
    return out


def _with_style(frame: pl.DataFrame) -> pl.DataFrame:
    """Style columns from the carried conversations (``_conv_a/_b``), then drop them."""
    if "_conv_a" not in frame.columns:
        return frame
    from arena_assets.battles.style import style_columns

    wanted = {f"{f}_{s}" for f in STYLE_FEATURES for s in "ab"}
    computed = frame.select(*style_columns("_conv_a", "_a"), *style_columns("_conv_b", "_b"))
    columns = []
    for name in computed.columns:
        if name not in wanted:
            continue
        value = computed[name]
        side = name[-1]
        if name.startswith("sum_assistant_tokens") and f"_tokens_{side}" in frame.columns:
            value = frame[f"_tokens_{side}"].cast(pl.Int64).fill_null(value)  # the file's count
        if name in frame.columns:  # from conv_metadata: the file's value wins
            value = frame[name].cast(pl.Int64).fill_null(value)
        columns.append(value.alias(name))
    helpers = [c for c in frame.columns if c.startswith(("_conv_", "_tokens_"))]
    return frame.drop(helpers).with_columns(columns)


def _read_json_records(path: Path) -> list[dict]:
    data = path.read_bytes()
    if data.lstrip()[:1] == b"[":
        records = orjson.loads(data)
    else:
        records = [orjson.loads(line) for line in data.splitlines() if line.strip()]
    return [_record_row(r) for r in records]


def read_battles(path: str | Path, category: str | None = None) -> pl.DataFrame:
    """Battle table from a Parquet / JSONL / JSON file or a folder of them."""
    path = Path(path)
    if path.is_dir():
        files = sorted(
            p for p in path.iterdir() if p.suffix in {".parquet", ".jsonl", ".json", ".ndjson"}
        )
        if not files:
            raise FileNotFoundError(f"no battle files in {path}")
        frame = pl.concat([read_battles(p) for p in files], how="diagonal_relaxed")
    elif path.suffix == ".parquet":
        frame = pl.read_parquet(path)
    elif path.suffix in {".jsonl", ".json", ".ndjson"}:
        records = _read_json_records(path)
        tags = [r.pop("_tag", None) for r in records]
        frame = _with_style(pl.DataFrame(records, infer_schema_length=None))
        frame = _with_tags(frame, tags)
    else:
        raise ValueError(f"unsupported battle file {path} (Parquet, JSONL or JSON)")
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: battle table lacks columns {missing}")
    return filter_category(frame, category) if category else frame


def _with_tags(frame: pl.DataFrame, tags: list) -> pl.DataFrame:
    """``category_tag`` as LMArena's struct, ``user_tokens`` counted where the file had none."""
    from arena_assets.labels.tags import tag_frame

    if any(t is not None for t in tags):
        frame = frame.with_columns(tag_frame(tags))
    if "_user_text" in frame.columns:
        from arena_assets.tokens import approx_tokens

        frame = frame.with_columns(
            user_tokens=pl.col("user_tokens")
            .cast(pl.Int64)
            .fill_null(approx_tokens(pl.col("_user_text")).cast(pl.Int64))
        ).drop("_user_text")
    return frame


def filter_category(battles: pl.DataFrame, category: str) -> pl.DataFrame:
    """Battles in ``category`` (see the module docstring for the lookup order)."""
    from arena_assets.labels.tags import BOARD_INPUT, BOARDS, in_board

    if category in BOARDS and BOARD_INPUT.get(category, "category_tag") in battles.columns:
        return in_board(battles, category)
    if category in battles.columns and battles.schema[category] == pl.Boolean:
        return battles.filter(pl.col(category).fill_null(False))
    if "categories" in battles.columns:
        return battles.filter(pl.col("categories").list.contains(category).fill_null(False))
    if "category" in battles.columns:
        return battles.filter(pl.col("category") == category)
    raise ValueError(
        f"category {category!r}: no boolean column of that name, no 'categories' or 'category' column"
    )
