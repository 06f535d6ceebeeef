"""LMArena's published board layout (github.com/lmarena/arena-catalog, ``data/``): four
files, ``leaderboard-{text,vision}[-style-control].json``, each
``{category: {model: {"rating", "rating_q975", "rating_q025"}}}`` with the categories in
sorted order, the models best first and deprecated models left out (what its
``update_leaderboard_data.py`` writes, indented by 4).

``read_catalog`` reads those files (the published ones and ours alike) into board rows;
``catalog_files`` writes a month's boards in the same layout.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import polars as pl

from arena_assets.site.names import catalog_key, from_catalog_key

FILES = {
    ("text", False): "leaderboard-text.json",
    ("text", True): "leaderboard-text-style-control.json",
    ("vision", False): "leaderboard-vision.json",
    ("vision", True): "leaderboard-vision-style-control.json",
}
ROW_SCHEMA = {
    "board": pl.String,
    "style": pl.Boolean,
    "model": pl.String,
    "rating": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
}


def parse_catalog(data: Mapping, kind: str, style: bool) -> pl.DataFrame:
    """One catalog file's JSON -> rows (``board`` in our keys, ``lower``/``upper`` = the
    published q025/q975). Raises ValueError naming the first malformed entry."""
    if not isinstance(data, Mapping):
        raise ValueError(f"expected {{category: {{model: ...}}}}, got {type(data).__name__}")
    rows = []
    for category, models in data.items():
        if not isinstance(models, Mapping):
            raise ValueError(f"category {category!r}: expected an object of models")
        for model, entry in models.items():
            try:
                rows.append(
                    (
                        from_catalog_key(kind, category),
                        style,
                        model,
                        float(entry["rating"]),
                        float(entry["rating_q025"]),
                        float(entry["rating_q975"]),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(
                    f"{category}/{model}: needs rating, rating_q025 and rating_q975 numbers ({exc})"
                ) from exc
    return pl.DataFrame(rows, schema=ROW_SCHEMA, orient="row")


def read_catalog(folder) -> pl.DataFrame:
    """Every ``leaderboard-*.json`` of FILES present in ``folder`` (a path), as rows."""
    from pathlib import Path

    frames = []
    for (kind, style), name in FILES.items():
        path = Path(folder) / name
        if path.exists():
            frames.append(parse_catalog(json.loads(path.read_text()), kind, style))
    if not frames:
        raise FileNotFoundError(f"no arena-catalog leaderboard-*.json file in {folder}")
    return pl.concat(frames)


def catalog_files(
    boards: Iterable[tuple[str, bool, pl.DataFrame]], exclude: set[str] = frozenset()
) -> dict[str, bytes]:
    """File name -> bytes in arena-catalog's layout, for boards given as (board key, style,
    rows with ``model, rating, lower, upper``); ``exclude`` (deprecated models) left out."""
    out: dict[tuple[str, bool], dict] = {}
    for key, style, rows in boards:
        kind, category = catalog_key(key)
        ranked = rows.filter(~pl.col("model").is_in(sorted(exclude))).sort(
            ["rating", "model"], descending=[True, False]
        )
        out.setdefault((kind, style), {})[category] = {
            m: {"rating": r, "rating_q975": u, "rating_q025": lo}
            for m, r, lo, u in ranked.select("model", "rating", "lower", "upper").iter_rows()
        }
    return {
        FILES[k]: json.dumps(dict(sorted(v.items())), indent=4).encode()
        for k, v in sorted(out.items())
    }
