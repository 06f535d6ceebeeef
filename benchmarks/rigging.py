"""Vote rigging against the battle filter (issue 19): attack x N -> rank change.

    .venv/bin/python benchmarks/rigging.py [--worlds 3] [--sessions 70000] [--users 12000]
        [--votes 50 100 200 500 1000 2000] [--attacks all] [--out benchmarks/out/rigging]

Per world (seed): three honest months simulated with served events, identity fields and
10 % of users on shared campus networks (the honest look-alikes of linked accounts);
months 1-2 go through ingest, cleaning and `battles_month` into a lake; the attacker
reads the board after month 2 and targets the models ranked 5th and 10th (omnipresent:
makes the model just above the target lose). Each attack is planted once at the largest
N (its own raw files, `simulator.rigging.simulate_attacks`), ingested and cleaned; the
attack at N is its accounts in creation order up to N rigged votes, joined to month 3's
honest raw_logs and conversations and run through `build_battles` with the lake's crowd
and voter history. The board is Bradley-Terry over months 1-3 (kept battles; "no filter":
every vote). Printed per attack and N, the mean over worlds x targets: rank gain of the
target with no filter / with the per-voter rules only / with every rule, the share of
rigged votes removed, and the honest votes removed by the new rules (issue 19's limit:
<= 0.1 %). Then the cost: the smallest N whose mean gain reaches one rank, and the ratio
filtered / unfiltered (target: >= 10x).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import polars as pl

from arena_assets.battles import BattleConfig, build_battles
from arena_assets.battles.rigging import RIGGING_FLAGS
from arena_assets.battles.schema import REMOVAL_REASONS
from arena_assets.clean import build_conversations
from arena_assets.ingest import parse_month
from arena_assets.ingest.validate import Checker
from arena_assets.pipeline.battles import battles_month, earlier_crowd, earlier_voters
from arena_assets.pipeline.clean import clean_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.ranking.leaderboard import fit_bt
from arena_assets.simulator import WorldConfig, load_truth, simulate_months
from arena_assets.simulator.rigging import Attack, simulate_attacks
from arena_assets.storage import Lake

MONTHS = ("2024-01", "2024-02", "2024-03")
SALT = "rigging-bench"
ATTACKS = {  # name -> (accounts, strategy)
    "single": ("single", "target_only"),
    "sybils": ("sybils", "target_only"),
    "linked_sybils": ("linked_sybils", "target_only"),
    "omnipresent": ("sybils", "omnipresent"),
}
OLD_RULES = [r for r in REMOVAL_REASONS if r not in RIGGING_FLAGS]


def world_config(users: int) -> WorldConfig:
    return WorldConfig(n_users=users, served_events=True, identity_fields=True,
                       shared_network_share=0.1)


def rank_of(frame: pl.DataFrame, model: str) -> int:
    table = fit_bt(frame.select("model_a", "model_b", "winner")).table
    row = table.filter(pl.col("model") == model)
    return int(row["rank"][0]) if row.height else 999


def honest_world(root: Path, seed: int, sessions: int, users: int) -> dict:
    raw, lake = root / f"raw-{seed}-{sessions}-{users}", Lake(str(root / f"lake-{seed}-{sessions}-{users}"))
    cfg = world_config(users)
    models_file = raw / "models.json"
    cached = root / f"month3-{seed}-{sessions}-{users}"
    if not (cached / "conv.parquet").exists():  # a rerun reuses the honest world
        simulate_months(raw, list(MONTHS), sessions, seed=seed, config=cfg)
        models = {m["name"] for m in json.loads(models_file.read_text())}
        for month in MONTHS[:2]:
            ingest_month(lake, str(raw), month, salt=SALT, known_models=models)
            clean_month(lake, month)
            battles_month(lake, month, BattleConfig(seed=1))
        parsed = parse_month(str(raw), MONTHS[2], salt=SALT, known_models=models)
        cached.mkdir(parents=True, exist_ok=True)
        parsed.raw_logs.write_parquet(cached / "raw_logs.parquet")
        build_conversations(parsed.raw_logs, month=MONTHS[2]).write_parquet(cached / "conv.parquet")
    models = {m["name"] for m in json.loads(models_file.read_text())}
    raw_logs = pl.read_parquet(cached / "raw_logs.parquet")
    conv = pl.read_parquet(cached / "conv.parquet")
    earlier = lake.read_months("battles", list(MONTHS[:2]))
    board = fit_bt(earlier.filter("keep").select("model_a", "model_b", "winner")).table.sort("rank")
    truth = load_truth(raw)["votes"].filter(pl.col("month") == MONTHS[2])
    return {"raw": raw, "cfg": cfg, "models": models, "lake": lake, "raw_logs": raw_logs,
            "conv": conv, "earlier": earlier, "board": board["model"].to_list(),
            "abusive_ids": set(truth.filter("abusive")["event_id"].to_list()),
            "crowd": earlier_crowd(lake, list(MONTHS[:2])),
            "history": earlier_voters(lake, list(MONTHS[:2]))}


def planted(root: Path, seed: int, world: dict, name: str, model: str, votes: int) -> dict:
    accounts, strategy = ATTACKS[name]
    out = root / f"attack-{seed}-{name}-{model}-{votes}"
    cfg = replace(world["cfg"], attacks=(Attack(MONTHS[2], model, votes, accounts=accounts,
                                                strategy=strategy, seed=seed),))
    simulate_attacks(out, MONTHS[2], seed, cfg)
    parsed = parse_month(str(out), MONTHS[2], salt=SALT, known_models=world["models"])
    conv = build_conversations(parsed.raw_logs, month=MONTHS[2])
    accounts_truth = pl.read_parquet(out / "_truth" / "rig_accounts" / f"{MONTHS[2]}.parquet")
    return {"raw_logs": parsed.raw_logs, "conv": conv, "accounts": accounts_truth}


def one_build(world: dict, attack: dict | None, n: int, target: str, keep_battles: bool = False) -> dict:
    raw, conv = world["raw_logs"], world["conv"]
    rigged_hashes: set[str] = set()
    if attack is not None and n > 0:
        # the attack's first n votes: whole accounts in creation order, the last one cut
        # after its k-th vote (everything it did up to that vote: its chats, served battles)
        acc = attack["accounts"].with_columns(pl.col("votes_cast").cum_sum().alias("_c"))
        chosen = acc.filter(pl.col("_c") - pl.col("votes_cast") < n)
        checker = Checker(MONTHS[2], SALT, None)
        rigged_hashes = {checker.user_hash(u) for u in chosen["user_id"].to_list()}
        part = attack["raw_logs"].filter(pl.col("user_hash").is_in(list(rigged_hashes)))
        last = chosen.tail(1).row(0, named=True)
        keep_votes = n - (last["_c"] - last["votes_cast"])
        if keep_votes < last["votes_cast"]:
            own = pl.col("user_hash") == checker.user_hash(last["user_id"])
            cut = (part.filter(own & pl.col("type").is_in(["leftvote", "rightvote", "tievote", "bothbad_vote"]))
                   .sort("tstamp")["tstamp"][keep_votes - 1])
            part = part.filter(~own | (pl.col("tstamp") <= cut))
        ids = set(part["conv_id_a"].drop_nulls().to_list()) | set(part["conv_id_b"].drop_nulls().to_list())
        raw = pl.concat([raw, part])
        conv = pl.concat([conv, attack["conv"].filter(pl.col("conv_id").is_in(list(ids)))])
    result = build_battles(raw, conv, BattleConfig(seed=1), crowd=world["crowd"], history=world["history"])
    b = result.battles
    if keep_battles:
        return {"battles": b}
    rigged = pl.col("voter_hash").is_in(list(rigged_hashes))
    honest = ~rigged & ~pl.col("battle_id").is_in(list(world["abusive_ids"]))
    old_keep = ~pl.any_horizontal([pl.col(r) for r in OLD_RULES])
    earlier = world["earlier"]
    cols = ["model_a", "model_b", "winner"]
    return {
        "rank_none": rank_of(pl.concat([earlier.select(cols), b.select(cols)]), target),
        "rank_old": rank_of(pl.concat([earlier.filter("keep").select(cols), b.filter(old_keep).select(cols)]), target),
        "rank_new": rank_of(pl.concat([earlier.filter("keep").select(cols), b.filter("keep").select(cols)]), target),
        "rigged": int(b.filter(rigged).height),
        "rigged_removed": int(b.filter(rigged & ~pl.col("keep")).height),
        "honest": int(b.filter(honest).height),
        "honest_removed_new": int(b.filter(honest & pl.col("removed_reason").is_in(list(RIGGING_FLAGS))).height),
        "meta": result.metadata["rigging"],
    }


def alarm_figures(root: Path, seed: int, sessions: int, users: int, votes: list[int]) -> dict:
    """z of the rating moves (`ranking.alarm.rating_moves`, month 3 vs month 2): every model
    on the honest month, and the 10th model under the planted sybil attack of ``votes``
    (unfiltered and filtered boards)."""
    from arena_assets.ranking.alarm import rating_moves

    cols = ["model_a", "model_b", "winner"]

    def board(frame: pl.DataFrame) -> pl.DataFrame:
        return fit_bt(frame.select(cols)).table.with_columns(pl.lit("overall").alias("board"))

    world = honest_world(root, seed, sessions, users)
    kept, everything = world["earlier"].filter("keep").select(cols), world["earlier"].select(cols)
    honest = one_build(world, None, 0, world["board"][0], keep_battles=True)["battles"]
    moves = rating_moves(board(pl.concat([kept, honest.filter("keep").select(cols)])), board(kept))
    out = {"seed": seed, "models": moves.height, "honest_max_abs_z": round(float(moves["z"].abs().max()), 2)}
    target = world["board"][9]
    attack = planted(root, seed, world, "sybils", target, max(votes))
    for n in votes:
        b = one_build(world, attack, n, target, keep_battles=True)["battles"]
        unfiltered = rating_moves(board(pl.concat([everything, b.select(cols)])), board(everything))
        filtered = rating_moves(board(pl.concat([kept, b.filter("keep").select(cols)])), board(kept))
        z = lambda m: round(float(m.filter(pl.col("model") == target)["z"][0]), 2)  # noqa: E731
        out[f"N{n}"] = {"target_z_unfiltered": z(unfiltered), "target_z_filtered": z(filtered),
                        "max_abs_z_filtered": round(float(filtered["z"].abs().max()), 2)}
    return out


def summarize(table: pl.DataFrame) -> None:
    """Mean over worlds x targets per attack and N, and the cost of one rank."""
    summary = (table.group_by("attack", "n").agg(
        pl.len().alias("cases"), pl.col("rigged").mean().round(0).alias("rigged_votes"),
        pl.col("gain_none").mean().round(2), pl.col("gain_old").mean().round(2), pl.col("gain_new").mean().round(2),
        (pl.col("rigged_removed").sum() / pl.col("rigged").sum() * 100).round(1).alias("rigged_removed_%"),
        (pl.col("honest_removed_new").sum() / pl.col("honest").sum() * 100).round(3).alias("honest_removed_new_%"),
    ).sort("attack", "n"))
    pl.Config.set_tbl_rows(100)
    pl.Config.set_tbl_cols(20)
    print(summary)
    print("cost of one rank (smallest N whose mean gain >= 1):")
    for name in summary["attack"].unique(maintain_order=True):
        part = summary.filter(pl.col("attack") == name)
        top = int(part["n"].max())
        cost = {k: next((n for n, g in zip(part["n"], part[f"gain_{k}"]) if g >= 1), None) for k in ("none", "old", "new")}
        ratio = ("-" if cost["none"] is None else
                 f">{top / cost['none']:.0f}x" if cost["new"] is None else f"{cost['new'] / cost['none']:.1f}x")
        print(f"  {name:14s} no filter {cost['none']}, voter rules {cost['old']}, all rules {cost['new']}: {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=70_000)
    parser.add_argument("--users", type=int, default=12_000)
    parser.add_argument("--votes", type=int, nargs="+", default=[50, 100, 200, 500, 1000, 2000])
    parser.add_argument("--attacks", nargs="+", default=list(ATTACKS))
    parser.add_argument("--ranks", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--seeds", type=int, nargs="+", help="world seeds (default 1..--worlds)")
    parser.add_argument("--out", default="benchmarks/out/rigging")
    parser.add_argument("--summarize", nargs="+", metavar="CSV",
                        help="print the table of earlier runs' CSV files and stop")
    parser.add_argument("--alarm", action="store_true",
                        help="print the rating-move z-scores (honest, and sybils at --votes) and stop")
    args = parser.parse_args()
    if args.alarm:
        for seed in args.seeds or range(1, args.worlds + 1):
            print(json.dumps(alarm_figures(Path(args.out), seed, args.sessions, args.users, args.votes)))
        return
    if args.summarize:
        summarize(pl.concat([pl.read_csv(f) for f in args.summarize]))
        return
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    seeds = args.seeds or list(range(1, args.worlds + 1))
    for seed in seeds:
        t0 = time.perf_counter()
        world = honest_world(root, seed, args.sessions, args.users)
        print(f"world {seed}: {world['raw_logs'].filter(pl.col('type').is_in(['leftvote', 'rightvote', 'tievote', 'bothbad_vote'])).height} "
              f"votes in {MONTHS[2]}, {time.perf_counter() - t0:.0f} s", flush=True)
        print(f"  board after {MONTHS[1]}: {world['board'][:10]}", flush=True)
        for rank in args.ranks:
            target = world["board"][rank - 1]
            before = one_build(world, None, 0, target)
            for name in args.attacks:
                model = world["board"][rank - 2] if ATTACKS[name][1] == "omnipresent" else target
                attack = planted(root, seed, world, name, model, max(args.votes))
                for n in args.votes:
                    r = one_build(world, attack, n, target)
                    row = {"world": seed, "rank": rank, "attack": name, "n": n,
                           **{f"gain_{k}": before[f"rank_{k}"] - r[f"rank_{k}"] for k in ("none", "old", "new")},
                           **{k: r[k] for k in ("rigged", "rigged_removed", "honest", "honest_removed_new")}}
                    rows.append(row)
                    print("  " + json.dumps(row), flush=True)
                    if n == min(args.votes) and name == args.attacks[0]:
                        honest_base = {k: before[k] for k in ("honest", "honest_removed_new")}
                        print(f"  honest month alone: {honest_base}; {before['meta']}", flush=True)
    table = pl.DataFrame(rows)
    name = f"rigging-{'-'.join(map(str, seeds))}-{'-'.join(args.attacks)}.csv"
    table.write_csv(root / name)
    print(f"rows: {root / name}")
    summarize(table)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
