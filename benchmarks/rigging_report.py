"""The tables of `benchmarks/rigging.py`: costs per case and attack, and the honest cost.

Read by ``rigging.py --summarize CSV...``; every figure comes from the rows a run wrote
(``rigging-<tag>.csv``) and the honest month's figures (``honest-<world>.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

POINTS = 20.0  # the second cost: votes that lift the target this many rating points
MEASURES = {"rank": ("gain", 1.0), "points": ("lift", POINTS)}


def cost(part: pl.DataFrame, col: str) -> tuple[int, bool]:
    """(smallest rigged-vote count whose value is true, reached?); else (largest tested, False)."""
    hit = part.filter(pl.col(col)).sort("n")
    return (int(hit["rigged"][0]), True) if hit.height else (int(part["rigged"].max()), False)


def _median(cases: pl.DataFrame, col: str) -> str:
    """Median of a column of figures some of which are lower bounds (">=v"): the median of
    the values, itself a lower bound ('>=') when any value is one."""
    text = cases[col].cast(pl.String)
    values = text.str.strip_prefix(">=").str.strip_suffix("x").cast(pl.Float64)
    median = float(values.median())
    shown = f"{median:.1f}x" if col.startswith("ratio") else f"{median:,.0f}"
    return (">=" if text.str.starts_with(">=").any() else "") + shown


def _costs(part: pl.DataFrame, measure: str) -> dict:
    column, level = MEASURES[measure]
    if f"{column}_none" not in part.columns:  # rows of a run from before this measure
        return {f"cost_{measure}_none": "-", f"cost_{measure}_new": "-", f"ratio_{measure}": "-"}
    c0, r0 = cost(part.with_columns(pl.col(f"{column}_none") >= level), f"{column}_none")
    c1, r1 = cost(part.with_columns(pl.col(f"{column}_new") >= level), f"{column}_new")
    ratio = None if not r0 else c1 / c0
    return {
        f"cost_{measure}_none": c0 if r0 else f">={c0}",
        f"cost_{measure}_new": c1 if r1 else f">={c1}",
        f"ratio_{measure}": "-" if ratio is None else f"{'>=' if not r1 else ''}{ratio:.1f}x",
        f"_ratio_{measure}": ratio,
    }


def _share(part: pl.DataFrame, col: str) -> float:
    last = part.row(-1, named=True)
    if col not in part.columns or last[col] is None:
        return float("nan")
    return round(100 * last[col] / max(last["rigged"], 1), 1)


def case_table(table: pl.DataFrame) -> pl.DataFrame:
    """One row per (world, rank, attack): both costs with no filter and with every rule,
    their ratios, and what happened to the rigged votes at the largest N."""
    lines = []
    for (world, rank, name), part in table.sort("world", "rank", "attack", "n").group_by(
        "world", "rank", "attack", maintain_order=True
    ):
        row = {"world": world, "rank": rank, "attack": name}
        row |= _costs(part, "rank") | _costs(part, "points")
        row |= {
            "max_n": int(part["rigged"][-1]),
            "removed_%": _share(part, "rigged_removed"),
            "downweighted_%": _share(part, "rigged_downweighted"),
            "weight_left_%": _share(part, "rigged_weight"),
            "honest_removed_max_%": round(
                100 * (part["honest_removed_new"] / part["honest"]).max(), 3
            ),
        }
        if name == "omnipresent":
            s0, q0 = cost(part, "victim_below_none")
            s1, q1 = cost(part, "victim_below_new")
            row |= {
                "victim_below_none": s0 if q0 else f">={s0}",
                "victim_below_new": s1 if q1 else f">={s1}",
            }
        lines.append(row)
    return pl.DataFrame(lines, infer_schema_length=None)


def summarize(table: pl.DataFrame, honest: list[dict] | None = None) -> None:
    """Per case and per attack: the cost of one rank and of +20 points, no filter -> every
    rule; the rigged votes removed or down-weighted; the honest cost."""
    cases = case_table(table)
    pl.Config.set_tbl_rows(200)
    pl.Config.set_tbl_cols(30)
    pl.Config.set_tbl_width_chars(250)
    print(cases.drop([c for c in cases.columns if c.startswith("_")]))
    for measure, what in (("rank", "one rank"), ("points", f"+{POINTS:.0f} rating points")):
        if f"_ratio_{measure}" not in cases.columns:
            continue
        cell = pl.format(
            "{} -> {} ({})",
            f"cost_{measure}_none",
            f"cost_{measure}_new",
            f"ratio_{measure}",
        )
        print(f"votes for {what}, no filter -> every rule (ratio), per case:")
        print(
            cases.with_columns(cell.alias("cell"))
            .pivot("attack", index=["world", "rank"], values="cell")
            .sort("world", "rank")
        )
    print(
        "per attack: medians over the cases, worst case (smallest ratio); '>=': a lower bound "
        "(the filtered board never got there on the grid)"
    )
    for (name,), part in cases.group_by("attack", maintain_order=True):
        for measure in ("rank", "points"):
            key = f"_ratio_{measure}"
            rated = part.filter(pl.col(key).is_not_null()) if key in part.columns else part.clear()
            if rated.height == 0:
                print(f"  {name:15s} {measure:6s} no case reached it with no filter")
                continue
            worst = rated.sort(key).row(0, named=True)
            print(
                f"  {name:15s} {measure:6s} median {_median(rated, f'cost_{measure}_none')} -> "
                f"{_median(rated, f'cost_{measure}_new')}, ratio {_median(rated, f'ratio_{measure}')}; "
                f"worst {worst[f'ratio_{measure}']} (world {worst['world']}, rank {worst['rank']}); "
                f"{part.height - rated.height} of {part.height} cases never got there unfiltered"
            )
        print(
            f"  {name:15s} rigged votes at the largest N: removed "
            f"{part['removed_%'].min()}-{part['removed_%'].max()} %, down-weighted "
            f"{part['downweighted_%'].min()}-{part['downweighted_%'].max()} %, weight left "
            f"{part['weight_left_%'].min()}-{part['weight_left_%'].max()} %"
        )
    totals = table.select(
        ((pl.col("honest_removed_new") / pl.col("honest")).max() * 100).alias("max"),
        (pl.col("honest_removed_new").sum() / pl.col("honest").sum() * 100).alias("all"),
    ).row(0)
    print(
        f"honest votes removed by the rigging rules in attacked builds: max {totals[0]:.3f} % "
        f"of a build, {totals[1]:.4f} % overall"
    )
    for h in honest or []:
        print_honest(h)


def print_honest(h: dict) -> None:
    """One world's honest cost with no attack (``honest_cost`` in rigging.py)."""
    print(
        f"honest month, world {h['world']}, no attack: {h['honest']:,} honest votes; removed by "
        f"the rigging rules {h['removed_new']} ({h['removed_new_%']:.3f} %); down-weighted "
        f"{h['downweighted']:,} ({h['downweighted_%']:.1f} %: no_history {h['no_history']:,}, "
        f"cohort {h['cohort']:,}), weight lost {h['weight_lost_%']:.1f} % of the honest votes; "
        f"board moved by the population rules: max {h['max_move']:.1f} points = "
        f"{h['max_move_of_interval']:.2f} of its 95 % half-interval ({h['max_move_model']}), "
        f"{h['rank_changes']} models changed rank; cohorts flagged {h['cohorts_flagged']}"
    )


def read_honest(paths: list[str]) -> list[dict]:
    """The honest figures written beside the CSVs (``honest-*.json``)."""
    found = sorted({p for c in paths for p in Path(c).parent.glob("honest-*.json")})
    return [json.loads(p.read_text()) for p in found]


def read_rows(path: Path | str) -> pl.DataFrame:
    """A run's CSV; the omnipresent-only columns keep their types in a run without it."""
    return pl.read_csv(
        path,
        infer_schema_length=None,
        schema_overrides={
            **{f"victim_below_{k}": pl.Boolean for k in ("none", "new")},
            **{f"victim_points_{k}": pl.Float64 for k in ("none", "new")},
            "victim": pl.String,
        },
    )
