"""Planting vote-rigging attacks into a simulated month: the attackers' accounts, their
sessions, and the truth of which votes were rigged (``_truth/rig_accounts``)."""

from __future__ import annotations

import calendar
import random
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import orjson
import polars as pl

from arena_assets.simulator.dayfile import DayFile
from arena_assets.simulator.rigging import (
    LINKS,
    RIG_TRUTH,
    Attack,
    device_id,
    public_ip,
    with_accounts,
)


def attack_accounts(attack: Attack, rng: random.Random, seed: int) -> list[dict]:
    """The attack's accounts: user id, address, device, group, link and vote budget."""
    if attack.accounts == "single":
        budgets = [attack.votes]
    else:
        lo, hi = attack.votes_per_account
        budgets = []
        while sum(budgets) < attack.votes:
            budgets.append(min(rng.randint(lo, hi), attack.votes - sum(budgets)))
    accounts = []
    shared: dict[int, dict] = {}
    for i, budget in enumerate(budgets):
        uid = f"u-{rng.getrandbits(48):012x}"
        row = {
            "user_id": uid,
            "ip": public_ip(rng),
            "device_id": device_id(seed, uid),
            "group": -1,
            "link": "",
            "votes_planned": budget,
        }
        if attack.accounts == "linked_sybils":
            group = i // attack.group_size
            link = attack.link if attack.link != "mixed" else LINKS[group % len(LINKS)]
            if group not in shared:
                net = (rng.randrange(11, 224), rng.randrange(256), rng.randrange(256))
                shared[group] = {
                    "ip": public_ip(rng, net),
                    "net": net,
                    "device_id": device_id(seed, f"group-{group}-{uid}"),
                }
            g = shared[group]
            row.update(group=group, link=link)
            if link == "ip":
                row["ip"] = g["ip"]
            elif link == "subnet":
                row["ip"] = public_ip(rng, g["net"])
            else:
                row["device_id"] = g["device_id"]
        accounts.append(row)
    return accounts


def plant_attacks(
    world, out: Path, month: str, sinks: dict, compress: bool, truth_root: Path | None = None
) -> int:
    """Write every attack of ``month`` (``world.config.attacks``); returns the rigged votes
    cast. Each account serves itself battles 80-120 s apart from a random start until its
    votes are cast (about 15 battles a vote when its model is in 2 of 30 slots, 17 with
    the non-anonymous ones it cannot use); one whose votes do not fit into the month at
    that pace (a single account of thousands) goes faster. Careful and aged accounts
    (`rig_careful.py`) come at honest hours instead; aged ones are read from the previous
    month's votes truth under ``truth_root`` (default ``out``)."""
    from arena_assets.simulator.rig_careful import plant_careful
    from arena_assets.simulator.session import SessionMaker
    from arena_assets.simulator.world import month_index

    attacks = [(k, a) for k, a in enumerate(world.config.attacks) if a.month == month]
    if not attacks:
        return 0
    year, mon = (int(x) for x in month.split("-"))
    base = datetime(year, mon, 1, tzinfo=UTC).timestamp()
    month_s = calendar.monthrange(year, mon)[1] * 86400.0
    rows, cast_total = [], 0
    for k, attack in attacks:
        ss = np.random.SeedSequence([world.seed, month_index(month), 0x416B, k, attack.seed])
        state = ss.generate_state(8, np.uint64)
        rng = random.Random(int(state[0]))
        careful = attack.accounts in ("careful_sybils", "aged")
        accounts = [] if careful else attack_accounts(attack, rng, world.seed)
        rigged = world if careful else with_accounts(world, accounts, attack)
        file = DayFile(
            out / month / f"rig-{month}-{k:02d}.jsonl{'.gz' if compress else ''}", compress
        )
        write = lambda event: file.write(orjson.dumps(event))  # noqa: B023, E731
        maker = SessionMaker(
            rigged,
            month,
            world.seed,
            rng,
            [int(s) for s in state[1:5]],
            sinks,
            write,
            write if world.config.served_events else None,
        )
        fields = {
            f"attack_{f}": v
            for f, v in asdict(attack).items()
            if f in ("month", "model", "votes", "accounts", "strategy")
        }
        if careful:
            planted, cast = plant_careful(
                world, attack, rng, maker, month, base, Path(truth_root or out)
            )
            rows += [{**fields, "attack": k, **row} for row in planted]
            cast_total += cast
            file.close()
            continue
        first = len(world.users)
        # battles one rigged vote takes: its model in 2 of the pool's slots, anonymous only
        per_vote = len(world.available(month)) / 2.0 / max(world.config.anony_share, 1e-9)
        for i, account in enumerate(accounts):
            t = rng.uniform(0.0, month_s - 86400.0) if attack.accounts != "single" else 0.0
            # a battle every ~100 s is a person's pace; an account whose votes do not fit
            # into the month at that pace goes as fast as it must (a script), 20 % spare
            pace = min(
                1.0, (month_s - 3600.0) / (1.2 * 100.0 * per_vote * account["votes_planned"])
            )
            cast, sessions = 0, 0
            while (
                cast < account["votes_planned"]
                and t < month_s - 3600.0
                and sessions < 500 * account["votes_planned"]
            ):
                before = maker.stats["votes"]
                maker.run(first + i, base + t, True, "en", False, rng.randrange(6), 1)
                cast += maker.stats["votes"] - before
                sessions += 1
                t += (rng.uniform(20.0, 60.0) + 60.0) * pace
            rows.append(
                {
                    **fields,
                    "attack": k,
                    **account,
                    "votes_cast": cast,
                    "cover_cast": 0,
                    "battles_served": sessions,
                }
            )
            cast_total += cast
        file.close()
    path = out / "_truth" / RIG_TRUTH / f"{month}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows).write_parquet(path)
    return cast_total


def simulate_attacks(
    out: str | Path, month: str, seed: int, config, truth_root: str | Path | None = None
) -> int:
    """Only the attacks of ``config`` for ``month`` (their ``rig-*`` files and truth) under
    ``out``: the same files `simulate_months` would add to that month, without writing its
    honest traffic again (a benchmark plants many attacks on one honest month).
    ``truth_root``: where the honest months' truth is (aged accounts read the previous
    month's voters there; default ``out``)."""
    from arena_assets.simulator.truth import MONTHLY_SCHEMAS, TruthSink, write_registry
    from arena_assets.simulator.world import World

    out = Path(out)
    world = World.build(config, seed)
    write_registry(out, world)
    (out / month).mkdir(parents=True, exist_ok=True)
    sinks = {name: TruthSink(out, name, month) for name in MONTHLY_SCHEMAS}
    cast = plant_attacks(
        world,
        out,
        month,
        sinks,
        compress=False,
        truth_root=Path(truth_root) if truth_root else None,
    )
    for sink in sinks.values():
        sink.close()
    return cast
