"""Vote rigging against the battle filter: the votes one rank costs, per attack.

    .venv/bin/python benchmarks/rigging.py [--seeds 1 2 3] [--sessions 76000] [--users 20000]
        [--votes 10 25 ... 20000] [--attacks careful_sybils careful_cover aged_accounts
        omnipresent aged_cover ...] [--ranks 5 10] [--enough 10] [--max-votes 10000]
        [--live filtered] [--tag NAME]
    .venv/bin/python benchmarks/rigging.py --summarize benchmarks/out/rigging/rigging-NAME.csv
    .venv/bin/python benchmarks/rigging.py --alarm [--seeds ...] [--attacks A] [--votes 100 1000]
    .venv/bin/python benchmarks/rigging.py --timing [--seeds ...]

Attacks by name (``ATTACKS``): careful_sybils (B), careful_cover (C), aged_accounts (D)
and omnipresent by default; aged_cover (D with cover votes: an attack the population
rules were not built around); single, sybils and linked_sybils (caught per account).
The world's size is ``--sessions`` / ``--users`` (the defaults: a full month; a smaller
world builds faster, its costs not comparable).

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
from rigging_report import POINTS, print_honest, read_honest, read_rows, summarize

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
ATTACKS = {  # name -> (accounts, strategy, cover votes per account)
    "single": ("single", "target_only", (0, 0)),
    "sybils": ("sybils", "target_only", (0, 0)),
    "linked_sybils": ("linked_sybils", "target_only", (0, 0)),
    "omnipresent": ("sybils", "omnipresent", (0, 0)),
    # careful adversaries (simulator/rig_careful.py): B, C and D
    "careful_sybils": ("careful_sybils", "target_only", (0, 0)),
    "careful_cover": ("careful_sybils", "target_only", (3, 10)),
    "aged_accounts": ("aged", "target_only", (0, 0)),
    # not designed around: aged accounts that also vote like the crowd on other models
    # between their rigged votes (no cohort is then fresh, concentrated or selective)
    "aged_cover": ("aged", "target_only", (3, 10)),
}
DEFAULT_ATTACKS = ["careful_sybils", "careful_cover", "aged_accounts", "omnipresent"]
# one plant per size (the k-th holds the first k+1 chunks' votes): a single account cannot
# be split, and aged accounts come from one pool that chunks on their own seeds would share
PREFIX_PLANTS = ("single", "aged_accounts", "aged_cover")
CHUNKS = (2000, 3000, 5000, 10000)  # planted in turn: the attack's first 2k, 5k, 10k, 20k votes
GRID = [10, 25, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000]
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


def _config_key(config: BattleConfig, rows_only: bool = False) -> str:
    """A key of the rules: with ``rows_only``, of what `battle_rows` reads (aliases and the
    leak vocabulary), so the planted chunks survive a change of the judging rules."""
    what = (
        (
            config.aliases,
            config.identity_names,
            config.derive_identity_names,
            config.known_models,
            config.extra_identity_words,
        )
        if rows_only
        else config
    )
    return hashlib.blake2b(repr(what).encode(), digest_size=6).hexdigest()


def board(frame: pl.DataFrame) -> pl.DataFrame:
    """Bradley-Terry over the frame's votes, honouring ``weight`` where the frame has it."""
    return fit_bt(frame.select([*COLS, *(["weight"] if "weight" in frame.columns else [])])).table


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
    key, judged = _config_key(config, rows_only=True), _config_key(config)
    marker = root / f"lake-{tag}" / f"judged-{judged}"
    if not marker.exists():  # the lake's battles of months 1-2 under these rules
        for old in (root / f"lake-{tag}").glob("judged-*"):
            old.unlink()
        for month in MONTHS[:2]:
            battles_month(lake, month, config)
        marker.touch()
    if not (cached / f"rows-{key}.parquet").exists():
        raw_logs = pl.read_parquet(cached / "raw_logs.parquet")
        battle_rows(raw_logs, pl.read_parquet(cached / "conv.parquet"), config).write_parquet(
            cached / f"rows-{key}.parquet"
        )
        served_rows(raw_logs, config).write_parquet(cached / f"served-{key}.parquet")
    earlier = lake.read_months("battles", list(MONTHS[:2]))
    # the targets: ranks on the board of months 1-2's kept votes (weights aside, so that
    # the targets stay the same whatever the population rules' settings)
    order = board(earlier.filter("keep").select(COLS)).sort("rank")["model"].to_list()
    # the honest month's figures (no attack) are read from the same rows as the attacks'
    honest_truth = load_truth(raw)["votes"].filter(pl.col("month") == MONTHS[2])
    truth = honest_truth
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
    accounts, strategy, cover = ATTACKS[name]
    out = world["root"] / f"chunk-{world['seed']}-{name}-{model}-{k}-{world['key']}"
    if not (out / "rows.parquet").exists():
        plant = out / "raw"
        # one account cannot be split into chunks: its k-th plant is an account of the
        # first k+1 chunks' votes (the grid takes its prefix); aged accounts likewise
        votes = sum(CHUNKS[: k + 1]) if name in PREFIX_PLANTS else CHUNKS[k]
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
                    cover=cover,
                ),
            ),
        )
        simulate_attacks(plant, MONTHS[2], world["seed"], cfg, truth_root=world["raw"])
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
        keys = truth["voter_key"] if "voter_key" in truth.columns else truth["user_id"]
        truth.with_columns(
            pl.Series("voter_hash", [checker.user_hash(u) for u in keys])
        ).write_parquet(out / "accounts.parquet")
        (out / "rows.parquet.tmp").rename(out / "rows.parquet")
        shutil.rmtree(plant)  # ~60 MB of raw events per 1,000 rigged votes
    return {f: pl.read_parquet(out / f"{f}.parquet") for f in ("rows", "served", "accounts")}


def attack_votes(
    chunks: list[dict], n: int, model: str
) -> tuple[pl.DataFrame, pl.DataFrame, pl.Series, pl.Series]:
    """The attack's first n rigged votes (on battles with ``model`` on screen): whole
    accounts in creation order (chunk by chunk), the last one cut after its n-th rigged
    vote with what it was served and its cover until then. Returns its rows, its served
    events, every battle id it cast (cover included) and the rigged ones."""
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
    on_screen = (pl.col("model_a") == model) | (pl.col("model_b") == model)
    last = chosen.tail(1).row(0, named=True)
    keep = n - (last["_c"] - last["votes_cast"])
    if keep < last["votes_cast"]:
        own = pl.col("voter_hash") == last["voter_hash"]
        cut = rows.filter(own & on_screen).sort("tstamp")["tstamp"][keep - 1]
        rows = rows.filter(~own | (pl.col("tstamp") <= cut))
        served = served.filter(~own | (pl.col("tstamp") <= cut))
    return rows, served, rows["battle_id"], rows.filter(on_screen)["battle_id"]


def _in(ids: pl.Series) -> pl.Expr:
    return pl.col("battle_id").is_in(ids.implode())


def weighted_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """Kept votes with their weights (1 where a table has none)."""
    kept = frame.filter("keep")
    weight = pl.col("weight") if "weight" in kept.columns else pl.lit(1.0)
    return kept.select(*COLS, weight.alias("weight"))


def one_build(
    world: dict,
    chunks: list[dict] | None,
    n: int,
    target: str,
    victim: str | None = None,
    keep_battles: bool = False,
) -> dict:
    rows, served = world["rows"], world["served"]
    attack_ids = rigged_ids = attackers = pl.Series([], dtype=pl.String)
    if chunks and n > 0:
        r, s, attack_ids, rigged_ids = attack_votes(chunks, n, victim or target)
        attackers = r["voter_hash"].unique()
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
    rigged = _in(rigged_ids)
    # a compromised account's owner keeps voting this month: those votes are the owner's,
    # but the account is the attacker's, and a rule that holds the account holds them too
    owners = ~_in(attack_ids) & pl.col("voter_hash").is_in(attackers.implode())
    honest = ~_in(attack_ids) & ~_in(world["abusive_ids"]) & ~owners
    kept = pl.col("keep")
    old_keep = ~pl.any_horizontal([pl.col(r) for r in OLD_RULES])
    earlier = world["earlier"]
    out = {
        "rigged": int(b.filter(rigged).height),
        "rigged_removed": int(b.filter(rigged & ~kept).height),
        "rigged_downweighted": int(b.filter(rigged & kept & (pl.col("weight") < 1)).height),
        "rigged_weight": round(float(b.filter(rigged & kept)["weight"].sum()), 2),
        "honest": int(b.filter(honest).height),
        "honest_removed_new": int(
            b.filter(honest & pl.col("removed_reason").is_in(list(RIGGING_FLAGS))).height
        ),
        "owners_removed_new": int(
            b.filter(owners & pl.col("removed_reason").is_in(list(RIGGING_FLAGS))).height
        ),
        "honest_downweighted": int(b.filter(honest & kept & (pl.col("weight") < 1)).height),
        "honest_weight_lost": round(float((1.0 - b.filter(honest & kept)["weight"]).sum()), 2),
        "meta": result.metadata["rigging"] | {"cohort": result.metadata["cohort"]},
    }
    for k, frame in (
        ("none", pl.concat([earlier.select(COLS), b.select(COLS)])),
        ("old", pl.concat([earlier.filter("keep").select(COLS), b.filter(old_keep).select(COLS)])),
        ("new", pl.concat([weighted_rows(earlier), weighted_rows(b)])),
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
    frame = pl.concat(
        [world["earlier"].filter(kept).select(COLS), honest.filter(kept).select(COLS)]
    )
    return board(frame).sort("rank")["model"].to_list()


def victim_of(world: dict, target: str) -> str:
    """Omnipresent's victim: the model just above the target on the live board (on last
    month's board it may already be below the target once month 3's votes are in, and
    then no defeat of it can lift the target)."""
    live = world["live"]
    return live[max(live.index(target) - 1, 0)]


def _settled(
    found: dict, cost_none: dict, m: str, rigged: int, enough: float, max_votes: int
) -> bool:
    """Whether a case's grid may stop for measure ``m`` (see `run_case`)."""
    if found[(m, "new")] and found[(m, "none")]:
        return True
    if cost_none[m] is None:
        return bool(max_votes) and rigged >= max_votes
    return bool(enough) and rigged >= enough * cost_none[m]


def run_case(
    world: dict,
    rank: int,
    name: str,
    grid: list[int],
    before: dict,
    done: dict,
    emit,
    enough: float = 0,
    max_votes: int = 0,
) -> None:
    """The grid upwards for one (world, target, attack) until both costs (one rank, and
    ``POINTS`` rating points) are found with no filter and with every rule, or (``enough``
    > 0) the filtered cost is known to be at least ``enough`` times the unfiltered one;
    a cost the unfiltered board does not reach by ``max_votes`` (> 0) is given up."""
    target = world["board"][rank - 1]
    victim = victim_of(world, target) if ATTACKS[name][1] == "omnipresent" else None
    model = victim or target
    chunks: list[dict] = []
    planted = 0  # chunks planted so far (prefix plants: the latest holds them all)
    found = {(m, k): False for m in ("gain", "lift") for k in ("none", "new")}
    cost_none: dict[str, int | None] = {"gain": None, "lift": None}
    for i, n in enumerate(grid):
        row = done.get((world["seed"], rank, name, n))
        if row is None:
            while sum(int(c["accounts"]["votes_cast"].sum()) for c in chunks) < n and planted < len(
                CHUNKS
            ):
                new = chunk(world, name, model, planted)
                chunks = [new] if name in PREFIX_PLANTS else [*chunks, new]
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
                **{
                    k: r[k]
                    for k in (
                        "rigged",
                        "rigged_removed",
                        "rigged_downweighted",
                        "rigged_weight",
                        "honest",
                        "honest_removed_new",
                        "owners_removed_new",
                        "honest_downweighted",
                        "honest_weight_lost",
                    )
                },
            }
            # the lift: the target's rating gain, or (omnipresent) its gain on the victim
            for k in ("none", "new"):
                row[f"lift_{k}"] = round(
                    row[f"points_{k}"] - (row[f"victim_points_{k}"] if victim else 0.0), 2
                )
            emit(row)
        for m, k in found:
            hit = row[f"{m}_{k}"] >= (1 if m == "gain" else POINTS)
            found[(m, k)] |= hit
            if k == "none" and hit and cost_none[m] is None:
                cost_none[m] = row["rigged"]

        if all(_settled(found, cost_none, m, row["rigged"], enough, max_votes) for m in cost_none):
            break


def honest_cost(world: dict) -> dict:
    """The defence's cost on the honest month with no attack: honest votes removed by the
    rigging rules or down-weighted by the population rules (``battles/cohort.py``), the
    weight they lost, and how far the board moves against the same removals with every
    weight 1, in points and in its own 95 % half-intervals."""
    b = one_build(world, None, 0, world["board"][0], keep_battles=True)["battles"]
    honest = ~_in(world["abusive_ids"])
    kept = b.filter(honest & pl.col("keep"))
    reason = pl.col("weight_reason").fill_null("")
    defended = board(pl.concat([weighted_rows(world["earlier"]), weighted_rows(b)]))
    plain = board(
        pl.concat([world["earlier"].filter("keep").select(COLS), b.filter("keep").select(COLS)])
    )
    both = defended.join(plain, on="model", suffix="_plain").with_columns(
        (pl.col("rating") - pl.col("rating_plain")).abs().alias("move"),
        ((pl.col("upper") - pl.col("lower")) / 2).alias("half"),
    )
    both = both.with_columns((pl.col("move") / pl.col("half")).alias("of_half"))
    worst = both.sort("of_half", descending=True).row(0, named=True)
    n_honest = int(b.filter(honest).height)
    removed = int(b.filter(honest & pl.col("removed_reason").is_in(list(RIGGING_FLAGS))).height)
    down = kept.filter(pl.col("weight") < 1)
    return {
        "world": world["seed"],
        "honest": n_honest,
        "removed_new": removed,
        "removed_new_%": 100 * removed / max(n_honest, 1),
        "downweighted": down.height,
        "downweighted_%": 100 * down.height / max(kept.height, 1),
        "no_history": int(down.filter(reason.str.contains("no_history")).height),
        "cohort": int(down.filter(reason.str.contains("cohort:")).height),
        "weight_lost_%": 100 * float((1.0 - kept["weight"]).sum()) / max(kept.height, 1),
        "max_move": float(worst["move"]),
        "max_move_of_interval": float(worst["of_half"]),
        "max_move_model": worst["model"],
        "rank_changes": int((both["rank"] != both["rank_plain"]).sum()),
        "cohorts_flagged": sorted(
            set(
                b.filter(reason.str.contains("cohort:"))["weight_reason"]
                .str.extract(r"(cohort:[^;]*?) z=")
                .drop_nulls()
                .to_list()
            )
        ),
    }


def alarm_figures(world: dict, votes: list[int], ranks: list[int], attack: str) -> dict:
    """The rating-move alarm (`ranking.alarm`, month 3 vs month 2) on the board with every
    removal rule and weights 1 (the population rules off) and on the defended board: the
    honest month, then ``attack`` on the targets of ``ranks`` at ``votes``: the target's z,
    whether the 4.5 alarm fires, whether the cohort warning fires, and its rank gain."""
    from arena_assets.ranking.alarm import Z_ALARM, cohort_warnings, rating_moves

    def overall(frame: pl.DataFrame) -> pl.DataFrame:
        return board(frame).with_columns(pl.lit("overall").alias("board"))

    def views(b: pl.DataFrame) -> dict[str, pl.DataFrame]:
        return {
            "rules": pl.concat(
                [world["earlier"].filter("keep").select(COLS), b.filter("keep").select(COLS)]
            ),
            "defended": pl.concat([weighted_rows(world["earlier"]), weighted_rows(b)]),
        }

    before = {
        "rules": overall(world["earlier"].filter("keep").select(COLS)),
        "defended": overall(weighted_rows(world["earlier"])),
    }
    honest = one_build(world, None, 0, world["board"][0], keep_battles=True)["battles"]
    out: dict = {"seed": world["seed"]}
    base_rank = {}
    for view, frame in views(honest).items():
        now = overall(frame)
        moves = rating_moves(now, before[view])
        base_rank[view] = dict(zip(now["model"], now["rank"]))
        out[f"honest_{view}"] = {
            "max_abs_z": round(float(moves["z"].abs().max()), 2),
            "alarms": int((moves["z"].abs() >= Z_ALARM).sum()),
            "cohort_warnings": [w["model"] for w in cohort_warnings(moves, honest)],
        }
    for rank in ranks:
        target = world["board"][rank - 1]
        chunks = [
            chunk(world, attack, target, k)
            for k in range(len(CHUNKS))
            if sum(CHUNKS[:k]) < max(votes)
        ]
        for n in votes:
            b = one_build(world, chunks, n, target, keep_battles=True)["battles"]
            row = {}
            for view, frame in views(b).items():
                now = overall(frame)
                moves = rating_moves(now, before[view])
                z = float(moves.filter(pl.col("model") == target)["z"][0])
                warned = [w["model"] for w in cohort_warnings(moves, b)]
                row[view] = {
                    "z": round(z, 2),
                    "alarm": abs(z) >= Z_ALARM,
                    "cohort_warning": target in warned,
                    "other_warnings": [m for m in warned if m != target],
                    "rank_gain": int(
                        base_rank[view][target] - dict(zip(now["model"], now["rank"]))[target]
                    ),
                }
            out[f"rank{rank}_N{n}"] = row
    return out


def timing(world: dict, repeats: int = 3) -> dict:
    """CPU seconds of the month's judging (`judge_battles` on the honest month) with the
    population rules on and off, alternating, median of ``repeats``."""
    off = replace(world["config"], cohort=replace(world["config"].cohort, enabled=False))
    runs: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(repeats):
        for key, config in (("on", world["config"]), ("off", off)):
            t0 = time.process_time()
            judge_battles(
                world["rows"],
                world["served"],
                config,
                crowd=world["crowd"],
                history=world["history"],
            )
            runs[key].append(time.process_time() - t0)
    return {k: round(sorted(v)[len(v) // 2], 2) for k, v in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="world seeds")
    parser.add_argument("--sessions", type=int, default=76_000)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument(
        "--votes", type=int, nargs="+", default=GRID, help="the grid of rigged votes"
    )
    parser.add_argument(
        "--attacks",
        nargs="+",
        default=DEFAULT_ATTACKS,
        choices=list(ATTACKS),
        help="careful_sybils (B), careful_cover (C), aged_accounts (D), omnipresent; "
        "aged_cover: D with cover votes, an attack the rules were not built around; "
        "single, sybils and linked_sybils are the attacks the per-account rules catch",
    )
    parser.add_argument("--ranks", type=int, nargs="+", default=[5, 10])
    parser.add_argument(
        "--enough",
        type=float,
        default=10.0,
        help="stop a case's grid once the filtered cost is >= this many times the "
        "unfiltered one (10: the target ratio; 0: run the grid to its end)",
    )
    parser.add_argument(
        "--max-votes",
        type=int,
        default=10_000,
        help="give up a cost the unfiltered board does not reach by this many rigged votes",
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
        help="print the rating-move alarm's figures (honest, and the first of --attacks "
        "at --votes on the targets of --ranks) and stop",
    )
    parser.add_argument(
        "--timing",
        action="store_true",
        help="print the CPU seconds of judging the honest month with the population "
        "rules on and off (median of 3, alternating) and stop",
    )
    args = parser.parse_args()
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    if args.summarize:
        if args.markdown:
            pl.Config.set_tbl_formatting("MARKDOWN")
            pl.Config.set_tbl_hide_column_data_types(True)
            pl.Config.set_tbl_hide_dataframe_shape(True)
        summarize(
            pl.concat([read_rows(f) for f in args.summarize], how="diagonal_relaxed"),
            read_honest(args.summarize),
        )
        return
    if args.timing:
        for seed in args.seeds:
            world = honest_world(root, seed, args.sessions, args.users)
            print(json.dumps({"seed": seed, "votes": world["rows"].height} | timing(world)))
        return
    if args.alarm:
        for seed in args.seeds:
            world = honest_world(root, seed, args.sessions, args.users)
            figures = alarm_figures(world, args.votes, args.ranks, args.attacks[0])
            print(json.dumps(figures), flush=True)
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
        honest_figures = honest_cost(world)
        (root / f"honest-{seed}-{args.sessions}-{args.users}.json").write_text(
            json.dumps(honest_figures, indent=1)
        )
        print_honest(honest_figures)
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
                run_case(
                    world,
                    rank,
                    name,
                    sorted(args.votes),
                    before,
                    done,
                    emit,
                    args.enough,
                    args.max_votes,
                )
                print(f"  {name} done in {time.perf_counter() - t1:.0f} s", flush=True)
    summarize(pl.DataFrame(done_rows, infer_schema_length=None), read_honest([str(csv)]))


if __name__ == "__main__":
    main()
