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

``--category C`` keeps the battles where C is a true boolean column, is listed in the
``categories`` list column, or equals the ``category`` string column (in that order).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl

from arena_assets.ranking.style import STYLE_FEATURES

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
    if "conversation_a" in rec and "conversation_b" in rec and "header_count_a" not in rec:
        for side in "ab":
            row[f"_conv_{side}"] = [
                {"role": str(m.get("role", "")), "content": str(m.get("content") or "")}
                for m in rec[f"conversation_{side}"] or () if isinstance(m, dict)
            ]
    return row


def _with_style(frame: pl.DataFrame) -> pl.DataFrame:
    """Style columns from the carried conversations (``_conv_a/_b``), then drop them."""
    if "_conv_a" not in frame.columns:
        return frame
    from arena_assets.battles.style import style_columns

    wanted = {f"{f}_{s}" for f in STYLE_FEATURES for s in "ab"}
    styled = frame.with_columns(*style_columns("_conv_a", "_a"), *style_columns("_conv_b", "_b"))
    extra = [c for c in styled.columns if c not in frame.columns and c not in wanted]
    return styled.drop("_conv_a", "_conv_b", *extra)


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
        frame = _with_style(pl.DataFrame(_read_json_records(path), infer_schema_length=None))
    else:
        raise ValueError(f"unsupported battle file {path} (Parquet, JSONL or JSON)")
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: battle table lacks columns {missing}")
    return filter_category(frame, category) if category else frame


def filter_category(battles: pl.DataFrame, category: str) -> pl.DataFrame:
    """Battles in ``category`` (see the module docstring for the lookup order)."""
    if category in battles.columns and battles.schema[category] == pl.Boolean:
        return battles.filter(pl.col(category).fill_null(False))
    if "categories" in battles.columns:
        return battles.filter(pl.col("categories").list.contains(category).fill_null(False))
    if "category" in battles.columns:
        return battles.filter(pl.col("category") == category)
    raise ValueError(
        f"category {category!r}: no boolean column of that name, no 'categories' or 'category' column"
    )
