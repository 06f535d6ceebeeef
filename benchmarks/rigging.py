"""Vote rigging against the battle filter: the votes one rank costs, per attack.

    .venv/bin/python benchmarks/rigging.py [--seeds 1 2 3] [--sessions 76000] [--users 20000]
        [--votes 25 50 ... 20000] [--attacks all] [--ranks 5 10] [--enough 10] [--live filtered]
        [--tag NAME]
    .venv/bin/python benchmarks/rigging.py --summarize benchmarks/out/rigging/rigging-NAME.csv
    .venv/bin/python benchmarks/rigging.py --alarm [--seeds ...] [--votes 500 2000]

Worlds of 30 models (all on the board), 76,000 sessions and 20,000
users a month give ~27,000 honest votes from ~11,000 voters, 80 % of them casting 1-3,
with served events, identity fields and 10 % of users on shared campus networks. Months
1-2 go through ingest, cleaning and `battles_month` (the asset's rules: known models and
organisations in the leak vocabulary) into a lake; the attacker reads the board after
month 2 and targets its 5th and 10th model (omnipresent: makes the model just above the
target on the live board, months 1-3 with month 3's honest votes, the *victim*, lose
whenever it shows).

Per (world, target, attack) case the grid of rigged votes N runs upwards until the rank
gain of the target reaches 1 with every rule (and with no filter), or the grid ends, or
(``--enough``) N is 10x the unfiltered cost with no filtered gain yet: the target is met
and larger attacks are not planted. The
cost is the smallest N whose gain reaches 1 (">= N" when it never does), the ratio is
filtered / unfiltered (target: >= 10x, with <= 0.1 % of honest votes removed by the
rigging rules). The board is Bradley-Terry over months 1-3 (kept battles; "no filter":
every vote). Omnipresent also gets the victim's rating move in points and the N at which
the victim falls below the target.

Feasible on a shared 2-core machine: month 3's honest rows go through `battle_rows` once
per world; an attack is planted in chunks of 2,000 / 3,000 / 5,000 / 10,000 rigged votes
(independent accounts, each chunk on its own seed, planted only when the grid gets
there), each chunk's votes and served events prepared once and cached; a build is
`judge_battles` on the honest rows plus the chosen accounts' rows. Rows are appended to
``--out/rigging-<tag>.csv`` as they come, and a rerun resumes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

import polars as pl

from arena_assets.battles import BattleConfig
from arena_assets.battles.build import battle_rows, judge_battles, served_rows
from arena_assets.battles.rigging import RIGGING_FLAGS
from arena_assets.battles.schema import REMOVAL_REASONS
from arena_assets.clean import build_conversations
from arena_assets.contracts import VOTE_TYPES
from arena_assets.ingest import parse_month
from arena_assets.ingest.validate import Checker
from arena_assets.pipeline.battles import battles_month, earlier_crowd, earlier_voters
from arena_assets.pipeline.clean import clean_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.ranking.leaderboard import fit_bt
from arena_assets.simulator import WorldConfig, load_truth, simulate_months
from arena_assets.simulator.rig_plant import simulate_attacks
from arena_assets.simulator.rigging import Attack
from arena_assets.storage import Lake

MONTHS = ("2024-01", "2024-02", "2024-03")
SALT = "rigging-bench"
ATTACKS = {  # name -> (accounts, strategy)
    "single": ("single", "target_only"),
    "sybils": ("sybils", "target_only"),
    "linked_sybils": ("linked_sybils", "target_only"),
    "omnipresent": ("sybils", "omnipresent"),
}
CHUNKS = (2000, 3000, 5000, 10000)  # planted in turn: the attack's first 2k, 5k, 10k, 20k votes
GRID = [25, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000]
OLD_RULES = [r for r in REMOVAL_REASONS if r not in RIGGING_FLAGS]
COLS = ["model_a", "model_b", "winner"]


def world_config(users: int) -> WorldConfig:
    # every model released at launch: the 30 models are all on month 3's board
    return WorldConfig(
        n_users=users,
        served_events=True,
        identity_fields=True,
        shared_network_share=0.1,
        initial_model_share=1.0,
    )


def bench_config(registry: list[dict]) -> BattleConfig:
    """The battle rules as the asset builds them from models.json (`BattleRules`)."""
    return BattleConfig(
        known_models=tuple(sorted(r["name"] for r in registry)),
        extra_identity_words=tuple(
            sorted({r["organization"].lower() for r in registry if r.get("organization")})
        ),
        seed=1,
    )


def _config_key(config: BattleConfig) -> str:
    return hashlib.blake2b(repr(config).encode(), digest_size=6).hexdigest()


def board(frame: pl.DataFrame) -> pl.DataFrame:
    return fit_bt(frame.select(COLS)).table


def honest_world(root: Path, seed: int, sessions: int, users: int) -> dict:
    """Months 1-2 in a lake, month 3's honest rows and served events prepared once."""
    tag = f"{seed}-{sessions}-{users}"
    raw, lake = root / f"raw-{tag}", Lake(str(root / f"lake-{tag}"))
    cfg = world_config(users)
    cached = root / f"month3-{tag}"
    if not (cached / "conv.parquet").exists():  # a rerun reuses the honest world
        simulate_months(raw, list(MONTHS), sessions, seed=seed, config=cfg)
        models = {m["name"] for m in json.loads((raw / "models.json").read_text())}
        for month in MONTHS[:2]:
            ingest_month(lake, str(raw), month, salt=SALT, known_models=models)
            clean_month(lake, month)
        parsed = parse_month(str(raw), MONTHS[2], salt=SALT, known_models=models)
        cached.mkdir(parents=True, exist_ok=True)
        parsed.raw_logs.write_parquet(cached / "raw_logs.parquet")
        build_conversations(parsed.raw_logs, month=MONTHS[2]).write_parquet(cached / "conv.parquet")
    registry = json.loads((raw / "models.json").read_text())
    config = bench_config(registry)
    key = _config_key(config)
    if not (cached / f"rows-{key}.parquet").exists():  # the lake's battles under these rules
        for month in MONTHS[:2]:
            battles_month(lake, month, config)
        raw_logs = pl.read_parquet(cached / "raw_logs.parquet")
        battle_rows(raw_logs, pl.read_parquet(cached / "conv.parquet"), config).write_parquet(
            cached / f"rows-{key}.parquet"
        )
        served_rows(raw_logs, config).write_parquet(cached / f"served-{key}.parquet")
    earlier = lake.read_months("battles", list(MONTHS[:2]))
    order = board(earlier.filter("keep")).sort("rank")["model"].to_list()
    truth = load_truth(raw)["votes"].filter(pl.col("month") == MONTHS[2])
    return {
        "seed": seed,
        "raw": raw,
        "cfg": cfg,
        "config": config,
        "key": key,
        "root": root,
        "models": {m["name"] for m in registry},
        "earlier": earlier,
        "board": order,
        "rows": pl.read_parquet(cached / f"rows-{key}.parquet"),
        "served": pl.read_parquet(cached / f"served-{key}.parquet"),
        "abusive_ids": truth.filter("abusive")["event_id"],
        "crowd": earlier_crowd(lake, list(MONTHS[:2])),
        "history": earlier_voters(lake, list(MONTHS[:2])),
    }


def chunk(world: dict, name: str, model: str, k: int) -> dict:
    """The k-th chunk of an attack: its accounts (truth, with their voter hashes) and
    their prepared rows and served events; planted, parsed and cached on first use."""
    accounts, strategy = ATTACKS[name]
    out = world["root"] / f"chunk-{world['seed']}-{name}-{model}-{k}-{world['key']}"
    if not (out / "rows.parquet").exists():
        plant = out / "raw"
        # one account cannot be split into chunks: its k-th plant is an account of the
        # first k+1 chunks' votes (the grid takes its prefix)
        votes = sum(CHUNKS[: k + 1]) if accounts == "single" else CHUNKS[k]
        cfg = replace(
            world["cfg"],
            attacks=(
                Attack(
                    MONTHS[2],
                    model,
                    votes,
                    accounts=accounts,
                    strategy=strategy,
                    seed=1000 * world["seed"] + k,
                ),
            ),
        )
        simulate_attacks(plant, MONTHS[2], world["seed"], cfg)
        raw = parse_month(str(plant), MONTHS[2], salt=SALT, known_models=world["models"]).raw_logs
        votes = raw.filter(pl.col("type").is_in(VOTE_TYPES))
        voted = pl.concat([votes["conv_id_a"], votes["conv_id_b"]]).drop_nulls().implode()
        # only the voted conversations reach a battle: the rest are left out of the cache
        conv = build_conversations(
            raw.filter(pl.col("conv_id_a").is_in(voted) | pl.col("conv_id_b").is_in(voted)),
            month=MONTHS[2],
        )
        battle_rows(raw, conv, world["config"]).write_parquet(out / "rows.parquet.tmp")
        served_rows(raw, world["config"]).write_parquet(out / "served.parquet")
        checker = Checker(MONTHS[2], SALT, None)
        truth = pl.read_parquet(plant / "_truth" / "rig_accounts" / f"{MONTHS[2]}.parquet")
        truth.with_columns(
            pl.Series("voter_hash", [checker.user_hash(u) for u in truth["user_id"]])
        ).write_parquet(out / "accounts.parquet")
        (out / "rows.parquet.tmp").rename(out / "rows.parquet")
        shutil.rmtree(plant)  # ~60 MB of raw events per 1,000 rigged votes
    return {f: pl.read_parquet(out / f"{f}.parquet") for f in ("rows", "served", "accounts")}


def attack_votes(chunks: list[dict], n: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.Series]:
    """The attack's first n rigged votes: whole accounts in creation order (chunk by
    chunk), the last one cut after its k-th vote with what it was served until then."""
    acc = pl.concat([c["accounts"].select("voter_hash", "votes_cast") for c in chunks])
    acc = acc.filter(pl.col("votes_cast") > 0).with_columns(
        pl.col("votes_cast").cum_sum().alias("_c")
    )
    chosen = acc.filter(pl.col("_c") - pl.col("votes_cast") < n)
    hashes = chosen["voter_hash"]
    rows = pl.concat([c["rows"] for c in chunks]).filter(
        pl.col("voter_hash").is_in(hashes.implode())
    )
    served = pl.concat([c["served"] for c in chunks]).filter(
        pl.col("voter_hash").is_in(hashes.implode())
    )
    last = chosen.tail(1).row(0, named=True)
    keep = n - (last["_c"] - last["votes_cast"])
    if keep < last["votes_cast"]:
        own = pl.col("voter_hash") == last["voter_hash"]
        cut = rows.filter(own).sort("tstamp")["tstamp"][keep - 1]
        rows = rows.filter(~own | (pl.col("tstamp") <= cut))
        served = served.filter(~own | (pl.col("tstamp") <= cut))
    return rows, served, hashes


def one_build(
    world: dict,
    chunks: list[dict] | None,
    n: int,
    target: str,
    victim: str | None = None,
    keep_battles: bool = False,
) -> dict:
    rows, served, rigged_hashes = world["rows"], world["served"], pl.Series([], dtype=pl.String)
    if chunks and n > 0:
        r, s, rigged_hashes = attack_votes(chunks, n)
        rows, served = (
            pl.concat([rows, r], how="diagonal_relaxed"),
            pl.concat([served, s], how="diagonal_relaxed"),
        )
    result = judge_battles(
        rows, served, world["config"], crowd=world["crowd"], history=world["history"]
    )
    b = result.battles
    if keep_battles:
        return {"battles": b}
    rigged = pl.col("voter_hash").is_in(rigged_hashes.implode())
    honest = ~rigged & ~pl.col("battle_id").is_in(world["abusive_ids"].implode())
    old_keep = ~pl.any_horizontal([pl.col(r) for r in OLD_RULES])
    earlier = world["earlier"]
    out = {
        "rigged": int(b.filter(rigged).height),
        "rigged_removed": int(b.filter(rigged & ~pl.col("keep")).height),
        "honest": int(b.filter(honest).height),
        "honest_removed_new": int(
            b.filter(honest & pl.col("removed_reason").is_in(list(RIGGING_FLAGS))).height
        ),
        "meta": result.metadata["rigging"],
    }
    for k, frame in (
        ("none", pl.concat([earlier.select(COLS), b.select(COLS)])),
        ("old", pl.concat([earlier.filter("keep").select(COLS), b.filter(old_keep).select(COLS)])),
        ("new", pl.concat([earlier.filter("keep").select(COLS), b.filter("keep").select(COLS)])),
    ):
        table = board(frame)
        rating = dict(zip(table["model"], table["rating"]))
        out[f"rank_{k}"] = int(dict(zip(table["model"], table["rank"])).get(target, 999))
        out[f"rating_{k}"] = round(rating.get(target, float("nan")), 2)
        out[f"victim_{k}"] = round(rating.get(victim, float("nan")), 2) if victim else None
    return out


def live_board(world: dict, filtered: bool = True) -> list[str]:
    """The board the attack moves: months 1-3 with month 3's honest votes, every rule
    (``filtered``) or every vote (the unfiltered board, whose neighbours may differ)."""
    honest = one_build(world, None, 0, world["board"][0], keep_battles=True)["battles"]
    kept = pl.col("keep") if filtered else pl.lit(True)
    return (
        board(
            pl.concat(
                [world["earlier"].filter(kept).select(COLS), honest.filter(kept).select(COLS)]
            )
        )
        .sort("rank")["model"]
        .to_list()
    )


def victim_of(world: dict, target: str) -> str:
    """Omnipresent's victim: the model just above the target on the live board (on last
    month's board it may already be below the target once month 3's votes are in, and
    then no defeat of it can lift the target)."""
    live = world["live"]
    return live[max(live.index(target) - 1, 0)]


def run_case(
    world: dict,
    rank: int,
    name: str,
    grid: list[int],
    before: dict,
    done: dict,
    emit,
    enough: float = 0,
) -> None:
    """The grid upwards for one (world, target, attack) until both costs are found, or
    (``enough`` > 0) until the filtered cost is known to be at least ``enough`` times the
    unfiltered one."""
    target = world["board"][rank - 1]
    victim = victim_of(world, target) if ATTACKS[name][1] == "omnipresent" else None
    model = victim or target
    chunks: list[dict] = []
    planted = 0  # chunks planted so far (single: the latest plant is its one account)
    found = {"none": False, "new": False}
    cost_none = None
    for i, n in enumerate(grid):
        row = done.get((world["seed"], rank, name, n))
        if row is None:
            while sum(int(c["accounts"]["votes_cast"].sum()) for c in chunks) < n and planted < len(
                CHUNKS
            ):
                new = chunk(world, name, model, planted)
                chunks = [new] if name == "single" else [*chunks, new]
                planted += 1
            available = sum(int(c["accounts"]["votes_cast"].sum()) for c in chunks)
            if available < n and i and available <= grid[i - 1]:
                break  # the plant holds no more votes
            r = one_build(world, chunks, min(n, available), target, victim)
            row = {
                "world": world["seed"],
                "rank": rank,
                "attack": name,
                "n": n,
                "target": target,
                "victim": victim or "",
                **{
                    f"gain_{k}": before[f"rank_{k}"] - r[f"rank_{k}"]
                    for k in ("none", "old", "new")
                },
                **{
                    f"points_{k}": round(r[f"rating_{k}"] - before[f"rating_{k}"], 2)
                    for k in ("none", "new")
                },
                **{
                    f"victim_points_{k}": round(r[f"victim_{k}"] - before[f"victim_{k}"], 2)
                    if victim
                    else None
                    for k in ("none", "new")
                },
                **{
                    f"victim_below_{k}": (r[f"victim_{k}"] < r[f"rating_{k}"]) if victim else None
                    for k in ("none", "new")
                },
                **{k: r[k] for k in ("rigged", "rigged_removed", "honest", "honest_removed_new")},
            }
            emit(row)
        for k in found:
            found[k] |= row[f"gain_{k}"] >= 1
        if found["none"] and cost_none is None:
            cost_none = row["rigged"]
        if all(found.values()) or (
            enough and not found["new"] and cost_none and row["rigged"] >= enough * cost_none
        ):
            break


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
    shown = f"{median:.1f}x" if col == "ratio" else f"{median:,.0f}"
    return (">=" if text.str.starts_with(">=").any() else "") + shown


def summarize(table: pl.DataFrame) -> None:
    """Per case: cost of one rank with no filter / every rule and their ratio; worst case
    per attack; honest votes removed by the new rules."""
    lines = []
    for (world, rank, name), part in table.sort("world", "rank", "attack", "n").group_by(
        "world", "rank", "attack", maintain_order=True
    ):
        c0, r0 = cost(part.with_columns(pl.col("gain_none") >= 1), "gain_none")
        c1, r1 = cost(part.with_columns(pl.col("gain_new") >= 1), "gain_new")
        ratio = None if not r0 else (c1 / c0)
        row = {
            "world": world,
            "rank": rank,
            "attack": name,
            "cost_none": c0 if r0 else f">={c0}",
            "cost_new": c1 if r1 else f">={c1}",
            "ratio": "-" if ratio is None else f"{'>=' if not r1 else ''}{ratio:.1f}x",
            "_ratio": ratio,
            "_bound": not r1,
            "removed_at_max_%": round(
                100 * part["rigged_removed"][-1] / max(part["rigged"][-1], 1), 1
            ),
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
                "victim_points_none_at_max": part["victim_points_none"][-1],
                "victim_points_new_at_max": part["victim_points_new"][-1],
            }
        lines.append(row)
    cases = pl.DataFrame(lines, infer_schema_length=None)
    pl.Config.set_tbl_rows(200)
    pl.Config.set_tbl_cols(30)
    pl.Config.set_tbl_width_chars(250)
    print(cases.drop("_ratio", "_bound"))
    cell = pl.format("{} -> {} ({})", "cost_none", "cost_new", "ratio")
    print("votes for one rank, no filter -> every rule (ratio), per case:")
    print(
        cases.with_columns(cell.alias("cell"))
        .pivot("attack", index=["world", "rank"], values="cell")
        .sort("world", "rank")
    )
    print(
        "per attack: medians over the cases, worst case (smallest ratio); '>=': a lower bound "
        "(the filtered gain never reached 1 on the grid)"
    )
    for name, part in cases.group_by("attack", maintain_order=True):
        rated = part.filter(pl.col("_ratio").is_not_null())
        if rated.height == 0:
            print(
                f"  {name[0]:14s} no case moved its target a rank even with no filter "
                f"({part.height} cases; see victim_below / victim_points)"
            )
            continue
        worst = rated.sort("_ratio").row(0, named=True)
        print(
            f"  {name[0]:14s} median cost {_median(rated, 'cost_none')} -> {_median(rated, 'cost_new')}, "
            f"median ratio {_median(rated, 'ratio')}; worst {worst['ratio']} (world {worst['world']}, "
            f"rank {worst['rank']}: {worst['cost_none']} -> {worst['cost_new']}); rigged votes removed "
            f"{part['removed_at_max_%'].min()}-{part['removed_at_max_%'].max()} % at the largest N; "
            f"{part.height - rated.height} of {part.height} cases never moved unfiltered"
        )
    honest = table.select(
        ((pl.col("honest_removed_new") / pl.col("honest")).max() * 100).alias("max"),
        (pl.col("honest_removed_new").sum() / pl.col("honest").sum() * 100).alias("all"),
    ).row(0)
    print(
        f"honest votes removed by the new rules: max {honest[0]:.3f} % of a build, {honest[1]:.4f} % overall"
    )


def alarm_figures(world: dict, votes: list[int]) -> dict:
    """z of the rating moves (`ranking.alarm.rating_moves`, month 3 vs month 2): every model
    on the honest month, and the 10th model under unlinked sybils of ``votes``."""
    from arena_assets.ranking.alarm import rating_moves

    def overall(frame: pl.DataFrame) -> pl.DataFrame:
        return board(frame).with_columns(pl.lit("overall").alias("board"))

    kept, everything = world["earlier"].filter("keep").select(COLS), world["earlier"].select(COLS)
    honest = one_build(world, None, 0, world["board"][0], keep_battles=True)["battles"]
    moves = rating_moves(
        overall(pl.concat([kept, honest.filter("keep").select(COLS)])), overall(kept)
    )
    out = {
        "seed": world["seed"],
        "models": moves.height,
        "honest_max_abs_z": round(float(moves["z"].abs().max()), 2),
    }
    target = world["board"][9]
    chunks = [
        chunk(world, "sybils", target, k)
        for k in range(len(CHUNKS))
        if sum(CHUNKS[:k]) < max(votes)
    ]
    for n in votes:
        b = one_build(world, chunks, n, target, keep_battles=True)["battles"]
        unfiltered = rating_moves(
            overall(pl.concat([everything, b.select(COLS)])), overall(everything)
        )
        filtered = rating_moves(
            overall(pl.concat([kept, b.filter("keep").select(COLS)])), overall(kept)
        )
        z = lambda m: round(float(m.filter(pl.col("model") == target)["z"][0]), 2)
        out[f"N{n}"] = {
            "target_z_unfiltered": z(unfiltered),
            "target_z_filtered": z(filtered),
            "max_abs_z_filtered": round(float(filtered["z"].abs().max()), 2),
        }
    return out


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="world seeds")
    parser.add_argument("--sessions", type=int, default=76_000)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument(
        "--votes", type=int, nargs="+", default=GRID, help="the grid of rigged votes"
    )
    parser.add_argument("--attacks", nargs="+", default=list(ATTACKS))
    parser.add_argument("--ranks", type=int, nargs="+", default=[5, 10])
    parser.add_argument(
        "--enough",
        type=float,
        default=10.0,
        help="stop a case's grid once the filtered cost is >= this many times the "
        "unfiltered one (10: the target ratio; 0: run the grid to its end)",
    )
    parser.add_argument(
        "--live",
        choices=["filtered", "unfiltered"],
        default="filtered",
        help="the board whose neighbour is omnipresent's victim (where the two "
        "boards' neighbours differ, each variant's cost needs its own run)",
    )
    parser.add_argument("--out", default="benchmarks/out/rigging")
    parser.add_argument(
        "--tag", default="grid", help="rows go to <out>/rigging-<tag>.csv (a rerun resumes)"
    )
    parser.add_argument(
        "--summarize", nargs="+", metavar="CSV", help="print the cost table of CSV files and stop"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="--summarize prints the table as markdown"
    )
    parser.add_argument(
        "--alarm",
        action="store_true",
        help="print the rating-move z-scores (honest, and sybils at --votes) and stop",
    )
    args = parser.parse_args()
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    if args.summarize:
        if args.markdown:
            pl.Config.set_tbl_formatting("MARKDOWN")
            pl.Config.set_tbl_hide_column_data_types(True)
            pl.Config.set_tbl_hide_dataframe_shape(True)
        summarize(pl.concat([read_rows(f) for f in args.summarize], how="diagonal_relaxed"))
        return
    if args.alarm:
        for seed in args.seeds:
            print(
                json.dumps(
                    alarm_figures(honest_world(root, seed, args.sessions, args.users), args.votes)
                ),
                flush=True,
            )
        return
    csv = root / f"rigging-{args.tag}.csv"
    done_rows = read_rows(csv).to_dicts() if csv.exists() else []
    done = {(r["world"], r["rank"], r["attack"], r["n"]): r for r in done_rows}

    def emit(row: dict) -> None:
        done_rows.append(row)
        pl.DataFrame(done_rows, infer_schema_length=None).write_csv(csv)
        print("  " + json.dumps(row), flush=True)

    for seed in args.seeds:
        t0 = time.perf_counter()
        world = honest_world(root, seed, args.sessions, args.users)
        honest = world["rows"].filter(~pl.col("battle_id").is_in(world["abusive_ids"].implode()))
        print(
            f"world {seed}: {world['rows'].height} votes in {MONTHS[2]} ({honest.height} honest, "
            f"{honest['voter_hash'].n_unique()} honest voters), {time.perf_counter() - t0:.0f} s",
            flush=True,
        )
        world["live"] = live_board(world, args.live == "filtered")
        print(
            f"  board after {MONTHS[1]}: {world['board'][:11]}\n  live board: {world['live'][:11]}",
            flush=True,
        )
        for rank in args.ranks:
            target = world["board"][rank - 1]
            before = one_build(world, None, 0, target, victim_of(world, target))
            print(
                f"  rank {rank} ({target}), honest month alone: honest removed by the new rules "
                f"{before['honest_removed_new']} of {before['honest']}; {before['meta']}",
                flush=True,
            )
            for name in args.attacks:
                t1 = time.perf_counter()
                run_case(world, rank, name, sorted(args.votes), before, done, emit, args.enough)
                print(f"  {name} done in {time.perf_counter() - t1:.0f} s", flush=True)
    summarize(pl.DataFrame(done_rows, infer_schema_length=None))


if __name__ == "__main__":
    main()
